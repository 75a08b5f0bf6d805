"""normjax table: runs of one model with several newcomer kinds as rows of one table, from tiny
hand-built llm-eval runs (no JAX run, no LLM)."""

from __future__ import annotations

from normjax.results.readers import read, read_all
from normjax.results.table import table_text
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
