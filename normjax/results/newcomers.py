"""The comparison across newcomer kinds (``normjax table --newcomers``; docs/results.md).

For every llm-eval row of a table (`normjax.results.readers.read_llm`; the newcomer kind is
part of its label), `newcomer_row` gathers what the issue's comparison asks for besides
Table 1's success cells, each from the file that holds it, never guessed:

* over-imitation (%), per condition: the per-episode ``over_imitation`` rates of a run with
  distractors, with the cluster-bootstrap interval over norms of every other cell
  (`normjax.results.stats.cell_interval`);
* belief correctness: the judge's score of each norm's final interaction belief
  (``belief_accuracy.final_score`` in ``results.json``, `normjax.analysis.judge`): the share
  of norms scored >= 6 and the mean score, both with the interval over norms;
* evidence use: belief change per bit of the ideal observer per event class, with its SE, as
  ``normjax llm-beliefs --observer`` wrote it (``beliefs/observer_beliefs.json``,
  `normjax.analysis.observer_alignment`);
* cost: per interaction and per test episode, the newcomer's tokens and the normative
  module's calls and tokens (``results.json``, `normjax.runtime.turns.MODULE_COUNTERS`).

A value that cannot be had is None, with a note saying why and which command makes it.
`baseline_pairs` pairs each module row with its model's memory row for the paired tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from normjax.analysis.belief_analysis import EVENT_TYPES
from normjax.analysis.judge import CORRECT_SCORE
from normjax.results import stats
from normjax.results.cells import cell_rng
from normjax.results.records import CONDITIONS, Result

OBSERVER_FILE = Path("beliefs") / "observer_beliefs.json"
MEMORY = "memory"  # the paper's newcomer: no normative module
STAGES = ("interaction", "test")

JUDGE_HINT = "normjax llm-judge --run DIR (or llm-eval --judge-scores FILE)"
OBSERVER_HINT = "normjax llm-beliefs --run DIR --observer (after the judge)"
DISTRACTOR_HINT = "llm-eval --distractor NAME --distractor-share S"


def _results_json(source: str) -> dict:
    return json.loads((Path(source) / "results.json").read_text(encoding="utf-8"))


def _interval(values, norms, families, seed, n_resamples, *name, proportion=True, scale=1.0) -> dict:
    c = stats.cell_interval(values, norms, families, cell_rng(seed, *name), n_resamples, proportion=proportion)
    return dict(mean=scale * c["mean"], low=scale * c["low"], high=scale * c["high"], clusters=c["clusters"])


def over_imitation(result: Result, seed: int, n_resamples: int) -> tuple[dict | None, str | None]:
    """({condition: cell in %}, None) or (None, why not)."""
    if result.fingerprint.get("distractor") in (None, "none"):
        return None, f"no distractors in the run ({DISTRACTOR_HINT})"
    values = result.column("over_imitation")
    if np.isnan(values).all():
        return None, "the run's episodes record no over_imitation (a run from before distractors were reported)"
    cond, norm, fam = (result.column(k) for k in ("condition", "norm", "family"))
    cells = {}
    for c in CONDITIONS:
        sel = cond == c
        if sel.any():
            cells[c] = _interval(
                values[sel], norm[sel], fam[sel], seed, n_resamples, c, "overall", "over_imitation", scale=100.0
            )
    return cells, None


def belief_correctness(result: Result, runs: list[dict], seed: int, n_resamples: int):
    """({correct: % of norms, score: mean 1-7}, None) or (None, why not)."""
    accuracy = [run.get("belief_accuracy") for run in runs]
    if any(a is None for a in accuracy):
        return None, f"no judge scores imported ({JUDGE_HINT})"
    if not all(a.get("complete") for a in accuracy):
        return None, f"the imported judge scores are incomplete (complete: false; rerun {JUDGE_HINT})"
    final = {n: s for a in accuracy for n, s in a["final_score"].items() if n in result.norms}
    if set(final) != set(result.norms):
        missing = sorted(set(result.norms) - set(final))
        return None, f"no judged final belief for {', '.join(missing)} ({JUDGE_HINT})"
    family = {r["norm"]: r["family"] for r in result.records}
    norms = sorted(final)
    fams = [family[n] for n in norms]
    scores = np.asarray([final[n] for n in norms], float)
    correct = _interval(scores >= CORRECT_SCORE, norms, fams, seed, n_resamples, "belief", "correct", scale=100.0)
    mean = _interval(scores, norms, fams, seed, n_resamples, "belief", "score", proportion=False)
    return dict(correct=correct, score=mean), None


def evidence_use(result: Result) -> tuple[dict | None, str | None]:
    """({event class: {per_bit, se, n}}, None) or (None, why not)."""
    if len(result.sources) > 1:
        return None, f"pooled from {len(result.sources)} runs; the observer file is per run ({OBSERVER_HINT})"
    path = Path(result.sources[0]) / OBSERVER_FILE
    if not path.is_file():
        return None, f"no {OBSERVER_FILE} ({OBSERVER_HINT})"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        norms, overall = sorted(data["norms"]), data["change"]["overall"]
        per_class = {k: overall[k]["informative"] for k in EVENT_TYPES}
        values = {k: dict(per_bit=i["score_per_bit"], se=i["se_score_per_bit"], n=i["n"]) for k, i in per_class.items()}
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(
            f"{path}: not an observer_beliefs.json of llm-beliefs --observer ({type(e).__name__}: {e})"
        ) from None
    if norms != result.norms:
        return None, f"{path} covers norms {norms}, the row {result.norms}"
    return values, None


def _mean(rows: list[dict], fields, absent_is_zero: bool) -> float | None:
    """Mean over `rows` of the sum of `fields`; None where a row lacks one, unless `absent_is_zero`."""
    if not rows:
        return None
    if not absent_is_zero and any(f not in r for r in rows for f in fields):
        return None
    return float(np.mean([sum(r.get(f, 0) for f in fields) for r in rows]))


def cost(result: Result, runs: list[dict]) -> tuple[dict, str | None]:
    """{stage: {calls, module_tokens, errors, tokens}} per episode (the row's norms).

    The runner counts a module's calls in an episode only once the module was consulted there
    (`normjax.runtime.stage`), and the memory newcomer has none: an absent module counter is 0.
    The newcomer's own tokens are counted in every episode: absent, they are missing."""
    keep = set(result.norms)
    out = {}
    for stage, key in zip(STAGES, ("interaction", "episodes")):
        rows = [r for run in runs for r in run.get(key, []) if r["norm"] in keep]
        out[stage] = dict(
            calls=_mean(rows, ("module_calls",), True),
            module_tokens=_mean(rows, ("module_tokens_in", "module_tokens_out"), True),
            errors=_mean(rows, ("module_errors",), True),
            tokens=_mean(rows, ("tokens_in", "tokens_out"), False),
        )
    lacking = any(v is None for s in out.values() for v in s.values())
    return out, "some episodes record no token counts (a run from before they were recorded)" if lacking else None


def newcomer_row(result: Result, seed: int, n_resamples: int) -> dict:
    """Every comparison value of one llm-eval row, with `notes` {column: why it is missing}."""
    runs = [_results_json(s) for s in result.sources]
    row = dict(label=result.label, model=result.model, newcomer=result.newcomer, norms=len(result.norms), notes={})
    for column, (value, why) in (
        ("over_imitation", over_imitation(result, seed, n_resamples)),
        ("belief", belief_correctness(result, runs, seed, n_resamples)),
        ("evidence", evidence_use(result)),
        ("cost", cost(result, runs)),
    ):
        row[column] = value
        if why is not None:
            row["notes"][column] = why
    return row


def llm_rows(results: list[Result]) -> list[Result]:
    rows = [r for r in results if r.kind == "llm"]
    if not rows:
        kinds = sorted({r.kind for r in results})
        raise ValueError(f"--newcomers compares llm-eval runs; these results hold none (kinds: {', '.join(kinds)})")
    return rows


def baseline_pairs(results: list[Result]) -> list[tuple[Result, Result]]:
    """(module row, its model's memory row) for every module row whose model has a memory row."""
    memory = {r.model: r for r in results if r.kind == "llm" and r.newcomer == MEMORY}
    return [(r, memory[r.model]) for r in results if r.kind == "llm" and r.newcomer != MEMORY and r.model in memory]


__all__ = [
    "MEMORY",
    "OBSERVER_FILE",
    "baseline_pairs",
    "belief_correctness",
    "cost",
    "evidence_use",
    "llm_rows",
    "newcomer_row",
    "over_imitation",
]
