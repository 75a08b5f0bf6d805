"""Two training runs of the same population, compared run by run (e.g. a stored result
re-run on changed training code).

For each run (norm, reward condition, seed) of the population: the training metrics
averaged over the last `--last-blocks` blocks of `metrics.jsonl`, and the last
validation point's task and joint success over all validation layouts
(`validation.jsonl`, 36 episodes per run).  Per quantity it prints the two
populations' means, the mean of the paired differences (B - A), its standard error
across runs, and the across-run standard deviation of A, and says whether the mean
difference lies within two standard errors of zero:

    python -m benchmarks.compare_runs results/cpu_paper_mlp_1m/sparse_penalty/part0 \\
        runs/cpu_paper_mlp_1m_factorised/sparse_penalty/part0

Results: benchmarks/results/compare_runs.json (or --name).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import save
from normjax.interop.export import read_jsonl

TRAINING = (
    "reward_per_step",
    "sanctions_per_step",
    "collisions_per_step",
    "goals_per_step",
    "wait_share",
    "td_loss",
    "q_mean",
)
KEY = ("arch", "norm", "reward_condition", "seed")


def per_run(run_dir: Path, last_blocks: int) -> dict[tuple, dict]:
    """{(arch, norm, reward_condition, seed): {quantity: value}} of one run directory."""
    out: dict[tuple, dict] = {}
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    steps = sorted({m["step"] for m in metrics})
    if len(steps) < last_blocks:
        raise ValueError(f"{run_dir}: {len(steps)} blocks in metrics.jsonl, fewer than --last-blocks={last_blocks}")
    tail = set(steps[-last_blocks:])
    key_of = {m["run"]: tuple(m[k] for k in KEY) for m in metrics}  # validation rows name the run by index
    for m in metrics:
        if m["step"] in tail:
            row = out.setdefault(tuple(m[k] for k in KEY), {q: [] for q in TRAINING})
            for q in TRAINING:
                row[q].append(m[q])
    out = {k: {q: float(np.mean(v)) for q, v in row.items()} for k, row in out.items()}
    val = [v for v in read_jsonl(run_dir / "validation.jsonl") if v.get("layout") == "all"]
    final = max(v["step"] for v in val)
    for v in val:
        if v["step"] == final:
            out[key_of[v["run"]]].update(val_task=v["task"], val_joint=v["joint"], val_step=final)
    return out


def compare(a: dict, b: dict) -> dict:
    if sorted(a) != sorted(b):
        raise ValueError(f"the two runs hold different populations: {sorted(set(a) ^ set(b))[:5]}")
    keys = sorted(a)
    quantities = [q for q in a[keys[0]] if q != "val_step"]
    table = {}
    for q in quantities:
        x = np.array([a[k][q] for k in keys])
        y = np.array([b[k][q] for k in keys])
        d = y - x
        se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
        table[q] = {
            "mean_a": float(x.mean()),
            "mean_b": float(y.mean()),
            "mean_diff": float(d.mean()),
            "se_diff": se,
            "sd_across_runs_a": float(x.std(ddof=1)) if len(x) > 1 else float("nan"),
            "within_2se": bool(abs(d.mean()) <= 2 * se),
            "per_run_a": x.tolist(),
            "per_run_b": y.tolist(),
        }
    return {"runs": [dict(zip(KEY, k)) for k in keys], "quantities": table}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="run directory A (e.g. the stored result)")
    ap.add_argument("b", type=Path, help="run directory B (e.g. the re-run)")
    ap.add_argument("--last-blocks", type=int, default=5, help="training blocks averaged at the end (default 5)")
    ap.add_argument("--name", default="compare_runs", help="result file name in benchmarks/results/")
    args = ap.parse_args(argv)
    result = compare(per_run(args.a, args.last_blocks), per_run(args.b, args.last_blocks))
    print(f"{len(result['runs'])} runs; A = {args.a}, B = {args.b}")
    print(f"{'quantity':22s} {'mean A':>9s} {'mean B':>9s} {'B - A':>9s} {'SE':>8s} {'SD(A)':>8s}  within 2 SE")
    for q, r in result["quantities"].items():
        print(
            f"{q:22s} {r['mean_a']:9.4f} {r['mean_b']:9.4f} {r['mean_diff']:+9.4f} {r['se_diff']:8.4f} "
            f"{r['sd_across_runs_a']:8.4f}  {'yes' if r['within_2se'] else 'NO'}"
        )
    print("saved", save(args.name, {"a": str(args.a), "b": str(args.b), "last_blocks": args.last_blocks, **result}))


if __name__ == "__main__":
    main()
