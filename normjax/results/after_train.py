"""The closing table of ``normjax train``: the new run among the reference rows and the committed
1M DQN-MLP runs, on the run's own norms, with intervals, and one line on the budgets.

The reference files live in the repository beside the package (``benchmarks/results/``,
``results/cpu_paper_mlp_1m/``); in an installation without them the table has the run's
rows only and says so.
"""

from __future__ import annotations

from pathlib import Path

from normjax.results import render as R
from normjax.results.readers import read
from normjax.results.table import build

REPO = Path(__file__).resolve().parents[2]
REFERENCES = ("oracle", "blind")  # benchmarks/results/protocol_<policy>.json
ONE_MILLION = "results/cpu_paper_mlp_1m"  # <condition>/part*/: the 1M-transition DQN-MLP runs


def reference_sources(repo: Path = REPO) -> list[str]:
    out = [str(p) for name in REFERENCES if (p := repo / "benchmarks/results" / f"protocol_{name}.json").is_file()]
    root = repo / ONE_MILLION
    if root.is_dir():
        out += [f"DQN-MLP {d.name} 1M={d}" for d in sorted(root.iterdir()) if d.is_dir()]
    return out


def _cell(cells, label, cond, metric) -> str:
    c = next(
        (c for c in cells if (c["label"], c["condition"], c["group"], c["metric"]) == (label, cond, "overall", metric)),
        None,
    )
    return R.fmt_cell(c)


def closing_table(run_dir, repo: Path = REPO) -> str:
    """Markdown: the run's rows beside the references on the run's norms, then the budget line."""
    own = read(str(run_dir))
    norms = sorted({n for r in own for n in r.norms})
    refs = reference_sources(repo)
    t = build([str(run_dir), *refs], allow_mixed=True, norms=norms)
    labels = [r.label for r in t["results"]]
    grid = R.table1_grid(t["cells"], labels, t["marks"], paper=False)
    grid["title"] = f"This run among the reference rows, on its {len(norms)} norm(s): " + grid["title"]
    lines = [R.render([grid], "markdown", t["notes"])]
    if not refs:
        lines.append("(no reference results beside the package: benchmarks/results/ and results/ are not here)")
    for r in own:
        cond = r.label.split(" ")[1] if r.label.startswith("DQN-") else None
        ref = f"DQN-MLP {cond} 1M"
        budget = next((n for n in r.notes if "transitions per run" in n), r.label)
        if ref in labels:
            lines.append(
                f"{budget}; the committed 1M DQN-MLP runs reached {_cell(t['cells'], ref, 'seen', 'joint')} joint and "
                f"{_cell(t['cells'], ref, 'seen', 'task')} task success (seen, %) on these norms "
                f"(`normjax table` for more; docs/results.md)."
            )
    return "\n".join(lines)


__all__ = ["closing_table", "reference_sources"]
