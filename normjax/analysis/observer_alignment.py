"""Belief change against what the evidence could tell (``normjax llm-beliefs --observer``; docs/llm.md).

    result = analyse_observer([("", "runs/llm/qwen")], out_dir="runs/llm/qwen/beliefs")
    result = analyse_observer([("p001", "study/p001"), ("p002", "study/p002")], out_dir="study", ...)

For every interaction step of every norm of one or more runs (an `llm-eval` run, or the
complete participants of a `play` study, pooled), the ideal observer replayed on exactly the
evidence the newcomer had (`normjax.analysis.observer_replay`): its posterior over the 50
norms after the step and the step's information in bits, KL(after || before).  Each event of
`belief_analysis.norm_events` (own violation, observed violation, observed compliance; the
model's belief before it and after the next reply, judge-scored) gets its step's bits.

Per event class, overall and per norm family (`bit_stats`):

* ``events``, ``mean_bits`` (SE) over all the class's events; ``unanswered`` / ``unscored`` as
  in `belief_analysis.change_stats` (they enter no belief-change number);
* ``zero_bit``: the answered, scored events whose step told the observer nothing (bits below
  `ZERO_BITS`): their number and mean score change (SE).  They are kept apart: no
  ratio is taken over them;
* ``informative``: the other answered, scored events: their number, mean bits, mean score
  change (SE), and ``score_per_bit`` = sum of score changes / sum of bits (a ratio of means,
  so a few near-zero-bit events cannot blow it up), with the delta-method SE
  sqrt(sum (d_i - R b_i)^2 / (n (n - 1))) / mean(b); ``confidence_per_bit`` likewise;
* ``correct_after_share``: the share of answered, scored events after which the held belief
  scores >= 6.

``no_event``: the steps of no event class, with their number and total bits (information
the newcomer had that the three classes do not cover).  ``steps`` keeps every step's
observer row (posterior included) per ``[participant/]norm``; ``events`` every event.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from normjax.analysis.belief_analysis import EVENT_TYPES, load_scored_run, mean_se, norm_events
from normjax.analysis.judge import CORRECT_SCORE
from normjax.analysis.observer_replay import replay
from normjax.norms import FAMILIES, get_norm

ZERO_BITS = 1e-6  # below this a step told the observer nothing (bits are rounded to 1e-6)
RESULT_FILE = "observer_beliefs.json"
FIGURE_FILE = "observer_beliefs.png"


def aligned_events(records: list[dict], known: dict[str, int], replies_after: int = 1, eps: float = 0.0):
    """(events, steps) of one interaction transcript: `norm_events`' rows with their step's
    observer numbers, and the observer's row of every step."""
    steps = replay(records, eps)
    by_t = {s["t"]: s for s in steps}
    events = []
    for e in norm_events(records, known, replies_after):
        s = by_t[e["t"]]
        used = e["score_before"] is not None and e["score_after"] is not None
        events.append(
            dict(
                e,
                bits=s["bits"],
                judged=s["judged"],
                survivors=s["survivors"],
                p_true_after=s["p_true_after"],
                score_change=e["score_after"] - e["score_before"] if used else None,
                confidence_change=round(e["confidence_after"] - e["confidence_before"], 6) if used else None,
                correct_after=e["score_after"] >= CORRECT_SCORE if used else None,
            )
        )
    return events, steps


def ratio_se(changes: list[float], bits: list[float]) -> tuple[float | None, float | None]:
    """(sum changes / sum bits, its delta-method standard error); None for no events."""
    n, total = len(bits), sum(bits)
    if n == 0 or total <= 0:
        return None, None
    r = sum(changes) / total
    if n < 2:
        return round(r, 4), None
    resid = sum((d - r * b) ** 2 for d, b in zip(changes, bits))
    return round(r, 4), round(math.sqrt(resid / (n * (n - 1))) / (total / n), 4)


def bit_stats(events: list[dict]) -> dict:
    """Per event class: bits, belief change per bit and the zero-bit events (module docstring)."""
    out = {}
    for kind in EVENT_TYPES:
        rows = [e for e in events if e["event"] == kind]
        answered = [e for e in rows if e["reply_t"] is not None]
        used = [e for e in answered if e["score_change"] is not None]
        zero = [e for e in used if e["bits"] < ZERO_BITS]
        info = [e for e in used if e["bits"] >= ZERO_BITS]
        mb, seb = mean_se([e["bits"] for e in rows])
        zm, zse = mean_se([e["score_change"] for e in zero])
        im, ise = mean_se([e["score_change"] for e in info])
        b = [e["bits"] for e in info]
        spb, sespb = ratio_se([e["score_change"] for e in info], b)
        cpb, secpb = ratio_se([e["confidence_change"] for e in info], b)
        out[kind] = dict(
            events=len(rows),
            unanswered=len(rows) - len(answered),
            unscored=len(answered) - len(used),
            mean_bits=mb,
            se_bits=seb,
            zero_bit=dict(n=len(zero), mean_score_change=zm, se_score_change=zse),
            informative=dict(
                n=len(info),
                mean_bits=mean_se(b)[0],
                mean_score_change=im,
                se_score_change=ise,
                score_per_bit=spb,
                se_score_per_bit=sespb,
                confidence_per_bit=cpb,
                se_confidence_per_bit=secpb,
            ),
            correct_after_share=round(sum(e["correct_after"] for e in used) / len(used), 4) if used else None,
        )
    return out


def _no_event(steps: list[dict]) -> dict:
    quiet = [s for s in steps if s["event"] is None]
    return dict(steps=len(quiet), total_bits=round(sum(s["bits"] for s in quiet), 6))


def analyse_observer(
    runs,
    scores=None,
    out_dir=None,
    replies_after: int = 1,
    allow_missing: bool = False,
    eps: float = 0.0,
    figures: bool = True,
    label: str | None = None,
) -> dict:
    """The information-weighted Figure 4c numbers over `runs` ([(participant or "", run dir)], pooled);
    writes `RESULT_FILE` and `FIGURE_FILE` into `out_dir`.  `scores`: one run's scores file (None:
    each run's ``judge_scores.jsonl``)."""
    if replies_after < 1:
        raise ValueError(f"replies_after={replies_after} is invalid; allowed: a positive integer")
    if not 0.0 <= eps < 0.5:
        raise ValueError(f"eps={eps} is invalid; allowed: 0 <= eps < 0.5")
    runs = list(runs)
    if not runs:
        raise ValueError("no run to analyse (a play study needs at least one complete participant)")
    if scores is not None and len(runs) > 1:
        raise ValueError("--scores names one run's scores file; a play study reads each participant's own")
    loaded = [(who, load_scored_run(d, scores, allow_missing)) for who, d in runs]  # every check before compiling
    events, steps, norms = [], {}, []
    for who, run in loaded:
        for norm in run["norms"]:
            records = run["store"].read(f"{norm}/interaction")
            ev, st = aligned_events(records, run["known"].get(norm, {}), replies_after, eps)
            name = f"{who}/{norm}" if who else norm
            norms.append(name)
            steps[name] = st
            tag = dict(participant=who) if who else {}
            events += [dict(norm=norm, family=get_norm(norm).family, **tag, **e) for e in ev]
    fams = [f for f in FAMILIES if any(e["family"] == f for e in events)]
    family_steps = {
        f: [s for n, st in steps.items() if get_norm(n.split("/")[-1]).family == f for s in st] for f in fams
    }
    result = dict(
        label=label or loaded[0][1]["run"].name,
        runs=[str(run["run"]) for _, run in loaded],
        participants=[who for who, _ in loaded if who],
        eps=eps,
        evidence="positions seen by the newcomer (normjax.analysis.observer_replay)",
        replies_after=replies_after,
        zero_bits=ZERO_BITS,
        norms=norms,
        missing=[m for _, run in loaded for m in run["missing"]],
        change=dict(
            overall=bit_stats(events),
            by_family={f: bit_stats([e for e in events if e["family"] == f]) for f in fams},
        ),
        no_event=dict(
            overall=_no_event([s for st in steps.values() for s in st]),
            by_family={f: _no_event(family_steps[f]) for f in fams},
        ),
        events=events,
        steps=steps,
        figures=[],
    )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if figures:
            from normjax.analysis.belief_figures import information_figure

            result["figures"] = [str(information_figure(result, out / FIGURE_FILE))]
        (out / RESULT_FILE).write_text(json.dumps(result, indent=1))
    return result


def format_table(result: dict) -> str:
    """The table of the information-weighted Figure 4c: per scope (all, each family) and event class."""

    def fmt(x, width=8):
        return f"{'-' if x is None else f'{x:.3f}':>{width}}"

    lines = [
        f"{result['label']}: {len(result['norms'])} interaction episode(s); belief change per bit of the "
        f"ideal observer (eps={result['eps']}); zero-bit events apart",
        f"{'scope':<14}{'event':<18}{'events':>7}{'bits':>8}{'n>0':>6}{'d.score':>8}{'/bit':>8}{'se':>8}"
        f"{'n=0':>5}{'d.score':>8}{'correct':>8}",
    ]
    scopes = {"all": result["change"]["overall"], **result["change"]["by_family"]}
    for scope, stats in scopes.items():
        for kind, s in stats.items():
            i, z = s["informative"], s["zero_bit"]
            lines.append(
                f"{scope:<14}{kind:<18}{s['events']:>7}{fmt(s['mean_bits'])}{i['n']:>6}{fmt(i['mean_score_change'])}"
                f"{fmt(i['score_per_bit'])}{fmt(i['se_score_per_bit'])}{z['n']:>5}{fmt(z['mean_score_change'])}"
                f"{fmt(s['correct_after_share'])}"
            )
    ne = result["no_event"]["overall"]
    lines.append(f"steps with no event: {ne['steps']}, {ne['total_bits']:.3f} bits in all")
    return "\n".join(lines)


__all__ = [
    "FIGURE_FILE",
    "RESULT_FILE",
    "ZERO_BITS",
    "aligned_events",
    "analyse_observer",
    "bit_stats",
    "format_table",
    "ratio_se",
]
