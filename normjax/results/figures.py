"""The table's figures (matplotlib, no display needed), written by ``normjax table --figures DIR``.

* ``success.png``: joint and task success per family and overall, seen and
  unseen, one bar per row, with the 95% intervals as error bars;
* ``secondary.png``: the paper's Figure 4a metrics (newcomer path length,
  collisions, community path length and welfare), all norms, with intervals;
* ``differences.png`` (with ``--compare``): a forest plot of the paired
  differences, each with its interval, per family and overall.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normjax.results.cells import GROUPS
from normjax.results.records import CONDITIONS, SECONDARY
from normjax.results.render import SECONDARY_NAMES


def _bars(ax, cells, labels, groups, metric, cond):
    idx = {(c["label"], c["group"]): c for c in cells if c["metric"] == metric and c["condition"] == cond}
    width = 0.8 / max(len(labels), 1)
    x = np.arange(len(groups))
    for i, label in enumerate(labels):
        got = [idx.get((label, g)) for g in groups]
        mean = np.array([np.nan if c is None else c["mean"] for c in got])
        err = np.array([[0.0, 0.0] if c is None else [c["mean"] - c["low"], c["high"] - c["mean"]] for c in got]).T
        err = np.maximum(err, 0.0)  # a BCa bound can sit on the estimate
        ax.bar(x + (i - (len(labels) - 1) / 2) * width, mean, width, yerr=err, capsize=2, label=label)
    ax.set_xticks(x, groups, fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def success_figure(t: dict, path: Path) -> Path:
    from matplotlib.figure import Figure

    labels = [r.label for r in t["results"]]
    fig = Figure(figsize=(13, 7))
    axes = fig.subplots(2, 2, sharey=True)
    for row, metric in enumerate(("joint", "task")):
        for col, cond in enumerate(CONDITIONS):
            ax = axes[row, col]
            _bars(ax, t["cells"], labels, GROUPS, metric, cond)
            ax.set_title(f"{metric} success (%), {cond} layouts")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("error bars: 95% intervals, cluster bootstrap over norms")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def secondary_figure(t: dict, path: Path) -> Path:
    from matplotlib.figure import Figure

    labels = [r.label for r in t["results"]]
    fig = Figure(figsize=(14, 4))
    axes = fig.subplots(1, len(SECONDARY))
    for ax, metric in zip(axes, SECONDARY):
        idx = {(c["label"], c["condition"]): c for c in t["cells"] if c["metric"] == metric and c["group"] == "overall"}
        width = 0.8 / max(len(labels), 1)
        x = np.arange(len(CONDITIONS))
        for i, label in enumerate(labels):
            got = [idx.get((label, cond)) for cond in CONDITIONS]
            mean = np.array([np.nan if c is None else c["mean"] for c in got])
            err = np.array([[0.0, 0.0] if c is None else [c["mean"] - c["low"], c["high"] - c["mean"]] for c in got]).T
            err = np.maximum(err, 0.0)
            ax.bar(x + (i - (len(labels) - 1) / 2) * width, mean, width, yerr=err, capsize=2, label=label)
        ax.set_xticks(x, CONDITIONS)
        ax.set_title(SECONDARY_NAMES[metric], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def forest_figure(rows: list[dict], path: Path) -> Path:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 0.28 * len(rows) + 1.5))
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    diff = np.array([r["diff"] for r in rows])
    err = np.maximum(np.array([[r["diff"] - r["low"], r["high"] - r["diff"]] for r in rows]).T, 0.0)
    ax.errorbar(diff, y, xerr=err, fmt="o", capsize=2)
    ax.axvline(0.0, color="gray", lw=0.8)
    names = [f"{r['a']} - {r['b']}: {r['metric']}, {r['condition']}, {r['group']}" for r in rows]
    ax.set_yticks(y, names, fontsize=7)
    ax.set_xlabel("difference (percentage points) with 95% interval")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def write_figures(t: dict, out_dir) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if any(c["group"] in GROUPS for c in t["cells"]):  # not for the per-norm view
        paths.append(success_figure(t, out / "success.png"))
    if any(c["metric"] in SECONDARY for c in t["cells"]):
        paths.append(secondary_figure(t, out / "secondary.png"))
    if t["comparisons"]:
        paths.append(forest_figure(t["comparisons"], out / "differences.png"))
    return paths


__all__ = ["forest_figure", "secondary_figure", "success_figure", "write_figures"]
