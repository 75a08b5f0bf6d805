"""`normjax finetune-eval` against a scripted OpenAI-compatible server (no JAX program)."""

from __future__ import annotations

import json

import pytest

from normjax.cli import main
from normjax.testing.fake_openai import FakeOpenAI, Reply


def _record(task, tag, **fields):
    base = dict(task=task, norm="n", t=60, allowed_actions=None, violates=None, answer=None, choices=None)
    return dict(base, prompt=[{"role": "system", "content": "s"}, {"role": "user", "content": tag}], **fields)


# Judgment: 2 violations, 4 compliant moves; actions: 2 records.
RECORDS = [
    _record("norm_judgment", "j1", violates=True),
    _record("norm_judgment", "j2", violates=True),
    _record("norm_judgment", "j3", violates=False),
    _record("norm_judgment", "j4", violates=False),
    _record("norm_judgment", "j5", violates=False),
    _record("norm_judgment", "j6", violates=False),
    _record("compliant_action", "a1", allowed_actions=[3]),
    _record("compliant_action", "a2", allowed_actions=[0, 4]),
]
# The model says "no violation" to everything, and moves right.
ANSWERS = {f"j{i}": '{"violates": false}' for i in range(1, 7)}
ANSWERS.update(
    a1='{"action": "move right", "belief": "b", "confidence": 0.5}',
    a2='{"action": "move right", "belief": "b", "confidence": 0.5}',
)


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "action_judgment_access_heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def _args(srv, data, out):
    return [
        "finetune-eval",
        "--data",
        str(data),
        "--base-url",
        srv.base_url,
        "--model",
        "fake",
        "--max-retries",
        "0",
        "--out",
        str(out),
        "--no-cache",
    ]


def test_table_a5_metrics(data, tmp_path):
    with FakeOpenAI(lambda p, a: Reply(ANSWERS[p["messages"][-1]["content"]])) as srv:
        assert main(_args(srv, data, tmp_path / "ev")) == 0
        temps = {e["payload"]["temperature"] for e in srv.log}
    assert temps == {0.0}  # greedy by default
    m = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    judge = m["tasks"]["norm_judgment"]
    assert judge["accuracy"] == pytest.approx(4 / 6)
    assert judge["balanced_accuracy"] == pytest.approx(0.5)  # all "no": 0 on violations, 1 on the rest
    assert m["tasks"]["compliant_action"]["accuracy"] == pytest.approx(0.5)
    assert m["score"] == pytest.approx((0.5 + 0.5) / 2)
    assert len((tmp_path / "ev" / "replies.jsonl").read_text().splitlines()) == len(RECORDS)


def test_an_endpoint_fault_is_counted_not_scored(data, tmp_path, capsys):
    def script(p, a):
        return (
            Reply(status=500) if p["messages"][-1]["content"] == "j3" else Reply(ANSWERS[p["messages"][-1]["content"]])
        )

    with FakeOpenAI(script) as srv:
        assert main(_args(srv, data, tmp_path / "ev")) == 0  # an isolated failure (issue 52)
    assert "1 of 8 requests got no reply" in capsys.readouterr().err
    m = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert (m["failed"], m["answered"], m["tasks"]["norm_judgment"]["n"]) == (1, 7, 5)


def test_a_malformed_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "norm_judgment"}\n')
    assert (
        main(["finetune-eval", "--data", str(bad), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-cache"])
        == 2
    )
    assert "needs 'prompt' and 'task'" in capsys.readouterr().err
