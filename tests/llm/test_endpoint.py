"""A broken endpoint never becomes a result (docs/llm.md "Failing loudly").

* The preflight stops a run against a server answering 404 or 401 to
  everything: a non-zero exit within seconds, naming the URL, the model and
  the status, with no results table and no run identity left behind; the
  rerun against a working server equals a fresh run.
* The error-rate limit stops a run whose requests start failing.
* Episodes whose decisions mostly got no reply are incomplete: never
  reused on resume, never tabulated.
* The endpoint is part of the run's identity (--allow-mixed-endpoint).

Runs use one norm (forbidden_zone_q), as tests/runtime/test_runner.py does, so
the compiled steps are shared.
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import threading
import time
import zlib

import pytest

from normjax.env import oracle_policy
from normjax.llm.agents import LLMAgent
from normjax.llm.client import PREFLIGHT_PROMPT, ChatClient, ClientConfig, EndpointError
from normjax.protocol.seeds import base_seed
from normjax.runtime.agents import StatePolicyAgent
from normjax.runtime.runner import run_protocol, run_protocol_async
from normjax.runtime.transcripts import TranscriptStore
from normjax.testing.fake_openai import FakeOpenAI, Reply, chaos, navigator_text, prompt_text

NORM = "forbidden_zone_q"


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(300, exit=True)  # a hang fails the run instead of blocking it
    yield
    faulthandler.cancel_dump_traceback_later()


def _cli(url, out, *extra):
    from normjax.cli import main

    return main(
        [
            "llm-eval",
            "--base-url",
            url,
            "--model",
            "fake",
            "--norms",
            NORM,
            "--text-only",
            "--timeout",
            "5",
            "--max-retries",
            "2",
            "--concurrency",
            "8",
            "--interaction-steps",
            "20",
            "--seed",
            "3",
            "--out",
            str(out),
            *extra,
        ]
    )


def _comparable(result):
    """The results without what depends on timing (retries after a slow reply, meta)."""
    drop = ("retries", "latency_s")
    return {
        k: [{f: v for f, v in row.items() if f not in drop} for row in result[k]]
        if k in ("episodes", "interaction")
        else result[k]
        for k in ("episodes", "interaction", "seen", "unseen")
    }


@pytest.mark.parametrize("status", [404, 401])
def test_preflight_fails_loudly_and_a_fixed_rerun_equals_a_fresh_run(status, tmp_path, capsys):
    out = tmp_path / "run"
    with FakeOpenAI(lambda p, a: Reply(status=status), models_status=status) as broken:
        t0 = time.perf_counter()
        assert _cli(broken.base_url, out) == 3
        wall = time.perf_counter() - t0
        assert len(broken.log) == 1  # one preflight request, not retried
    err = capsys.readouterr().err
    assert wall < 30 and f"HTTP {status}" in err and broken.base_url in err and "'fake'" in err
    assert not (out / "results.json").exists() and not (out / "run.json").exists()
    if status == 401:
        assert "API key" in err
        return
    assert "--base-url" in err
    with FakeOpenAI(chaos(transport_errors=False)) as srv:
        assert _cli(srv.base_url, out) == 0
        resumed = json.loads((out / "results.json").read_text())
        before = len(srv.log)
        assert _cli(srv.base_url, out) == 0 and len(srv.log) == before  # all finished: no request
        again = json.loads((out / "results.json").read_text())["meta"]
    with FakeOpenAI(chaos(transport_errors=False)) as srv:  # a server each: the fake's replies depend on history
        assert _cli(srv.base_url, tmp_path / "fresh") == 0
        assert _cli(srv.base_url, out) == 2  # another endpoint does not mix into a finished run
    assert "--allow-mixed-endpoint" in capsys.readouterr().err
    fresh = json.loads((tmp_path / "fresh" / "results.json").read_text())
    assert _comparable(resumed) == _comparable(fresh) and resumed["incomplete"] == []
    meta = resumed["meta"]
    assert [r["outcome"] for r in meta["invocations"]] == ["complete"]  # the failed start left nothing
    assert (meta["interaction_steps"], meta["seed"]) == (20, 3)
    assert resumed["interaction"][0]["seed"] == base_seed(0, 3) != base_seed(0, 0)  # norm 0: forbidden_zone_q
    runs = again["invocations"]  # meta sums every invocation
    assert [r["outcome"] for r in runs] == ["complete", "complete"] and runs[0] == meta["invocations"][0]
    assert again["client"]["requests"] == runs[0]["client"]["requests"] + runs[1]["client"]["requests"] > 0
    assert again["wall_s_total"] == pytest.approx(runs[0]["wall_s"] + runs[1]["wall_s"], abs=1e-3)


def test_error_rate_limit_stops_the_run(tmp_path):
    lock, served = threading.Lock(), []

    def script(payload, attempt):  # the endpoint breaks after 30 requests of the run
        if prompt_text(payload) == PREFLIGHT_PROMPT:
            return Reply("OK")
        with lock:
            served.append(1)
            n = len(served)
        if n <= 30:
            return Reply(navigator_text(payload))
        return Reply(status=400)

    out = tmp_path / "run"

    async def main(url):
        cfg = ClientConfig(base_url=url, model="fake", max_retries=0, error_window=20, max_error_rate=0.2)
        async with ChatClient(cfg) as client:
            await run_protocol_async(
                LLMAgent(client, text_only=True),
                [NORM],
                interaction_steps=100,
                out=out,
                settings=dict(model="fake", base_url=url),
            )

    with FakeOpenAI(script) as srv:
        with pytest.raises(EndpointError, match=r"5 of the last 20 requests .* failed, more than 20% of 20"):
            asyncio.run(asyncio.wait_for(main(srv.base_url), 120))
        assert len(srv.log) == 1 + 30 + 5  # preflight, the good requests, then one failure per step up to the limit
    assert (out / "run.json").exists() and not (out / "results.json").exists()
    assert list(out.rglob("interaction.jsonl.part"))  # what was done is kept


def test_incomplete_episodes_are_rerun_and_never_tabulated(tmp_path):
    out = tmp_path / "run"

    def flaky(payload, attempt):  # 9 of 10 prompts get no reply: most decisions of every episode fail
        text = prompt_text(payload)
        if text != PREFLIGHT_PROMPT and zlib.crc32(text.encode()) % 10:
            return Reply(status=400)
        return Reply(navigator_text(payload))

    def run(script, error_rate):
        async def main(url):
            cfg = ClientConfig(base_url=url, model="fake", max_retries=0, max_error_rate=error_rate)
            async with ChatClient(cfg) as client:
                return await run_protocol_async(
                    LLMAgent(client, text_only=True), [NORM], interaction_steps=0, out=out, settings=dict(model="fake")
                )

        with FakeOpenAI(script) as srv:
            return asyncio.run(asyncio.wait_for(main(srv.base_url), 120)), list(srv.log)

    first, _ = run(flaky, 1.0)  # no error-rate stop: the episodes end, incomplete
    names = [f"{NORM}/{c}_{i}" for c in ("seen", "unseen") for i in range(3)]
    assert sorted(first["incomplete"]) == sorted(names) and not (out / "results.json").exists()
    store = TranscriptStore(out)
    for name in names:
        header = store.read(name)[0]
        llm = header["result"]["llm"]
        assert llm["incomplete"] and 2 * llm["request_errors"] > llm["decisions"] > 0
        assert store.load(name) is None  # never reused as finished
    second, log = run(chaos(transport_errors=False), 0.2)
    assert second["incomplete"] == [] and (out / "results.json").exists()
    assert len({e["prompt"] for e in log if e["prompt"] != PREFLIGHT_PROMPT}) == second["llm"]["requests"] > 0
    assert all(not row["incomplete"] and row["request_errors"] == 0 for row in second["episodes"])


def test_the_endpoint_is_part_of_the_run_identity(tmp_path):
    out = tmp_path / "run"
    agent = StatePolicyAgent(oracle_policy)
    a = dict(model="m", base_url="http://a/v1", temperature=0.7)
    run_protocol(agent, [NORM], interaction_steps=4, out=out, settings=a)
    for change in (dict(base_url="http://b/v1"), dict(model="other"), dict(temperature=0.0)):
        with pytest.raises(ValueError, match="another endpoint or sampling.*--allow-mixed-endpoint"):
            run_protocol(agent, [NORM], interaction_steps=4, out=out, settings=dict(a, **change))
    with pytest.raises(ValueError, match="other settings.*text_only"):  # never mixed, flag or not
        run_protocol(
            agent, [NORM], interaction_steps=4, out=out, settings=dict(a, text_only=True), allow_mixed_endpoint=True
        )
    mixed = run_protocol(
        agent, [NORM], interaction_steps=4, out=out, settings=dict(a, base_url="http://b/v1"), allow_mixed_endpoint=True
    )
    urls = [e["base_url"] for e in json.loads((out / "run.json").read_text())["endpoints"]]
    assert urls == ["http://a/v1", "http://b/v1"] and [e["base_url"] for e in mixed["meta"]["endpoints"]] == urls


def test_progress_line_counts_episodes_and_requests(capsys):
    from normjax.llm.evaluate import Progress

    stats = dict(requests=0, errors=0, retries=0)
    bar = Progress(stats)
    bar("test", 1, 100, 6, 0, 6)
    stats.update(requests=40, errors=3, retries=2)
    bar("test", 2, 100, 6, 4, 6)
    assert bar.bar.n == 4 and bar.bar.total == 6
    bar.close()
    err = capsys.readouterr().err
    assert "4/6" in err and "requests 40, errors 3, retries 2" in err


def test_help_shows_the_defaults():
    from normjax.cli import build_parser

    text = " ".join(build_parser()._subparsers._group_actions[0].choices["llm-eval"].format_help().split())
    for part in (
        "--seed SEED protocol seed (0 = canonical) (default: 0)",
        "(default: 200)",
        "(default: 64)",
        "(default: 0.2)",
        "(default: 100)",
        "(default: 4048)",
        "(default: 0.7)",
        "(default: max_tokens)",
        "(default: all 50)",
    ):
        assert part in text, part
    assert "(default: None)" not in text and "(default: False)" not in text
