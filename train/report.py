"""Tables and figures of a finished (or running) DQN population run.

`report(run_dir)` prints the final-test tables (joint and task by family,
seen and unseen, per reward condition) next to the paper's numbers (Tables
A6-A9), with the share of WAIT actions and of all-wait episodes, and writes
matplotlib figures from metrics.jsonl and validation.jsonl: learning curves by
family (reward per step), TD loss, Q values, validation success.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from agents.networks import ARCHITECTURES

FAMILIES = ("access", "procedure", "coordination", "allocation")

# Paper, Tables A6-A9 (joint, task) in percent, seen / unseen.
PAPER = {
    ("mlp", "sparse_penalty"): {
        "seen": {"overall": (8.0, 10.7), "access": (33.3, 38.9), "procedure": (0.0, 0.0),
                 "coordination": (0.0, 0.0), "allocation": (0.0, 6.1)},
        "unseen": {"overall": (2.0, 3.0), "access": (8.3, 9.7), "procedure": (0.0, 0.0),
                   "coordination": (0.0, 0.0), "allocation": (0.0, 3.0)},
    },
    ("cnn", "sparse_penalty"): {
        "seen": {"overall": (12.7, 16.0), "access": (44.4, 55.6), "procedure": (0.0, 0.0),
                 "coordination": (0.0, 0.0), "allocation": (9.1, 12.1)},
        "unseen": {"overall": (2.0, 11.3), "access": (8.3, 26.4), "procedure": (0.0, 0.0),
                   "coordination": (0.0, 1.0), "allocation": (0.0, 21.2)},
    },
    ("mlp", "no_penalty"): {"seen": {"overall": (6.7, 100.0)}, "unseen": {"overall": (2.0, 23.7)}},
    ("cnn", "no_penalty"): {"seen": {"overall": (8.7, 98.3)}, "unseen": {"overall": (4.0, 34.3)}},
    ("mlp", "dense"): {"seen": {"overall": (8.7, 39.0)}, "unseen": {"overall": (1.3, 19.0)}},
    ("cnn", "dense"): {"seen": {"overall": (7.3, 54.7)}, "unseen": {"overall": (2.0, 17.0)}},
}


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
                lines.append(f"{split:8s} {fam:13s} {_pct(row['joint'])} {_pct(row['task'])}   "
                             f"{_pct(pj):>8s} {_pct(pt):>8s}{extra}")
        lines.append("")
    return "\n".join(lines)


def _read_jsonl(path: Path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _group(row: dict) -> str:
    """Reward condition, with the architecture in runs that record it."""
    return f"{row['arch']} {row['reward_condition']}" if "arch" in row else row["reward_condition"]


def _label(row: dict) -> str:
    return f"{row['family']} ({_group(row)})"


def figures(run_dir: Path) -> list[Path]:
    # The object-oriented API: no pyplot backend switch in the caller's process.
    from matplotlib.figure import Figure

    metrics = _read_jsonl(run_dir / "metrics.jsonl")
    val = _read_jsonl(run_dir / "validation.jsonl")
    if not metrics:
        return []
    out = []
    series = defaultdict(lambda: defaultdict(list))
    for r in metrics:
        for key in ("reward_per_step", "td_loss", "q_mean", "wait_share", "sanctions_per_step"):
            if r.get(key) is not None:
                series[(key, _label(r))][r["step"]].append(r[key])
    fig = Figure(figsize=(14, 7))
    axes = fig.subplots(2, 3)
    for ax, key, title in zip(axes.flat, ("reward_per_step", "td_loss", "q_mean", "wait_share", "sanctions_per_step"),
                              ("reward per step", "TD loss", "mean Q(s,a)", "WAIT share", "sanctions per step")):
        for (k, label), pts in sorted(series.items()):
            if k != key:
                continue
            steps = sorted(pts)
            ax.plot(steps, [sum(pts[s]) / len(pts[s]) for s in steps], label=label)
        ax.set_title(title)
        ax.set_xlabel("transitions per run")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    ax = axes.flat[5]
    vs = defaultdict(lambda: defaultdict(list))
    for r in val:
        group = _group(r)
        vs[(group, "task")][r["step"]].append(r["task"])
        vs[(group, "joint")][r["step"]].append(r["joint"])
    for (group, metric), pts in sorted(vs.items()):
        steps = sorted(pts)
        ax.plot(steps, [100 * sum(pts[s]) / len(pts[s]) for s in steps], "o-", label=f"{metric} ({group})")
    ax.set_title("validation success (%), seen layout")
    ax.set_xlabel("transitions per run")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = run_dir / "report.png"
    fig.savefig(path, dpi=110)
    out.append(path)
    return out


def report(run_dir) -> str:
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise ValueError(f"run directory {str(run_dir)!r} does not exist")
    cfg = json.loads((run_dir / "config.json").read_text())
    text = []
    res_path = run_dir / "results.json"
    if res_path.exists():
        res = json.loads(res_path.read_text())
        text.append(format_results(res["results"], cfg["arch"]))
        text.append(f"training wall time: {res['train_seconds']:.0f} s for {res['n_runs']} runs "
                    f"x {cfg['total_steps']:,} transitions")
    else:
        text.append("no results.json yet (training not finished)")
    for p in figures(run_dir):
        text.append(f"wrote {p}")
    return "\n".join(text)
