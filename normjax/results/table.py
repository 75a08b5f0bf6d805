"""`normjax table RESULT...`: one Table 1 over any results normjax writes, with intervals.

    table_text(["results/cpu_paper_mlp_1m", "oracle=benchmarks/results/protocol_oracle.json"])

reads every source (`normjax.results.readers`), refuses results whose
protocols differ unless `allow_mixed` (then the odd rows carry ``*``), computes
every cell with its 95% cluster-bootstrap interval (`normjax.results.cells`),
the paired comparisons asked for, and renders the tables (`render`); with
`figures_dir` it also writes the figures (`normjax.results.figures`); with
`newcomers` the comparison across newcomer kinds (`normjax.results.newcomers`).
"""

from __future__ import annotations

from normjax.cli_names import TABLE_FORMATS, TABLE_VIEWS
from normjax.results import cells as C
from normjax.results import newcomers as N
from normjax.results import render as R
from normjax.results.newcomer_grids import newcomer_grids, newcomer_notes
from normjax.results.readers import read_all
from normjax.results.records import SECONDARY, SUCCESS, Result, incompatibilities, odd_ones
from normjax.results.stats import RESAMPLES
from normjax.results.table_a5 import a5_cells, a5_grid

VIEWS = ("table1",) + TABLE_VIEWS
FORMATS = TABLE_FORMATS


class IncompatibleResults(ValueError):
    """The results ran different protocols (the message says what differs)."""


def _find(results, name: str):
    """A row by its label or 1-based position."""
    for r in results:
        if r.label == name:
            return r
    if name.isdigit() and 1 <= int(name) <= len(results):
        return results[int(name) - 1]
    raise ValueError(f"--compare {name!r}: no such row; rows: " + ", ".join(repr(r.label) for r in results))


def build(
    sources,
    by: str = "table1",
    compare=(),
    holm: bool = False,
    allow_mixed: bool = False,
    seed: int = 0,
    n_resamples: int = RESAMPLES,
    norms=None,
    newcomers: bool = False,
) -> dict:
    """{results, cells, comparisons, marks, notes, newcomers}: everything the renderers and figures need.

    `norms`: keep only these norms' episodes in every result (e.g. to set a run on a few
    norms beside full-protocol rows); a result left without episodes is an error.
    `newcomers`: also the newcomer comparison of the llm-eval rows (`normjax.results.newcomers`)
    and the paired comparison of each module row with its model's memory row."""
    if by not in VIEWS:
        raise ValueError(f"--by {by!r}: allowed {', '.join(VIEWS[1:])} (default: the Table 1 layout)")
    found = read_all(sources)
    results = [r for r in found if isinstance(r, Result)]
    finetune = [r for r in found if not isinstance(r, Result)]
    if norms is not None:
        keep, known = set(norms), {n for r in results for n in r.norms}
        if keep - known:
            raise ValueError(f"--norms {sorted(keep - known)}: in no result; the results' norms: {sorted(known)}")
        for r in results:
            r.records = [x for x in r.records if x["norm"] in keep]
            if not r.records:
                raise ValueError(f"{r.label}: none of the norms {sorted(keep)} in it")
    diff = incompatibilities(results)
    notes = [n for r in results for n in r.notes]
    marks = {}
    if diff:
        if not allow_mixed:
            raise IncompatibleResults(
                "these results ran different protocols and do not belong in one table:\n  "
                + "\n  ".join(diff)
                + "\n(--allow-mixed puts them together and marks with * the rows that differ from the most common protocol)"
            )
        marks = {label: " *" for label in odd_ones(results)}
        notes.append("* ran another protocol than most rows: " + "; ".join(diff))
    metrics = SUCCESS + (SECONDARY if by == "table1" else ())
    cells = [
        c for r in results for c in C.result_cells(r, "norm" if by == "norm" else "family", metrics, seed, n_resamples)
    ]
    comparisons = []
    pairs = [(_find(results, a), _find(results, b)) for a, b in compare]
    newcomer_rows = []
    if newcomers:
        llm = N.llm_rows(results)
        newcomer_rows = [N.newcomer_row(r, seed, n_resamples) for r in llm]
        asked = {(a.label, b.label) for a, b in pairs}
        pairs += [(a, b) for a, b in N.baseline_pairs(llm) if (a.label, b.label) not in asked]
    for a, b in pairs:
        comparisons += C.compare(a, b, SUCCESS, seed, n_resamples)
    if holm and comparisons:
        C.add_holm(comparisons)
    a5 = [c for r in finetune for c in a5_cells(r, seed, n_resamples)]
    return dict(
        results=results,
        cells=cells,
        comparisons=comparisons,
        marks=marks,
        notes=notes,
        finetune=finetune,
        a5=a5,
        newcomers=newcomer_rows,
    )


def table_text(
    sources,
    by: str = "table1",
    fmt: str = "markdown",
    paper: bool = False,
    compare=(),
    holm: bool = False,
    allow_mixed: bool = False,
    figures_dir=None,
    seed: int = 0,
    n_resamples: int = RESAMPLES,
    norms=None,
    newcomers: bool = False,
) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: allowed {', '.join(FORMATS)}")
    if paper and by == "norm":
        raise ValueError(
            "--paper with --by norm: the paper publishes no per-norm rows (use the Table 1 or family view)"
        )
    t = build(sources, by, compare, holm, allow_mixed, seed, n_resamples, norms, newcomers)
    labels = [r.label for r in t["results"]]
    grids = []
    if not labels:
        pass
    elif by == "table1":
        grids = [R.table1_grid(t["cells"], labels, t["marks"], paper), R.secondary_grid(t["cells"], labels, t["marks"])]
    elif by == "family":
        grids = [R.family_grid(t["cells"], labels, t["marks"], paper)]
    else:
        grids = [R.norm_grid(t["cells"], labels, t["marks"])]
    if t["newcomers"]:
        grids += newcomer_grids(t["newcomers"], t["cells"], t["marks"])
    if t["comparisons"]:
        grids.append(R.compare_grid(t["comparisons"]))
    if labels:
        grids.append(R.fingerprint_grid(t["results"], t["marks"]))
    if t["finetune"]:
        grids.append(a5_grid(t["finetune"], t["a5"]))
    notes = list(t["notes"]) + newcomer_notes(t["newcomers"])
    if figures_dir is not None and labels:
        from normjax.results.figures import write_figures

        notes += [f"wrote {p}" for p in write_figures(t, figures_dir)]
    if fmt == "json":
        return R.to_json(
            t["results"], t["cells"], t["comparisons"], t["marks"], notes, t["finetune"], t["a5"], t["newcomers"]
        )
    return R.render(grids, fmt, notes)


__all__ = ["FORMATS", "VIEWS", "IncompatibleResults", "build", "table_text"]
