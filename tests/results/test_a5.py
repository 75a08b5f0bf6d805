"""normjax table over finetune-eval outputs (Table A5): every reply re-graded, intervals over norms."""

from __future__ import annotations

import json

import pytest

from normjax.results.table import build, table_text

BASE = dict(prompt=[{"role": "user", "content": "?"}], allowed_actions=None, violates=None, answer=None, choices=None)


def finetune_output(tmp_path, name="eval"):
    """2 norms x (2 judgment + 2 selection records); the replies get 3 of 4 judgments (2 of 2
    violations, 1 of 2 compliant) and 2 of 4 selections right."""
    records, replies = [], []
    for n, norm in enumerate(("forbidden_zone_q", "bend_right_1")):
        for t, (violates, said) in enumerate(((True, True), (False, n == 0))):
            records.append(dict(BASE, task="norm_judgment", norm=norm, t=50 + t, violates=violates))
            replies.append(json.dumps({"reasoning": "r", "violates": said}))
        for t, said in enumerate(("A", "B")):
            records.append(dict(BASE, task="norm_selection", norm=norm, t=60 + t, answer="A", choices=list("abcd")))
            replies.append(json.dumps({"reasoning": "r", "answer": said}))
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / name
    out.mkdir()
    rows = [dict(task=r["task"], norm=r["norm"], t=r["t"], reply=x) for r, x in zip(records, replies)]
    (out / "replies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = {
        "norm_judgment": {"n": 4, "accuracy": 0.75, "balanced_accuracy": 0.75},
        "norm_selection": {"n": 4, "accuracy": 0.5},
    }
    metrics = dict(data=str(data), model="fake", temperature=0.0, tasks=tasks, score=0.75)
    (out / "metrics.json").write_text(json.dumps(metrics))
    return out


def test_finetune_eval_output_is_a_table_a5_row(tmp_path):
    t = build([str(finetune_output(tmp_path))])
    assert t["results"] == [] and [r.label for r in t["finetune"]] == ["fake on records.jsonl"]
    cells = {c["metric"]: c for c in t["a5"]}
    assert cells["norm_judgment"]["mean"] == 75.0 and cells["norm_selection"]["mean"] == 50.0
    # balanced: violations 2/2, compliant 1/2 -> 75; score = the judgment's balanced accuracy (no action records)
    assert cells["norm_judgment_balanced"]["mean"] == 75.0 and cells["score"]["mean"] == 75.0
    assert "compliant_action" not in cells and cells["norm_selection"]["clusters"] == 2
    # both norms score 1/2 on selection: every resample gives 50
    assert (cells["norm_selection"]["low"], cells["norm_selection"]["high"]) == (50.0, 50.0)
    text = table_text([str(finetune_output(tmp_path, "again"))])
    assert "Table A5" in text and "| fake on records.jsonl | 8 | 2 | - | 75.0 [" in text


def test_a_regraded_accuracy_that_disagrees_is_refused(tmp_path):
    out = finetune_output(tmp_path)
    metrics = json.loads((out / "metrics.json").read_text())
    metrics["tasks"]["norm_selection"]["accuracy"] = 1.0
    (out / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match="re-graded norm_selection accuracy"):
        build([str(out)])
