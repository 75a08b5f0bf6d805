"""normjax table end to end (slow): a real llm-eval run against the scripted local server and a real
play study of a scripted participant, beside the committed 1M DQN-MLP runs and the committed
evaluate outputs of oracle, blind, blind_any and bayes_map; and the refusal of an llm-eval run with
another interaction length.  One norm each for the new runs (forbidden_zone_q), the protocol's
200-step interaction phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normjax.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = [str(ROOT / "results/cpu_paper_mlp_1m/sparse_penalty")] + [
    str(ROOT / f"benchmarks/results/protocol_{p}.json") for p in ("oracle", "blind", "blind_any", "bayes_map")
]


def _llm_eval(base_url, out, *extra) -> int:
    args = ["llm-eval", "--base-url", base_url, "--model", "fake", "--norms", "forbidden_zone_q"]
    return main([*args, "--concurrency", "8", "--out", str(out), *extra])


@pytest.mark.slow
def test_one_table_over_every_kind_of_result_and_the_refusal(tmp_path, capsys):
    pytest.importorskip("flask", reason="needs the [play] extra (Flask)")
    from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text
    from normjax.testing.play_driver import PlayServer, play

    with FakeOpenAI(lambda p, a: Reply(navigator_text(p))) as srv:
        assert _llm_eval(srv.base_url, tmp_path / "llm") == 0
        assert _llm_eval(srv.base_url, tmp_path / "llm_short", "--interaction-steps", "5") == 0
    study = tmp_path / "study"
    with PlayServer(["--norms", "forbidden_zone_q", "--out", study], tmp_path / "logs") as server:
        view, turns, _ = play(server.url, "alice")
        assert view["status"] == "done" and turns > 200
    capsys.readouterr()

    table = tmp_path / "table.json"
    sources = [*COMMITTED, str(tmp_path / "llm"), str(study)]
    assert main(["table", *sources, "--format", "json", "--out", str(table), "--resamples", "500"]) == 0
    payload = json.loads(table.read_text())
    labels = [r["label"] for r in payload["rows"]]
    assert labels == [
        "DQN-MLP sparse_penalty (cpu_paper_mlp_1m)",
        "oracle",
        "blind",
        "blind_any",
        "bayes_map",
        "fake",
        "human (1 participant)",
    ]
    fps = {r["label"]: r["fingerprint"] for r in payload["rows"]}  # new results carry the scenario tables' hash
    assert fps["fake"]["scenario_hash"] == fps["human (1 participant)"]["scenario_hash"] is not None
    kinds = {r["label"]: r["kind"] for r in payload["rows"]}
    assert kinds["fake"] == "llm" and kinds["human (1 participant)"] == "play" and kinds["bayes_map"] == "observer"
    overall = {(c["label"], c["condition"], c["metric"]): c for c in payload["cells"] if c["group"] == "overall"}
    for label in labels:
        for cond in ("seen", "unseen"):
            c = overall[(label, cond, "joint")]
            assert c["low"] <= c["mean"] <= c["high"], c
    one_norm = overall[("fake", "seen", "joint")]  # one norm: its three episodes are resampled
    assert (one_norm["clusters"], one_norm["unit"]) == (3, "episodes")

    capsys.readouterr()
    assert main(["table", *sources, f"short={tmp_path / 'llm_short'}"]) == 2
    err = capsys.readouterr().err
    assert "interaction_steps" in err and "fake = 200" in err and "short = 5" in err
