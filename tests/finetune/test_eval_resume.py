"""`normjax finetune-eval` like `llm-eval`: replies appended as they arrive, isolated failures
counted, a stopped run resumed (scripted fake server, no JAX program)."""

from __future__ import annotations

import json
import threading

import pytest

from normjax.cli import main
from normjax.testing.fake_openai import FakeOpenAI, Reply

N = 30


@pytest.fixture()
def data(tmp_path):
    recs = [
        dict(task="norm_judgment", violates=j % 2 == 0, prompt=[{"role": "user", "content": f"j{j}"}]) for j in range(N)
    ]
    path = tmp_path / "norm_judgment_access_heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _right(p):
    j = int(p["messages"][-1]["content"][1:])
    return Reply(json.dumps({"violates": j % 2 == 0}))


def _args(srv, data, out, *extra):
    return ["finetune-eval", "--data", str(data), "--base-url", srv.base_url, "--model", "fake", "--out", str(out)] + [
        "--max-retries",
        "1",
        "--no-cache",
        *extra,
    ]


def test_one_request_in_three_failing(data, tmp_path, capsys):
    """Every third request fails (no retries): the run finishes, the failed share is
    reported, and a rerun sends only the missing records."""
    lock, count = threading.Lock(), [0]

    def flaky(p, a):
        with lock:
            count[0] += 1
            bad = count[0] % 3 == 0
        return Reply(status=503) if bad else _right(p)

    out = tmp_path / "ev"
    with FakeOpenAI(flaky) as srv:
        assert main(_args(srv, data, out, "--max-retries", "0")) == 0  # 10 failures: within 20% of 100
    m = json.loads((out / "metrics.json").read_text())
    assert (m["answered"], m["failed"]) == (N - N // 3, N // 3) and m["tasks"]["norm_judgment"]["accuracy"] == 1.0
    assert m["failed_share"] == m["failed"] / N
    lines = (out / "replies.jsonl").read_text().splitlines()
    assert len(lines) == m["answered"]
    missing = m["failed"]
    with FakeOpenAI(lambda p, a: _right(p)) as srv:
        assert main(_args(srv, data, out)) == 0
        sent = len(srv.log)
    m2 = json.loads((out / "metrics.json").read_text())
    assert sent == missing and m2["resumed"] == N - missing and (m2["answered"], m2["failed"]) == (N, 0)
    capsys.readouterr()


def test_past_the_error_limit_stops_and_resumes(data, tmp_path, capsys):
    out = tmp_path / "ev"
    with FakeOpenAI(lambda p, a: Reply(status=500) if p["messages"][-1]["content"] == "j7" else _right(p)) as srv:
        rc = main(_args(srv, data, out, "--max-error-rate", "0", "--concurrency", "1", "--max-retries", "0"))
    assert rc == 3 and "the run stopped" in capsys.readouterr().err
    kept = len((out / "replies.jsonl").read_text().splitlines())
    assert 0 < kept < N and not (out / "metrics.json").exists()
    with FakeOpenAI(lambda p, a: _right(p)) as srv:
        assert main(_args(srv, data, out)) == 0
        assert len(srv.log) == N - kept
    assert json.loads((out / "metrics.json").read_text())["answered"] == N


def test_replies_of_another_model_are_refused(data, tmp_path, capsys):
    out = tmp_path / "ev"
    out.mkdir()
    (out / "replies.jsonl").write_text(json.dumps(dict(index=0, data=data.name, model="other", reply="x")) + "\n")
    with FakeOpenAI(lambda p, a: _right(p)) as srv:
        assert main(_args(srv, data, out)) == 2
    assert "not mixed" in capsys.readouterr().err
