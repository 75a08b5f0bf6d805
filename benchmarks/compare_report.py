"""The output of `benchmarks/compare.py`: package versions, the normjax / other
ratios, the printed table and the bar plot (log scale) of its rows."""

from __future__ import annotations

import importlib.metadata
import os
import statistics
import textwrap

import jax

NORMJAX_ENVS = ("normjax-full", "normjax-full-static", "normjax-full-ar", "normjax-world")
# (numerator, denominator) pairs of the printed ratios.
RATIO_PAIRS = [(num, den) for num in NORMJAX_ENVS for den in ("xland-empty-8x8", "xland-r1-9x9", "gymnax-cartpole")]
PACKAGES = ("normjax", "jax", "jaxlib", "flax", "xminigrid", "gymnax", "gymnasium")


def versions() -> dict:
    out = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def ratios(rows: list[dict]) -> list[dict]:
    """normjax / other env-steps/s per batch: of the best runs (`ratio`) and,
    where both were timed in the same interleaved rounds, the median of the
    per-round ratios (`median_round_ratio`, less disturbed by the machine's drift)."""
    by = {(r["env"], r["batch"]): r for r in rows}
    out = []
    for batch in sorted({r["batch"] for r in rows}):
        for num, den in RATIO_PAIRS:
            if (num, batch) in by and (den, batch) in by:
                a, b = by[(num, batch)], by[(den, batch)]
                q = dict(
                    batch=batch, numerator=num, denominator=den, ratio=round(a["steps_per_s"] / b["steps_per_s"], 5)
                )
                ra, rb = a.get("run_s_rounds"), b.get("run_s_rounds")
                if ra and rb and len(ra) == len(rb):
                    q["median_round_ratio"] = round(statistics.median(tb / ta for ta, tb in zip(ra, rb)), 5)
                out.append(q)
    return out


def _num(v) -> str:
    return "-" if v is None else f"{v:,.0f}"


def print_table(rows, train, ratio_rows):
    head = (
        f"{'program':<52} {'batch':>6} {'steps':>5} {'env-steps/s':>13} {'us/step':>9} {'compile s':>9} "
        f"{'run s':>8} {'bytes/step':>11} {'1 more step':>11} {'flops/step':>11} {'while':>5} {'gather':>6} "
        f"{'fusion':>6}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        h = r["hlo"]
        print(
            f"{r['label'][:52]:<52} {r['batch']:>6} {r['steps']:>5} {r['steps_per_s']:>13,.0f} "
            f"{r['us_per_env_step']:>9.3f} {r['compile_s']:>9.1f} {r['run_s']:>8.3f} "
            f"{r['xla_bytes_per_env_step']:>11,.0f} {_num(r.get('xla_bytes_per_step_marginal')):>11} "
            f"{r['xla_flops_per_env_step']:>11,.0f} "
            f"{h['while']:>5} {h['gather']:>6} {h['fusion']:>6}"
        )
    if train:
        h = train["hlo"]
        print(
            f"{train['label'][:52]:<52} {train['runs']:>6} {train['chunks'] * train['transitions_per_chunk']:>5} "
            f"{train['transitions_per_s']:>13,.0f} {1e6 / train['transitions_per_s']:>9.3f} "
            f"{train['compile_s']:>9.1f} {train['run_s']:>8.3f} {train['xla_bytes_per_run_chunk']:>11,.0f} {'':>11} "
            f"{train['xla_flops_per_run_chunk']:>11,.0f} {h['while']:>5} {h['gather']:>6} {h['fusion']:>6}"
        )
        print(
            "  (DQN row: 'batch' = runs, 'steps' = transitions per run, env-steps/s = transitions/s, "
            "bytes/flops per run-chunk of 4 transitions + 1 update)"
        )
    if ratio_rows:
        print("\nratios of env-steps/s (normjax / other):")
        for q in ratio_rows:
            med = f"  (median of rounds {q['median_round_ratio']:.4f})" if "median_round_ratio" in q else ""
            print(f"  batch {q['batch']:>6}  {q['numerator']:<16} / {q['denominator']:<16} = {q['ratio']:.4f}{med}")


def plot(rows, train, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    envs = list(dict.fromkeys(r["env"] for r in rows))
    labels = {r["env"]: r["label"] for r in rows}
    batches = sorted({r["batch"] for r in rows})
    by = {(r["env"], r["batch"]): r["steps_per_s"] for r in rows}
    groups = envs + (["normjax-dqn"] if train else [])
    x = np.arange(len(groups))
    width = 0.8 / max(len(batches), 1)
    fig, ax = plt.subplots(figsize=(max(7, 1.5 * len(groups)), 4.5))
    for j, b in enumerate(batches):
        vals = [by.get((e, b), np.nan) for e in envs]
        bars = ax.bar(x[: len(envs)] + (j - (len(batches) - 1) / 2) * width, vals, width, label=f"batch {b:,}")
        for bar, v in zip(bars, vals):
            if np.isfinite(v):
                ax.annotate(
                    f"{v:,.0f}",
                    (bar.get_x() + bar.get_width() / 2, v),
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    rotation=90,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    if train:
        v = train["transitions_per_s"]
        ax.bar(x[-1], v, width, color="grey", hatch="//", label=f"DQN transitions/s ({train['runs']} runs)")
        ax.annotate(
            f"{v:,.0f}",
            (x[-1], v),
            ha="center",
            va="bottom",
            fontsize=6,
            rotation=90,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_xticks(x)
    names = [labels.get(e, "normjax DQN-MLP\n50-run chunk") for e in groups]
    ax.set_xticklabels([textwrap.fill(n, 20) for n in names], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("env-steps / s (log)")
    ax.set_title(
        f"jit(vmap(scan)) of {rows[0]['steps'] if rows else '?'} random-action steps, "
        f"{jax.devices()[0].platform.upper()}, {os.cpu_count()} cores",
        fontsize=10,
    )
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
