"""Tables and figures of a finished (or running) DQN population run.

`report(run_dirs)` prints the final-test tables (joint and task by family,
seen and unseen, per reward condition) next to the paper's numbers (Tables
A6-A9), with the share of WAIT actions and of all-wait episodes, and writes
matplotlib figures from metrics.jsonl, probes.jsonl and validation.jsonl
(docs/training.md): `report.png` (per-block curves by family), `returns.png`
(training return per 20k transitions, median and IQR across norms, one panel
per family), `probes.png` (probe-set TD loss and max-Q, median and IQR) and
`validation.png` (validation success per layout).  Reward conditions,
architectures and capacities are never pooled: every curve belongs to one
run group (`train.curves.group_key`).  Several run directories (or a parent
of per-K run directories) are reported side by side, each labelled.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from normjax.agents.networks import ARCHITECTURES
from normjax.results.paper import APPENDIX_DQN
from normjax.train import curves as cv

FAMILIES = ("access", "procedure", "coordination", "allocation")

# Paper, Tables A6-A9 (joint, task) in percent, seen / unseen: one definition, in normjax.results.paper.
PAPER = APPENDIX_DQN


def _pct(v):
    return "   -" if v is None else f"{v:5.1f}"


def by_arch(results: dict, arch: str) -> dict:
    """results.json's tables as {arch: {condition: table}}.

    Runs written before populations could mix architectures keyed the tables
    by condition only; `arch` (the config's) names their architecture.
    """
    if set(results) <= set(ARCHITECTURES):
        return results
    return {arch: results}


def format_results(results: dict, arch: str) -> str:
    lines = []
    for name, tables in by_arch(results, arch).items():
        lines.append(_format_arch(tables, name))
    return "\n".join(lines)


def _format_arch(results: dict, arch: str) -> str:
    lines = []
    for cond, table in results.items():
        paper = PAPER.get((arch, cond), {})
        lines.append(f"DQN-{arch.upper()} {cond}: final tests (J joint, T task, %; paper in brackets)")
        lines.append(f"{'':8s} {'family':13s} {'J':>6s} {'T':>6s}   {'paper J':>8s} {'paper T':>8s}  wait%  all-wait%")
        for split in ("seen", "unseen"):
            if split not in table:
                continue
            for fam in ("overall",) + FAMILIES:
                if fam not in table[split]:
                    continue
                row = table[split][fam]
                pj, pt = paper.get(split, {}).get(fam, (None, None))
                extra = ""
                if fam == "overall" and "wait_share" in row:
                    extra = f"  {row['wait_share']:5.1f}  {row['all_wait_episodes']:8.1f}"
                lines.append(
                    f"{split:8s} {fam:13s} {_pct(row['joint'])} {_pct(row['task'])}   "
                    f"{_pct(pj):>8s} {_pct(pt):>8s}{extra}"
                )
        lines.append("")
    return "\n".join(lines)


def _read_jsonl(path: Path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expand_runs(paths) -> list[Path]:
    """Run directories of `paths`: each a run (has config.json) or a parent of runs (e.g. K6, K8, K10)."""
    out = []
    for p in [paths] if isinstance(paths, (str, Path)) else paths:
        p = Path(p)
        if not p.exists():
            raise ValueError(f"run directory {str(p)!r} does not exist")
        if (p / "config.json").exists():
            out.append(p)
            continue
        subs = sorted(d for d in p.iterdir() if (d / "config.json").exists())
        if not subs:
            raise ValueError(f"{str(p)!r} holds no run (no config.json in it or its subdirectories)")
        out += subs
    return out


def load_rows(runs: list[Path]) -> dict[str, list[dict]]:
    """metrics / validation / probes rows of every run, tagged with its capacity (and its
    directory name when capacities alone do not tell the runs apart)."""
    caps = [json.loads((d / "config.json").read_text()).get("capacity", 10) for d in runs]
    named = len(runs) > 1 and len(set(map(str, caps))) < len(runs)
    out = {"metrics": [], "validation": [], "probes": []}
    for d, k in zip(runs, caps):
        tag = {"capacity": k, **({"source": d.name} if named else {})}
        for name in out:
            out[name] += [dict(r, **tag) for r in _read_jsonl(d / f"{name}.jsonl")]
    return out


def _band(ax, pts, label, **kw):
    """Median line and IQR band of [(x, q25, median, q75, n), ...]."""
    x = [p[0] for p in pts]
    (line,) = ax.plot(x, [p[2] for p in pts], label=label, **kw)
    ax.fill_between(x, [p[1] for p in pts], [p[3] for p in pts], alpha=0.2, color=line.get_color())


def _finish(fig, axes, path):
    for ax in axes:
        ax.set_xlabel("transitions per run")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _block_figure(metrics, val, path):
    """Per-block means by family and run group (the first overview figure)."""
    from matplotlib.figure import Figure

    keys = ("reward_per_step", "td_loss", "q_mean", "wait_share", "sanctions_per_step")
    series = defaultdict(lambda: defaultdict(list))
    for r in metrics:
        for key in keys:
            if r.get(key) is not None:
                series[(key, f"{r['family']} ({cv.group_key(r)})")][r["step"]].append(r[key])
    fig = Figure(figsize=(14, 7))
    axes = fig.subplots(2, 3)
    titles = (
        "reward per step",
        "TD loss (replay batches)",
        "mean Q(s,a) (replay batches)",
        "WAIT share",
        "sanctions per step",
    )
    for ax, key, title in zip(axes.flat, keys, titles):
        for (k, label), pts in sorted(series.items()):
            if k == key:
                steps = sorted(pts)
                ax.plot(steps, [sum(pts[s]) / len(pts[s]) for s in steps], label=label)
        ax.set_title(title)
    ax = axes.flat[5]
    pooled = "all" if any(r.get("layout") for r in val) else "cafe"  # older runs validated on the cafe only
    for (group, layout), pts in cv.validation_curves(val).items():
        if layout == pooled:
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", label=f"task ({group})")
            ax.plot([p[0] for p in pts], [100 * p[2] for p in pts], "o--", label=f"joint ({group})")
    ax.set_title("validation success (%), " + ("all validation layouts" if pooled == "all" else "cafe"))
    return _finish(fig, axes.flat, path)


def _returns_figure(metrics, path):
    from matplotlib.figure import Figure

    bins = cv.bin_returns(metrics)
    fig = Figure(figsize=(14, 4))
    axes = fig.subplots(1, len(FAMILIES), sharey=True)
    for ax, fam in zip(axes, FAMILIES):
        for (group, f), pts in bins.items():
            if f == fam:
                _band(ax, pts, group, marker=".")
        ax.set_title(fam)
    fig.suptitle(f"training return per {cv.RETURN_BIN // 1000}k transitions: median and IQR across norms")
    return _finish(fig, axes, path)


def _probe_figure(probes, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    axes = fig.subplots(1, 2)
    for ax, field, title in zip(
        axes, ("probe_td_loss", "probe_max_q"), ("probe-set TD Huber loss", "probe-set mean max-Q")
    ):
        for group, pts in cv.quantile_curves(probes, field).items():
            _band(ax, pts, group)
        ax.set_title(f"{title} (median, IQR across norms)")
    return _finish(fig, axes, path)


def _validation_figure(val, path):
    from matplotlib.figure import Figure

    curves = cv.validation_curves(val)
    layouts = list(dict.fromkeys(lay for _, lay in curves))
    fig = Figure(figsize=(4.5 * len(layouts), 4))
    axes = fig.subplots(1, len(layouts), sharey=True, squeeze=False)[0]
    for ax, lay in zip(axes, layouts):
        for (group, la), pts in curves.items():
            if la == lay:
                (line,) = ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", label=f"task ({group})")
                ax.plot(
                    [p[0] for p in pts],
                    [100 * p[2] for p in pts],
                    "o--",
                    color=line.get_color(),
                    label=f"joint ({group})",
                )
        ax.set_title(f"validation on {lay} (% , mean across norms)")
    return _finish(fig, axes, path)


def figures(runs, out_dir: Path | None = None) -> list[Path]:
    """Write the figures of one or several runs into `out_dir` (default: the run, or the runs' parent)."""
    runs = expand_runs(runs)
    if out_dir is None:
        out_dir = runs[0] if len(runs) == 1 else Path(os.path.commonpath([str(r.resolve()) for r in runs]))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = load_rows(runs)
    if not rows["metrics"]:
        return []
    out = [
        _block_figure(rows["metrics"], rows["validation"], out_dir / "report.png"),
        _returns_figure(rows["metrics"], out_dir / "returns.png"),
    ]
    if rows["probes"]:
        out.append(_probe_figure(rows["probes"], out_dir / "probes.png"))
    if rows["validation"]:
        out.append(_validation_figure(rows["validation"], out_dir / "validation.png"))
    return out


def _validation_table(val) -> list[str]:
    """Last validation point per run group: task / joint per layout."""
    curves = cv.validation_curves(val)
    if not curves:
        return []
    lines = ["validation (last point; task / joint %, mean across norms):"]
    for (group, lay), pts in curves.items():
        step, task, joint, n = pts[-1]
        lines.append(f"  {group:32s} {lay:16s} at {step:>9,}: {100 * task:5.1f} / {100 * joint:5.1f}  ({n} runs)")
    return lines


def report(run_dir, out_dir=None) -> str:
    """Tables of every run in `run_dir` (a run, a parent of runs, or a list) and their figures."""
    runs = expand_runs(run_dir)
    text = []
    for d in runs:
        cfg = json.loads((d / "config.json").read_text())
        if len(runs) > 1:
            text.append(f"== {d} (K={cfg.get('capacity', 10)}) ==")
        res_path = d / "results.json"
        if res_path.exists():
            res = json.loads(res_path.read_text())
            text.append(format_results(res["results"], cfg["arch"]))
            text.append(
                f"training wall time: {res['train_seconds']:.0f} s for {res['n_runs']} runs "
                f"x {cfg['total_steps']:,} transitions"
            )
        else:
            text.append("no results.json yet (training not finished)")
    text += _validation_table(load_rows(runs)["validation"])
    for p in figures(runs, out_dir):
        text.append(f"wrote {p}")
    return "\n".join(text)
