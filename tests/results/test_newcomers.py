"""normjax table --newcomers: runs of one model with several newcomer kinds as rows of one table,
and the comparison's cells (over-imitation, judge belief correctness, evidence use, cost) checked
against values computed by hand from tiny hand-built llm-eval runs (no JAX run, no LLM)."""

from __future__ import annotations

import json

import pytest

from normjax.cli import main
from normjax.results.readers import read, read_all
from normjax.results.table import build, table_text
from tests.results.test_table import _rows, _write

NORMS3 = (("forbidden_zone_q", "access", 0), ("one_way_aisle", "procedure", 12), ("group_doors_cab", "allocation", 44))
NAMES = [n for n, _, _ in NORMS3]
RESAMPLES = 200


def _observer(per_bit):
    """observer_beliefs.json's shape (normjax.analysis.observer_alignment) with the per-bit numbers given."""
    overall = {
        k: dict(events=5, informative=dict(n=n, score_per_bit=pb, se_score_per_bit=se))
        for k, (pb, se, n) in per_bit.items()
    }
    return dict(norms=NAMES, change=dict(overall=overall, by_family={}))


def llm_run(tmp_path, newcomer=None, joint_of=lambda n, c, e: c == "seen", judge=None, observer=None, **meta):
    """An llm-eval run of model "m" on NORMS3: test episodes with tokens (and module counters when a
    module ran), one interaction row per norm, optional judge scores and observer file."""
    d = tmp_path / (newcomer or "memory")
    settings = dict(model="m", text_only=False, known_norm=False, seed=0, capacity=10, interaction_steps=200)
    settings.update(meta)
    if newcomer is not None:
        settings["newcomer"] = newcomer
    module = newcomer not in (None, "memory")
    episodes = _rows(joint_of, norms=NORMS3)
    for r in episodes:
        r.update(tokens_in=100, tokens_out=10)
        if module:
            r.update(module_calls=4, module_errors=0, module_tokens_in=300, module_tokens_out=30)
        if settings.get("distractor"):
            r.update(over_imitation=0.1 * r["episode"] + (0.3 if r["condition"] == "unseen" else 0.0))
    interaction = [dict(norm=n, family=f, tokens_in=2000, tokens_out=200) for n, f, _ in NORMS3]
    for r in interaction:
        if module:
            r.update(module_calls=50, module_errors=1, module_tokens_in=5000, module_tokens_out=400)
    result = dict(episodes=episodes, interaction=interaction, incomplete=[], meta=settings)
    if judge is not None:
        result["belief_accuracy"] = judge
    _write(d / "run.json", dict(format="normjax.llm-run/1", **settings))
    _write(d / "results.json", result)
    if observer is not None:
        _write(d / "beliefs" / "observer_beliefs.json", observer)
    return d


def _judge(scores, complete=True):
    return dict(complete=complete, norms=NAMES, final_score=dict(zip(NAMES, scores)))


def test_the_newcomer_kind_is_part_of_a_rows_identity(tmp_path):
    memory, contrastive = llm_run(tmp_path), llm_run(tmp_path, "contrastive")
    (m,) = read(str(memory))  # no meta.newcomer: a run from before normative modules, the memory newcomer
    (c,) = read(str(contrastive))
    assert (m.label, m.newcomer, m.model) == ("m", "memory", "m")
    assert (c.label, c.newcomer, c.model) == ("m (contrastive)", "contrastive", "m")
    # were the kind ignored, both runs would be one label, pooled, and refused (the same episodes twice)
    rows = read_all([str(memory), str(contrastive), str(llm_run(tmp_path, "theory_of_mind"))])
    assert [r.label for r in rows] == ["m", "m (contrastive)", "m (theory_of_mind)"]
    text = table_text([str(memory), str(contrastive)], n_resamples=RESAMPLES)
    assert "| m | seen |" in text and "| m (contrastive) | seen |" in text


def test_the_comparisons_cells_computed_by_hand(tmp_path):
    memory = llm_run(tmp_path)
    contrastive = llm_run(
        tmp_path,
        "contrastive",
        joint_of=lambda n, c, e: True,
        judge=_judge([7, 6, 2]),
        observer=_observer(
            dict(own_violation=(0.5, 0.25, 4), others_violation=(None, None, 0), compliant_move=(0.125, None, 1))
        ),
    )
    t = build([str(memory), str(contrastive)], newcomers=True, n_resamples=RESAMPLES)
    m, c = t["newcomers"]
    assert (m["newcomer"], c["newcomer"]) == ("memory", "contrastive")
    # belief: final scores 7, 6, 2 -> 2 of 3 norms correct (>= 6), mean score 5
    assert c["belief"]["correct"]["mean"] == pytest.approx(200 / 3)
    assert c["belief"]["score"]["mean"] == pytest.approx(5.0)
    assert c["belief"]["score"]["low"] <= 5.0 <= c["belief"]["score"]["high"]
    assert c["evidence"]["own_violation"] == dict(per_bit=0.5, se=0.25, n=4)
    # cost per episode: tokens in + out; a memory run has no module, so 0 calls (not missing)
    assert c["cost"]["test"] == dict(calls=4.0, module_tokens=330.0, errors=0.0, tokens=110.0)
    assert c["cost"]["interaction"] == dict(calls=50.0, module_tokens=5400.0, errors=1.0, tokens=2200.0)
    assert m["cost"]["test"] == dict(calls=0.0, module_tokens=0.0, errors=0.0, tokens=110.0)
    # the module row is paired with its model's memory row: joint seen 100 - 100, unseen 100 - 0
    diffs = {
        (d["a"], d["b"], d["condition"], d["metric"]): d["diff"] for d in t["comparisons"] if d["group"] == "overall"
    }
    assert diffs[("m (contrastive)", "m", "seen", "joint")] == 0.0
    assert diffs[("m (contrastive)", "m", "unseen", "joint")] == 100.0
    text = table_text([str(memory), str(contrastive)], newcomers=True, n_resamples=RESAMPLES)
    assert "| m (contrastive) | contrastive | unseen | 100.0 [" in text
    assert "| m | memory | unseen | 0.0 [" in text
    assert "| m (contrastive) | contrastive | 3 | 66.7 [" in text
    assert "0.500 ± 0.250 (n=4) | — (n=0) | 0.125 ± — (n=1) |" in text
    assert "| m (contrastive) | contrastive | 2,200.0 | 50.0 | 5,400.0 | 110.0 | 4.0 | 330.0 |" in text
    assert "| m | memory | 2,200.0 | 0.0 | 0.0 | 110.0 | 0.0 | 0.0 |" in text
    assert "| m (contrastive) - m | seen | overall | joint |" in text


def test_missing_inputs_read_dash_with_the_command_that_makes_them(tmp_path):
    sources = [str(llm_run(tmp_path)), str(llm_run(tmp_path, "infer_edit", judge=_judge([7, 7, 7], complete=False)))]
    t = build(sources, newcomers=True, n_resamples=RESAMPLES)
    m, i = t["newcomers"]
    assert m["belief"] is None and "normjax llm-judge" in m["notes"]["belief"]
    assert i["belief"] is None and "incomplete" in i["notes"]["belief"]
    assert m["evidence"] is None and "llm-beliefs --run DIR --observer" in m["notes"]["evidence"]
    assert m["over_imitation"] is None and "--distractor" in m["notes"]["over_imitation"]
    text = table_text(sources, newcomers=True, n_resamples=RESAMPLES)
    assert "| m | memory | seen | 100.0 [" in text and " | — |" in text
    assert "- — m (infer_edit), belief correctness: the imported judge scores are incomplete" in text
    assert "- — m, over-imitation: no distractors in the run (llm-eval --distractor" in text


def test_over_imitation_of_runs_with_distractors(tmp_path):
    d = dict(distractor="move1_wait1", distractor_share=0.5)
    sources = [str(llm_run(tmp_path, **d)), str(llm_run(tmp_path, "direct_edit", **d))]
    m, _ = build(sources, newcomers=True, n_resamples=RESAMPLES)["newcomers"]
    # per norm the rates 0, 0.1, 0.2 (seen) and 0.3, 0.4, 0.5 (unseen): means 10% and 40%
    assert m["over_imitation"]["seen"]["mean"] == pytest.approx(10.0)
    assert m["over_imitation"]["unseen"]["mean"] == pytest.approx(40.0)
    assert "over_imitation" not in m["notes"]


def test_formats_the_command_line_and_the_refusal(tmp_path, capsys):
    sources = [str(llm_run(tmp_path)), str(llm_run(tmp_path, "contrastive", judge=_judge([7, 6, 2])))]
    assert main(["table", *sources, "--newcomers", "--format", "json", "--resamples", "100"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["newcomer"] for r in payload["rows"]] == ["memory", "contrastive"]
    assert [r["label"] for r in payload["newcomers"]] == ["m", "m (contrastive)"]
    assert payload["newcomers"][1]["belief"]["correct"]["clusters"] == 3
    for fmt, marker in (("csv", "# Newcomer comparison: cost per episode"), ("latex", r"\begin{tabular}")):
        text = table_text(sources, fmt=fmt, newcomers=True, n_resamples=RESAMPLES)
        assert marker in text and "m (contrastive)" in text
    oracle = _write(tmp_path / "oracle.json", dict(episodes=_rows(norms=NORMS3), meta=dict(policy="oracle", seed=0)))
    with pytest.raises(
        ValueError, match=r"--newcomers compares llm-eval runs; these results hold none \(kinds: evaluate\)"
    ):
        build([str(oracle)], newcomers=True, n_resamples=RESAMPLES)


def test_norms_filter_absent_counters_and_a_broken_observer_file(tmp_path):
    observer = _observer({k: (0.5, 0.1, 3) for k in ("own_violation", "others_violation", "compliant_move")})
    run = llm_run(tmp_path, "direct_edit", judge=_judge([7, 6, 2]), observer=observer)
    # --norms keeps two of the three norms: the judge's share is over those (7, 6: both correct);
    # the observer file covers all three, so its numbers are not the row's
    (row,) = build([str(run)], newcomers=True, norms=NAMES[:2], n_resamples=RESAMPLES)["newcomers"]
    assert row["belief"]["correct"]["mean"] == 100.0 and row["belief"]["score"]["mean"] == 6.5
    assert row["evidence"] is None and "covers norms" in row["notes"]["evidence"]
    # an episode without module counters never consulted the module (the runner counts from the
    # first call): 0; an episode without the newcomer's token counts is from an older run: missing
    data = json.loads((run / "results.json").read_text())
    for r in data["episodes"][:9]:
        del r["module_calls"]
    del data["interaction"][0]["tokens_in"]
    (run / "results.json").write_text(json.dumps(data))
    (row,) = build([str(run)], newcomers=True, n_resamples=RESAMPLES)["newcomers"]
    assert row["cost"]["test"]["calls"] == 2.0 and row["cost"]["test"]["module_tokens"] == 330.0  # 4 x 9/18
    assert row["cost"]["interaction"]["tokens"] is None and row["cost"]["test"]["tokens"] == 110.0
    assert "no token counts" in row["notes"]["cost"]
    (run / "beliefs" / "observer_beliefs.json").write_text(json.dumps(dict(norms=NAMES)))
    with pytest.raises(ValueError, match=r"observer_beliefs.json: not an observer_beliefs.json .*KeyError"):
        build([str(run)], newcomers=True, n_resamples=RESAMPLES)
