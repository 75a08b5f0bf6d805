"""normjax.llm.client against a fake OpenAI-compatible server on 127.0.0.1:
retries on 429 / 5xx / timeouts / malformed bodies with back-off, no retry on
other 4xx, token accounting, the concurrency limit, image content parts, the
API key from the environment only, and no hang or crash on a dead endpoint."""

from __future__ import annotations

import asyncio
import base64
import faulthandler
import socket
import subprocess
import sys
import time

import pytest

from normjax.llm.client import ChatClient, ClientConfig, EndpointError, user_message
from normjax.testing.fake_openai import FakeOpenAI, Reply


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(120, exit=True)  # a hang fails the run instead of blocking it
    yield
    faulthandler.cancel_dump_traceback_later()


def chat(url, messages, bound=30.0, **cfg):
    cfg = dict(dict(model="fake", timeout=2.0, max_retries=2, backoff=0.01, max_backoff=0.05), **cfg)

    async def main():
        async with ChatClient(ClientConfig(base_url=url, **cfg)) as c:
            if isinstance(messages, list) and messages and isinstance(messages[0], list):
                results = await asyncio.gather(*(c.chat(m) for m in messages))
            else:
                results = await c.chat(messages)
            return results, dict(c.stats)

    return asyncio.run(asyncio.wait_for(main(), bound))


MSG = [{"role": "user", "content": "hello"}]


def test_success_and_usage():
    with FakeOpenAI(lambda p, a: Reply("hi there")) as srv:
        r, stats = chat(srv.base_url, MSG)
    assert r.error is None and r.text == "hi there" and r.retries == 0
    assert (
        r.tokens_in == srv.log[0]["usage"]["prompt_tokens"] and r.tokens_out == srv.log[0]["usage"]["completion_tokens"]
    )
    p = srv.log[0]["payload"]
    assert p["model"] == "fake" and p["messages"] == MSG and p["temperature"] == 0.7 and p["max_tokens"] == 4048
    assert stats["requests"] == 1 and stats["attempts"] == 1 and stats["errors"] == 0


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retryable_status_then_success(status):
    with FakeOpenAI(lambda p, a: Reply(status=status) if a < 2 else Reply("ok")) as srv:
        r, stats = chat(srv.base_url, MSG)
    assert r.error is None and r.text == "ok" and r.retries == 2
    assert stats["attempts"] == 3 and stats["retries"] == 2 and len(srv.log) == 3


def test_gives_up_after_max_retries():
    with FakeOpenAI(lambda p, a: Reply(status=500)) as srv:
        r, stats = chat(srv.base_url, MSG, max_retries=3)
    assert r.text is None and "HTTP 500" in r.error and "4 attempts" in r.error
    assert len(srv.log) == 4 and stats["errors"] == 1 and r.retries == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status):
    with FakeOpenAI(lambda p, a: Reply(status=status)) as srv:
        r, _ = chat(srv.base_url, MSG)
    assert f"HTTP {status}" in r.error and len(srv.log) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"{}",
        b'{"choices": []}',
        b'{"choices": [{"message": {}}]}',
        b'{"choices": [{"message": {"content": 5}}]}',
    ],
)
def test_malformed_bodies_are_retried_then_errors(body):
    with FakeOpenAI(lambda p, a: Reply(body=body)) as srv:
        r, _ = chat(srv.base_url, MSG, max_retries=1)
    assert r.error is not None and "malformed" in r.error and len(srv.log) == 2


def test_timeout_is_retried_and_bounded():
    with FakeOpenAI(lambda p, a: Reply("late", delay=1.0) if a == 0 else Reply("fast")) as srv:
        r, _ = chat(srv.base_url, MSG, timeout=0.3)
    assert r.error is None and r.text == "fast" and r.retries == 1
    with FakeOpenAI(lambda p, a: Reply("late", delay=1.0)) as srv:
        t0 = time.perf_counter()
        r, _ = chat(srv.base_url, MSG, timeout=0.3, max_retries=1)
        wall = time.perf_counter() - t0
    assert r.text is None and "timeout" in r.error and wall < 2.0


def test_dead_endpoint_is_an_error_not_a_crash():
    with socket.socket() as s:  # a free port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r, stats = chat(f"http://127.0.0.1:{port}/v1", MSG, max_retries=2)
    assert r.text is None and "connection error" in r.error and stats["attempts"] == 3


def test_concurrency_limit():
    with FakeOpenAI(lambda p, a: Reply("ok", delay=0.15)) as srv:
        msgs = [[{"role": "user", "content": f"m{i}"}] for i in range(12)]
        results, _ = chat(srv.base_url, msgs, concurrency=3)
    assert all(r.error is None for r in results)
    assert srv.max_inflight <= 3 and len(srv.log) == 12


def test_retry_after_header_is_a_minimum_wait():
    with FakeOpenAI(lambda p, a: Reply(status=429, headers={"Retry-After": "0.3"}) if a == 0 else Reply("ok")) as srv:
        t0 = time.perf_counter()
        r, _ = chat(srv.base_url, MSG, backoff=0.0, max_backoff=0.1)  # above the cap, still honoured
        wall = time.perf_counter() - t0
    assert r.error is None and wall >= 0.3
    assert srv.log[1]["at"] - srv.log[0]["sent"] >= 0.3  # the server saw the retry no earlier than it asked
    client = ChatClient(ClientConfig(base_url="http://127.0.0.1:1/v1", model="m", backoff=1.0, max_backoff=30.0))
    waits = [client._delay(0, 2.0) for _ in range(200)]
    assert min(waits) >= 2.0 and max(waits) <= 2.5  # jitter only adds to the server's minimum
    assert min(client._delay(3, 2.0) for _ in range(200)) >= 6.0  # the back-off wins when longer


def test_every_failed_attempt_is_kept():
    replies = {0: Reply(status=500), 1: Reply(body=b"<html>"), 2: Reply("fine")}
    with FakeOpenAI(lambda p, a: replies[a]) as srv:
        r, _ = chat(srv.base_url, MSG)
    assert r.error is None and r.text == "fine" and len(r.attempt_errors) == 2
    assert "HTTP 500" in r.attempt_errors[0] and "malformed response body" in r.attempt_errors[1]


@pytest.mark.parametrize(
    "status, hint", [(401, "API key"), (403, "may not use"), (404, "/v1 suffix"), (400, "--max-tokens-field")]
)
def test_preflight_names_url_model_status_and_listed_models(status, hint):
    async def main(url):
        async with ChatClient(ClientConfig(base_url=url, model="gpt-x", backoff=0.01)) as c:
            await c.preflight()

    with FakeOpenAI(lambda p, a: Reply(status=status), models=("model-a", "model-b")) as srv:
        with pytest.raises(EndpointError) as e:
            asyncio.run(main(srv.base_url))
        assert len(srv.log) == 1 and srv.log[0]["payload"]["max_tokens"] == 16
    msg = str(e.value)
    assert f"{srv.base_url}/chat/completions" in msg and "'gpt-x'" in msg and f"HTTP {status}" in msg
    assert "lists the models: model-a, model-b" in msg and hint in msg
    with FakeOpenAI(lambda p, a: Reply("OK")) as srv:
        asyncio.run(main(srv.base_url))  # a working endpoint passes


def test_error_rate_and_fatal_statuses_stop_the_run():
    async def main(url, statuses, **cfg):
        async with ChatClient(ClientConfig(base_url=url, model="m", max_retries=0, **cfg)) as c:
            for i, s in enumerate(statuses):
                await c.chat([{"role": "user", "content": f"{i} {s}"}])
                c.check_error_rate()

    def script(p, a):
        status = int(p["messages"][0]["content"].split()[1])
        return Reply("ok") if status == 200 else Reply(status=status)

    with FakeOpenAI(script) as srv:
        statuses = [200] * 10 + [400, 200] * 4  # 4 failures in a window of 10: at the limit, not over it
        asyncio.run(main(srv.base_url, statuses, error_window=10, max_error_rate=0.4))
        with pytest.raises(EndpointError, match="5 of the last 10 requests"):
            asyncio.run(main(srv.base_url, statuses + [400], error_window=10, max_error_rate=0.4))
        with pytest.raises(EndpointError, match="HTTP 401"):  # no later request can fix a 401
            asyncio.run(main(srv.base_url, [200] * 5 + [401]))


def test_images_as_content_parts():
    png = b"\x89PNG\r\n\x1a\nfake"
    msg = user_message("look", [png])
    assert msg["content"][0] == {"type": "text", "text": "look"}
    url = msg["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == png
    assert user_message("plain") == {"role": "user", "content": "plain"}
    with FakeOpenAI(lambda p, a: Reply("seen")) as srv:
        r, _ = chat(srv.base_url, [msg])
    assert r.text == "seen" and srv.log[0]["payload"]["messages"][0]["content"][1]["image_url"]["url"] == url


def test_api_key_only_from_the_environment(monkeypatch):
    monkeypatch.delenv("NORMJAX_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(lambda p, a: Reply("x")) as srv:
        chat(srv.base_url, MSG)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
        chat(srv.base_url, MSG)
        monkeypatch.setenv("NORMJAX_LLM_API_KEY", "sk-normjax")
        chat(srv.base_url, MSG)
    assert [e["auth"] for e in srv.log] == [None, "Bearer sk-fallback", "Bearer sk-normjax"]
    from normjax.cli import build_parser

    assert "--api-key" not in build_parser()._subparsers._group_actions[0].choices["llm-eval"].format_help()


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(base_url="127.0.0.1:8000"), "http://"),
        (dict(model=""), "model"),
        (dict(concurrency=0), ">= 1"),
        (dict(timeout=0), "timeout"),
        (dict(temperature=3.0), "temperature"),
        (dict(max_retries=-1), "max_retries"),
    ],
)
def test_config_validation(kwargs, fragment):
    cfg = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=fragment):
        ClientConfig(**cfg)


def test_import_without_httpx_names_the_extra():
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "import normjax.llm.parse, normjax.llm.prompts  # these do not need it\n"
        "try:\n    import normjax.llm.client\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert 'pip install "normjax[llm]"' in out.stdout, out.stderr


def test_request_fields_for_any_endpoint():
    with FakeOpenAI(lambda p, a: Reply("ok")) as srv:
        chat(
            srv.base_url,
            MSG,
            token_param="max_completion_tokens",
            send_temperature=False,
            max_tokens=900,
            extra_body={"reasoning_effort": "low", "top_p": 0.9},
        )
    p = srv.log[0]["payload"]
    assert p["max_completion_tokens"] == 900 and "max_tokens" not in p and "temperature" not in p
    assert p["reasoning_effort"] == "low" and p["top_p"] == 0.9 and p["model"] == "fake"
    with pytest.raises(
        ValueError, match="token_param 'max_new_tokens' is invalid; allowed: max_tokens, max_completion_tokens"
    ):
        ClientConfig(base_url="http://127.0.0.1:1/v1", model="m", token_param="max_new_tokens")
    with pytest.raises(ValueError, match="extra_body may not set messages, temperature"):
        ClientConfig(base_url="http://127.0.0.1:1/v1", model="m", extra_body={"temperature": 0, "messages": []})


def test_cli_request_options_reach_the_endpoint(tmp_path, capsys):
    from normjax.cli import main

    base = ["llm-eval", "--model", "o-model", "--norms", "forbidden_zone_q", "--out", str(tmp_path / "run")]
    with FakeOpenAI(lambda p, a: Reply(status=400)) as srv:  # the preflight shows the request, then stops the run
        assert (
            main(
                base
                + [
                    "--base-url",
                    srv.base_url,
                    "--max-tokens-field",
                    "max_completion_tokens",
                    "--no-temperature",
                    "--extra-body",
                    '{"reasoning_effort": "high"}',
                ]
            )
            == 3
        )
    p = srv.log[0]["payload"]
    assert "max_completion_tokens" in p and "max_tokens" not in p and "temperature" not in p
    assert p["reasoning_effort"] == "high" and "HTTP 400" in capsys.readouterr().err
    for bad, fragment in (("[1]", "is a JSON list; allowed: a JSON object"), ("{oops", "is not valid JSON")):
        assert main(base + ["--base-url", "http://127.0.0.1:9/v1", "--extra-body", bad]) == 2
        assert fragment in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(base + ["--base-url", "http://127.0.0.1:9/v1", "--max-tokens-field", "max_new_tokens"])
    assert "invalid choice: 'max_new_tokens'" in capsys.readouterr().err
