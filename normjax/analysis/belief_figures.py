"""Figures of the belief analysis (`normjax.analysis.belief_analysis`, which draws them), as train/report.py.

* `correctness_figure`: paper Figure 4b: per interaction step, the mean judge
  score (shaded: one standard error across norms), the share of norms whose
  belief scores 6 or 7, and the newcomer's mean cumulative violations; the run's
  norms together and per norm family.
* `change_figure`: paper Figure 4c: the mean change in judge score and in
  stated confidence after each class of event (error bars: one standard
  error), each bar labelled with its number of events.

Both read only the analysis's result dict: this module imports nothing from the analysis, so
the two do not import each other.  Matplotlib's object API (`matplotlib.figure.Figure`), so no
display backend is needed.
"""

from __future__ import annotations

from pathlib import Path

EVENT_LABELS = {
    "own_violation": "own violation",
    "others_violation": "others' violation",
    "compliant_move": "observed compliant move",
}


def _finish(fig, axes, path) -> Path:
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return Path(path)


def correctness_figure(result: dict, path) -> Path:
    from matplotlib.figure import Figure

    curves = {
        "all norms": result["correctness"]["overall"],
        **{f: c for f, c in result["correctness"]["by_family"].items()},
    }
    fig = Figure(figsize=(14, 4))
    axes = fig.subplots(1, 3)
    for label, c in curves.items():
        overall = label == "all norms"
        style = dict(lw=2.0 if overall else 1.0, color="black" if overall else None, label=f"{label} ({c['norms']})")
        axes[0].plot(c["t"], c["mean_score"], **style)
        if overall and c["se_score"] and all(s is not None for s in c["se_score"]):
            lo = [m - s for m, s in zip(c["mean_score"], c["se_score"])]
            hi = [m + s for m, s in zip(c["mean_score"], c["se_score"])]
            axes[0].fill_between(c["t"], lo, hi, alpha=0.2, color="black")
        axes[1].plot(c["t"], [100 * x for x in c["correct_share"]], **style)
        axes[2].plot(c["t"], c["violations"], **style)
    axes[0].set_ylim(1, 7)
    axes[1].set_ylim(0, 100)
    for ax, title in zip(
        axes,
        (
            "mean judge score of the held belief (1-7)",
            "beliefs scoring 6 or 7 (%)",
            "cumulative own violations (mean per norm)",
        ),
    ):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("interaction step")
    fig.suptitle(f"belief correctness over the interaction ({len(result['norms'])} norms)")
    return _finish(fig, axes, path)


def change_figure(result: dict, path) -> Path:
    from matplotlib.figure import Figure

    stats = result["change"]["overall"]
    kinds = list(stats)  # the event classes in the analysis's order (`belief_analysis.EVENT_TYPES`)
    fig = Figure(figsize=(11, 4))
    axes = fig.subplots(1, 2)
    x = list(range(len(kinds)))
    for ax, key, title in (
        (axes[0], "score", "change in judge score"),
        (axes[1], "confidence", "change in stated confidence"),
    ):
        means = [stats[k][f"mean_{key}_change"] for k in kinds]
        errs = [stats[k][f"se_{key}_change"] for k in kinds]
        ax.bar(
            x,
            [m or 0.0 for m in means],
            yerr=[e or 0.0 for e in errs],
            capsize=4,
            color=["tab:red", "tab:orange", "tab:green"],
        )
        for i, k in enumerate(kinds):
            ax.annotate(
                f"n={stats[k]['n']}", (i, 0), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, [EVENT_LABELS[k] for k in kinds], fontsize=8)
        n = result["replies_after"]
        after = "the next reply" if n == 1 else f"{n} replies later"
        ax.set_title(f"{title} (belief after {after})", fontsize=10)
    fig.suptitle("belief change after social evidence (mean, one standard error)")
    return _finish(fig, axes, path)


def information_figure(result: dict, path) -> Path:
    from matplotlib.figure import Figure

    scopes = {"all norms": result["change"]["overall"], **result["change"]["by_family"]}
    fig = Figure(figsize=(3.2 * len(scopes) + 1, 6.5))
    axes = fig.subplots(2, len(scopes), squeeze=False)
    colors = ["tab:red", "tab:orange", "tab:green"]
    for col, (scope, stats) in enumerate(scopes.items()):
        kinds = list(stats)  # `belief_analysis.EVENT_TYPES` order
        x = list(range(len(kinds)))
        top, bottom = axes[0][col], axes[1][col]
        top.bar(
            x,
            [stats[k]["mean_bits"] or 0.0 for k in kinds],
            yerr=[stats[k]["se_bits"] or 0.0 for k in kinds],
            capsize=4,
            color=colors,
        )
        per_bit = [stats[k]["informative"] for k in kinds]
        bottom.bar(
            x,
            [p["score_per_bit"] or 0.0 for p in per_bit],
            yerr=[p["se_score_per_bit"] or 0.0 for p in per_bit],
            capsize=4,
            color=colors,
        )
        for i, k in enumerate(kinds):
            top.annotate(
                f"n={stats[k]['events']}", (i, 0), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7
            )
            bottom.annotate(
                f"n={per_bit[i]['n']}\n0 bits: {stats[k]['zero_bit']['n']}",
                (i, 0),
                textcoords="offset points",
                xytext=(0, 4),
                ha="center",
                fontsize=7,
            )
        top.set_title(f"{scope}: bits per event", fontsize=9)
        bottom.set_title(f"{scope}: judge-score change per bit", fontsize=9)
        for ax in (top, bottom):
            ax.axhline(0, color="black", lw=0.8)
            ax.set_xticks(x, [EVENT_LABELS[k].replace(" ", "\n", 1) for k in kinds], fontsize=7)
    n = result["replies_after"]
    after = "the next reply" if n == 1 else f"{n} replies later"
    fig.suptitle(
        f"belief change per bit of evidence: {result['label']}\n(ideal observer on the newcomer's evidence, "
        f"eps={result['eps']}; belief after {after})",
        fontsize=10,
    )
    return _finish(fig, [a for row in axes for a in row], path)


__all__ = ["change_figure", "correctness_figure", "information_figure"]
