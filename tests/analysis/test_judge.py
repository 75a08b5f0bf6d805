"""Strict judge-score import (normjax.analysis.judge) on a hand-made run directory:
only the rubric's integer in the documented reply format counts; everything
else, unknown ids included, is an error listed with its line; the curve covers
the norms requested, not every norm in the directory."""

from __future__ import annotations

import json

import pytest

from normjax.analysis.judge import export_judge_prompts, import_judge_scores
from normjax.runtime.transcripts import TRANSCRIPT_FORMAT, TranscriptStore


def _interaction(store, norm, beliefs, incomplete=False):
    header = {
        "transcript": TRANSCRIPT_FORMAT,
        "name": f"{norm}/interaction",
        "result": {"llm": {"incomplete": incomplete}},
    }
    steps = [{"t": t, "llm": {"queried": True, "belief": b}} for t, b in enumerate(beliefs)]
    store.finish(f"{norm}/interaction", [header, *steps])


@pytest.fixture
def run(tmp_path):
    store = TranscriptStore(tmp_path)
    _interaction(store, "forbidden_zone_q", [None, "avoid Q", "avoid Q", "avoid zone Q always"])
    _interaction(store, "group_doors_abc", [None, "doors by colour", "doors by colour", "doors by colour"])
    _interaction(store, "zone_r_capacity_1", ["anything"] * 4, incomplete=True)  # not a belief source
    prompts = [json.loads(x) for x in export_judge_prompts(tmp_path).read_text().splitlines()]
    return tmp_path, {(p["norm"], p["belief"]): p["id"] for p in prompts}


def _write(path, lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_only_the_rubrics_number_in_the_reply_format_counts(run, tmp_path):
    out, ids = run
    assert {n for n, _ in ids} == {"forbidden_zone_q", "group_doors_abc"}  # the incomplete episode is skipped
    q1, q2 = ids[("forbidden_zone_q", "avoid Q")], ids[("forbidden_zone_q", "avoid zone Q always")]
    doors = ids[("group_doors_abc", "doors by colour")]
    scores = _write(
        tmp_path / "s.jsonl",
        [
            {"id": q1, "reply": "On a scale of 1 to 7, this belief deserves a 5"},  # prose: an error, not 1 or 5
            {"id": q1, "reply": '<think>{"score": 2}</think> ```json\n{"score": 6, "rationale": "close"}\n```'},
            {"id": q2, "score": 7.0},  # not the rubric's integer
            {"id": q2, "score": 7},
            {"id": q2, "score": 5},  # a second, different score
            {"id": doors, "reply": '{"score": "4"}'},
            {"id": "no_such_norm#0", "score": 3},
            "not json",
            {"id": doors},
        ],
    )
    acc = import_judge_scores(out, scores, norms=["forbidden_zone_q"])
    errors = {e["line"]: e["error"] for e in acc["errors"]}
    assert sorted(errors) == [1, 3, 5, 6, 7, 8, 9] and acc["invalid_lines"] == 7
    assert "no JSON object with a score" in errors[1] and "7.0" in errors[3] and "second score 5" in errors[5]
    assert "'4' is not an integer" in errors[6] and "unknown id 'no_such_norm#0'" in errors[7]
    assert errors[8] == "not a JSON object" and "neither a score nor a reply" in errors[9]
    # the curve: only the requested norm, with its step scores (none yet = 1)
    assert acc["norms"] == ["forbidden_zone_q"] and acc["missing"] == [] and acc["judged"] == 2
    assert acc["complete"] is False  # unusable lines: the curve is no result
    assert acc["curve"]["mean_score"] == [1, 6, 6, 7] and acc["curve"]["correct_share"] == [0, 1, 1, 1]
    both = import_judge_scores(out, scores, norms=["forbidden_zone_q", "group_doors_abc", "zone_r_capacity_1"])
    assert both["norms"] == ["forbidden_zone_q", "group_doors_abc"] and both["missing"] == [doors]
    assert both["missing_norms"] == ["zone_r_capacity_1"] and both["curve"]["mean_score"] == [1, 3.5, 3.5, 4]
    assert both["complete"] is False
