"""The newcomer comparison as grids of strings (`normjax.results.render` writes them in any format).

Three grids over the rows of `normjax.results.newcomers.newcomer_row`: success and
over-imitation per condition; belief correctness and evidence use (the interaction phase, one
line per row); cost per episode.  A value that is missing reads ``—`` and a note names the row,
the column and the command that would produce it: never a silent zero.
"""

from __future__ import annotations

from normjax.analysis.belief_analysis import EVENT_TYPES
from normjax.results.newcomers import STAGES
from normjax.results.records import CONDITIONS
from normjax.results.render import fmt_cell

MISSING = "—"
COLUMN_NAMES = dict(over_imitation="over-imitation", belief="belief correctness", evidence="evidence use", cost="cost")


def _cell(c: dict | None, digits: int = 1) -> str:
    text = fmt_cell(c, digits)
    return MISSING if text == "-" else text


def _per_bit(e: dict) -> str:
    if e["per_bit"] is None:
        return f"{MISSING} (n={e['n']})"
    se = MISSING if e["se"] is None else f"{e['se']:.3f}"
    return f"{e['per_bit']:.3f} ± {se} (n={e['n']})"


def _number(x: float | None) -> str:
    return MISSING if x is None else f"{x:,.1f}"


def success_grid(rows: list[dict], cells: list[dict], marks: dict) -> dict:
    idx = {(c["label"], c["condition"], c["metric"]): c for c in cells if c["group"] == "overall"}
    out = []
    for r in rows:
        for cond in CONDITIONS:
            imit = (r["over_imitation"] or {}).get(cond)
            out.append(
                [r["label"] + marks.get(r["label"], ""), r["newcomer"], cond]
                + [_cell(idx.get((r["label"], cond, m))) for m in ("joint", "task")]
                + [_cell(imit)]
            )
    header = ["newcomer", "kind", "layouts", "joint", "task", "over-imitation"]
    title = "Newcomer comparison: success and over-imitation (%) with 95% intervals (cluster bootstrap over norms)"
    return dict(title=title, header=header, rows=out)


def belief_grid(rows: list[dict], marks: dict) -> dict:
    out = []
    for r in rows:
        b = r["belief"] or {}
        e = r["evidence"]
        line = [r["label"] + marks.get(r["label"], ""), r["newcomer"], str(r["norms"])]
        line += [_cell(b.get("correct")), _cell(b.get("score"), 2)]
        line += [_per_bit(e[k]) if e else MISSING for k in EVENT_TYPES]
        out.append(line)
    header = ["newcomer", "kind", "norms", "final belief correct (% norms)", "final judge score (1-7)"]
    header += [f"{k} score change / bit ± SE" for k in EVENT_TYPES]
    title = (
        "Newcomer comparison: belief correctness (judge, 95% intervals over norms) and evidence use "
        "(belief change per bit of the ideal observer, informative events; delta-method SE)"
    )
    return dict(title=title, header=header, rows=out)


def cost_grid(rows: list[dict], marks: dict) -> dict:
    out = []
    for r in rows:
        line = [r["label"] + marks.get(r["label"], ""), r["newcomer"]]
        for stage in STAGES:
            c = r["cost"][stage]
            line += [_number(c["tokens"]), _number(c["calls"]), _number(c["module_tokens"])]
        out.append(line)
    header = ["newcomer", "kind"]
    for stage in STAGES:
        header += [f"{stage}: newcomer tokens", f"{stage}: module calls", f"{stage}: module tokens"]
    title = "Newcomer comparison: cost per episode (tokens in + out; interaction: one per norm)"
    return dict(title=title, header=header, rows=out)


def newcomer_grids(rows: list[dict], cells: list[dict], marks: dict) -> list[dict]:
    return [success_grid(rows, cells, marks), belief_grid(rows, marks), cost_grid(rows, marks)]


def newcomer_notes(rows: list[dict]) -> list[str]:
    """One note per missing value: which row, which column, why and what produces it."""
    return [f"{MISSING} {r['label']}, {COLUMN_NAMES[col]}: {why}" for r in rows for col, why in r["notes"].items()]


__all__ = ["MISSING", "belief_grid", "cost_grid", "newcomer_grids", "newcomer_notes", "success_grid"]
