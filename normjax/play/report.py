"""The human rows of `normjax play-export`: the paper's best-per-norm row, means with 95% intervals, settings.

* Best per norm (the paper's Table 1 human row, Appendix 10.4: "the best observed human
  performance for each norm"): for every norm and every cell (seen / unseen x joint /
  task), the best participant's success rate over that norm's three episodes; a family's
  (and the overall) value is the mean of its norms' best values.  Each cell takes its own
  best participant.
* Mean with a 95% interval: the unit is one participant on one norm (their rate over the
  norm's three episodes of a condition); mean +- 1.96 x SD / sqrt(n) (normal
  approximation, clipped to [0, 100]; no interval for n < 2).
* The protocol settings of the study folder (``play.json``, ``study.json``), with a note
  when the interaction phase is not the protocol's 200 steps.
"""

from __future__ import annotations

import collections
import json
import math
from pathlib import Path

from normjax.norms import FAMILIES
from normjax.protocol.seeds import CONDITIONS

PROTOCOL_INTERACTION_STEPS = 200
CELLS = tuple((c, m) for c in CONDITIONS for m in ("joint", "task"))


def _units(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    """{(participant, norm, condition): {"family", "joint", "task"}}: rates over the episodes."""
    acc = collections.defaultdict(list)
    for r in rows:
        acc[(r["participant"], r["norm"], r["condition"])].append(r)
    return {
        k: dict(
            family=v[0]["family"],
            joint=100.0 * sum(float(r["joint"]) for r in v) / len(v),
            task=100.0 * sum(float(r["task"]) for r in v) / len(v),
        )
        for k, v in acc.items()
    }


def best_per_norm(rows: list[dict]) -> dict:
    """{"norms": {norm: {cell: best %}}, "families": {family or "overall": {cell: mean of the norms' best, "norms": n}}}."""
    units = _units(rows)
    norms: dict[str, dict] = {}
    family_of: dict[str, str] = {}
    for (_, norm, cond), u in units.items():
        family_of[norm] = u["family"]
        cell = norms.setdefault(norm, {})
        for m in ("joint", "task"):
            cell[f"{cond}_{m}"] = max(cell.get(f"{cond}_{m}", -1.0), u[m])
    fams = {}
    for fam in ("overall",) + FAMILIES:
        members = [n for n in norms if fam in ("overall", family_of[n])]
        if members:
            fams[fam] = dict(norms=len(members))
            for c, m in CELLS:
                vals = [norms[n][f"{c}_{m}"] for n in members if f"{c}_{m}" in norms[n]]
                fams[fam][f"{c}_{m}"] = sum(vals) / len(vals) if vals else None
    return dict(norms=norms, families=fams)


def mean_ci(rows: list[dict]) -> dict:
    """{family or "overall": {cell: [mean, low, high] or [mean, None, None], "units": n}} (module docstring)."""
    units = _units(rows)
    out = {}
    for fam in ("overall",) + FAMILIES:
        fam_units = {k: u for k, u in units.items() if fam in ("overall", u["family"])}
        if not fam_units:
            continue
        out[fam] = dict(units=len({(p, n) for p, n, _ in fam_units}))
        for c, m in CELLS:
            vals = [u[m] for (_, _, cond), u in fam_units.items() if cond == c]
            if not vals:
                continue
            mean = sum(vals) / len(vals)
            if len(vals) < 2:
                out[fam][f"{c}_{m}"] = [mean, None, None]
                continue
            sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
            half = 1.96 * sd / math.sqrt(len(vals))
            out[fam][f"{c}_{m}"] = [mean, max(0.0, mean - half), min(100.0, mean + half)]
    return out


def settings(study_dir: Path) -> dict:
    """The protocol settings recorded in the study folder (play.json, study.json) and notes about them."""
    got = {}
    for name in ("play.json", "study.json"):
        p = Path(study_dir) / name
        if p.is_file():
            got[name] = json.loads(p.read_text(encoding="utf-8"))
    merged = dict(got.get("study.json", {}), **got.get("play.json", {}))
    notes = []
    steps = merged.get("interaction_steps")
    if steps is not None and steps != PROTOCOL_INTERACTION_STEPS:
        notes.append(
            f"interaction phase of {steps} steps, not the protocol's {PROTOCOL_INTERACTION_STEPS}: "
            "not comparable with the paper's rows"
        )
    if merged.get("seed", 0) != 0:
        notes.append(f"protocol seed {merged['seed']}, not the canonical 0")
    return dict(recorded=got, notes=notes)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def human_tables(rows: list[dict], n_participants: int) -> tuple[str, dict]:
    """(markdown: the best-per-norm row and the means with intervals, per family; the numbers)."""
    best, ci = best_per_norm(rows), mean_ci(rows)
    lines = [
        f"Best per norm (the paper's human row; {n_participants} participant(s)), % success:",
        "",
        "| family | norms | seen J | seen T | unseen J | unseen T |",
        "|---|---|---|---|---|---|",
    ]
    for fam, v in best["families"].items():
        lines.append(f"| {fam} | {v['norms']} | " + " | ".join(_fmt(v[f"{c}_{m}"]) for c, m in CELLS) + " |")
    lines += [
        "",
        "Mean over participant x norm with a 95% interval (normal approximation), % success:",
        "",
        "| family | units | seen J | seen T | unseen J | unseen T |",
        "|---|---|---|---|---|---|",
    ]
    for fam, v in ci.items():
        cells = []
        for c, m in CELLS:
            mean, lo, hi = v.get(f"{c}_{m}", [None, None, None])
            cells.append(_fmt(mean) + ("" if lo is None else f" [{lo:.1f}, {hi:.1f}]"))
        lines.append(f"| {fam} | {v['units']} | " + " | ".join(cells) + " |")
    return "\n".join(lines), dict(best_per_norm=best, mean_ci=ci)


__all__ = ["best_per_norm", "human_tables", "mean_ci", "settings"]
