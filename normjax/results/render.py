"""Table 1 and its companions as text: markdown, csv, LaTeX or JSON.

`grids(...)` turns cells (`normjax.results.cells`) into titled grids of
strings, one per table: the Table 1 layout (the paper's: joint success per
family and overall, and overall task success; one row per result and
condition) or the ``--by family`` / ``--by norm`` views, the paper's
secondary metrics (Figure 4a), and the paired comparisons; `render` writes
them in one format.  A cell reads ``mean [low, high]``: the estimate and its
95% interval.
"""

from __future__ import annotations

import csv
import io
import json
import math

from normjax.cli_names import FAMILIES
from normjax.results.paper import TABLE1
from normjax.results.records import CONDITIONS, FINGERPRINT, SECONDARY

SHORT = {"access": "Access", "procedure": "Procedure", "coordination": "Coord.", "allocation": "Alloc."}
TABLE1_COLUMNS = tuple((fam, "joint", f"{SHORT[fam]} J") for fam in FAMILIES) + (
    ("overall", "joint", "All J"),
    ("overall", "task", "All T"),
)
SECONDARY_NAMES = {
    "path_length": "path length (steps)",
    "collision": "collisions (% episodes)",
    "community_path_length": "community path length",
    "community_welfare": "community welfare",
}


def fmt_cell(c: dict | None, digits: int = 1) -> str:
    if c is None or math.isnan(c["mean"]):
        return "-"
    return f"{c['mean']:.{digits}f} [{c['low']:.{digits}f}, {c['high']:.{digits}f}]"


def _index(cells: list[dict]) -> dict:
    return {(c["label"], c["condition"], c["group"], c["metric"]): c for c in cells}


def _paper_cell(label: str, cond: str, group: str, metric: str) -> str:
    v = TABLE1[label].get((cond, group, metric))
    return "-" if v is None else f"{v:.1f}"


def table1_grid(cells, labels, marks, paper: bool) -> dict:
    idx = _index(cells)
    rows = []
    for label in labels:
        for cond in CONDITIONS:
            rows.append(
                [label + marks.get(label, ""), cond]
                + [fmt_cell(idx.get((label, cond, g, m))) for g, m, _ in TABLE1_COLUMNS]
            )
    if paper:
        for label in TABLE1:
            for cond in CONDITIONS:
                rows.append([label, cond] + [_paper_cell(label, cond, g, m) for g, m, _ in TABLE1_COLUMNS])
    header = ["newcomer", "layouts"] + [name for _, _, name in TABLE1_COLUMNS]
    title = "Table 1: success (%) with 95% intervals (cluster bootstrap over norms); J joint, T task"
    return dict(title=title, header=header, rows=rows)


def family_grid(cells, labels, marks, paper: bool) -> dict:
    idx = _index(cells)
    rows = []
    for label in labels:
        for group in FAMILIES + ("overall",):
            seen = idx.get((label, "seen", group, "joint"))
            if seen is None:
                continue
            row = [label + marks.get(label, ""), group, str(seen["clusters"])]
            row += [fmt_cell(idx.get((label, c, group, m))) for c in CONDITIONS for m in ("joint", "task")]
            rows.append(row)
    if paper:
        for label in TABLE1:
            for group in FAMILIES + ("overall",):
                rows.append(
                    [label, group, "-"]
                    + [_paper_cell(label, c, group, m) for c in CONDITIONS for m in ("joint", "task")]
                )
    header = ["newcomer", "family", "norms", "seen J", "seen T", "unseen J", "unseen T"]
    return dict(
        title="Success (%) by family with 95% intervals (cluster bootstrap over norms)", header=header, rows=rows
    )


def norm_grid(cells, labels, marks) -> dict:
    idx = _index(cells)
    rows = []
    for label in labels:
        norms = list(dict.fromkeys(c["group"] for c in cells if c["label"] == label))
        for norm in norms:
            first = next(c for c in cells if c["label"] == label and c["group"] == norm)
            row = [label + marks.get(label, ""), norm, f"{first['clusters']} {first['unit']}"]
            row += [fmt_cell(idx.get((label, c, norm, m))) for c in CONDITIONS for m in ("joint", "task")]
            rows.append(row)
    header = ["newcomer", "norm", "resampled", "seen J", "seen T", "unseen J", "unseen T"]
    title = "Success (%) by norm with 95% intervals (resampling the norm's seeds, participants or episodes)"
    return dict(title=title, header=header, rows=rows)


def secondary_grid(cells, labels, marks) -> dict:
    idx = _index(cells)
    rows = [
        [label + marks.get(label, ""), cond] + [fmt_cell(idx.get((label, cond, "overall", m))) for m in SECONDARY]
        for label in labels
        for cond in CONDITIONS
    ]
    header = ["newcomer", "layouts"] + [SECONDARY_NAMES[m] for m in SECONDARY]
    title = "Secondary metrics (the paper's Figure 4a), all norms, with 95% intervals"
    return dict(title=title, header=header, rows=rows)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _protocol_value(result, key: str) -> str:
    value = result.fingerprint.get(key)
    if value is None:
        return "none (no interaction phase)" if key == "interaction_steps" else "not recorded"
    return str(value)


def compare_grid(rows: list[dict]) -> dict:
    holm = any("p_holm" in r for r in rows)
    out = []
    for r in rows:
        line = [
            f"{r['a']} - {r['b']}",
            r["condition"],
            r["group"],
            r["metric"],
            fmt_cell(dict(mean=r["diff"], low=r["low"], high=r["high"])),
        ]
        line += [_p(r["p"])] + ([_p(r["p_holm"])] if holm else []) + [str(r["clusters"])]
        out.append(line)
    header = ["comparison", "layouts", "family", "metric", "difference (points) [95%]", "p"]
    header += (["p (Holm)"] if holm else []) + ["norms"]
    title = "Paired differences on the same episodes (bootstrap over norms; sign-flip permutation p-value over norms)"
    return dict(title=title, header=header, rows=out)


def fingerprint_grid(results, marks) -> dict:
    rows = [
        [r.label + marks.get(r.label, ""), r.kind, str(len(r.norms)), str(len(r.units))]
        + [_protocol_value(r, k) for k in FINGERPRINT]
        for r in results
    ]
    header = ["newcomer", "kind", "norms", "seeds/participants"] + list(FINGERPRINT)
    return dict(title="Protocol of each row", header=header, rows=rows)


def _markdown(grid: dict) -> str:
    lines = [f"**{grid['title']}**", "", "| " + " | ".join(grid["header"]) + " |", "|" + "---|" * len(grid["header"])]
    lines += ["| " + " | ".join(row) + " |" for row in grid["rows"]]
    return "\n".join(lines)


def _latex(grid: dict) -> str:
    esc = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")
    lines = [f"% {grid['title']}", r"\begin{tabular}{" + "l" * len(grid["header"]) + "}", r"\toprule"]
    lines.append(" & ".join(esc(h) for h in grid["header"]) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(esc(c) for c in row) + r" \\" for row in grid["rows"]]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def _csv(grid: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["# " + grid["title"]])
    w.writerow(grid["header"])
    w.writerows(grid["rows"])
    return buf.getvalue().rstrip("\n")


def render(grids: list[dict], fmt: str, notes: list[str] = ()) -> str:
    if fmt == "markdown":
        text = "\n\n".join(_markdown(g) for g in grids)
        return text + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")
    if fmt == "latex":
        return "\n\n".join(_latex(g) for g in grids) + "".join(f"\n% {n}" for n in notes)
    if fmt == "csv":
        return "\n\n".join(_csv(g) for g in grids)
    raise ValueError(f"format {fmt!r}: allowed markdown, csv, latex, json")


def to_json(results, cells, comparisons, marks, notes, finetune=(), a5=(), newcomers=()) -> str:
    payload = dict(
        rows=[
            dict(
                label=r.label,
                kind=r.kind,
                sources=r.sources,
                fingerprint=r.fingerprint,
                norms=len(r.norms),
                units=r.units,
                mixed=r.label in marks,
                notes=r.notes,
                **(dict(newcomer=r.newcomer, model=r.model) if r.kind == "llm" else {}),
            )
            for r in results
        ],
        cells=cells,
        comparisons=comparisons,
        finetune=[dict(label=r.label, sources=r.sources, records=len(r.hit)) for r in finetune],
        finetune_cells=list(a5),
        **(dict(newcomers=list(newcomers)) if newcomers else {}),  # normjax.results.newcomers.newcomer_row
        notes=list(notes),
    )
    return json.dumps(_nan_to_none(payload), indent=1)  # NaN (a metric never defined) as null


def _nan_to_none(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


__all__ = [
    "compare_grid",
    "family_grid",
    "fingerprint_grid",
    "fmt_cell",
    "norm_grid",
    "render",
    "secondary_grid",
    "table1_grid",
    "to_json",
]
