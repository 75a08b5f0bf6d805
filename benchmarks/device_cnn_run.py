"""A DQN-CNN population run at the largest budget that fits a short time on one machine.

Reads the DQN-CNN throughput that `train_throughput.py` measured for the same
population (transitions/s of all runs together, compile excluded), picks the
largest per-run budget whose training loop fits the target wall time once the
run's fixed costs are set aside (compiles, probe collection, validation, final
tests, figures), and trains it with `normjax train` on the paper's hyperparameters
(`configs/paper_cnn_sparse_penalty.json`, K = 10, the budget's own replay size and
validation point).  No checkpoints are written.  Afterwards the run's logs, final
tests and figures are packed into one .tar.gz and the budget into a small JSON:

    python -m benchmarks.device_cnn_run --throughput benchmarks/results/train_throughput.json \\
        --run-dir /tmp/cnn_run --tar cnn_run.tar.gz --budget-json cnn_budget.json

Budget: total_steps = rate x (target - overhead) / runs, rounded down to a multiple of
`--round` (10,000: the trainer's block of the paper configs), at least `--min-steps` and
at most `--max-steps` (the paper's 1,000,000); overhead = `--overhead` seconds, else
30 + 3 x the measured compile time.
`--steps N` fixes the budget instead (a self-check on a CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The run's small files: logs, final tests, figures (never checkpoints or the probe set).
PACKED = (
    "config.json",
    "population.json",
    "metrics.jsonl",
    "probes.jsonl",
    "validation.jsonl",
    "results.json",
    "timing.json",
)


def throughput_row(path: Path, runs: int) -> dict | None:
    """The DQN-CNN row of `path` for a population of `runs` runs (None if absent)."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    rows = [
        r
        for r in data.get("rows", [])
        if r.get("arch") == "cnn" and r.get("runs") == runs and r.get("transitions_per_s")
    ]
    if not rows:
        return None
    return {**rows[-1], "machine": data.get("machine")}


def choose_budget(
    rate: float,
    runs: int,
    target_s: float,
    overhead_s: float,
    round_to: int,
    min_steps: int,
    max_steps: int = 1_000_000,
) -> int:
    """Per-run transitions whose training loop takes about target_s - overhead_s at `rate` (all runs),
    a multiple of `round_to` in [min_steps, max_steps] (the paper's budget is the most worth running)."""
    train_s = max(target_s - overhead_s, 0.0)
    steps = int(rate * train_s / runs) // round_to * round_to
    return min(max(steps, min_steps), max_steps)


def pack(run_dir: Path, tar_path: Path) -> list[str]:
    names = [p for p in sorted(run_dir.iterdir()) if p.name in PACKED or p.suffix == ".png"]
    tmp = tar_path.with_name(tar_path.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for p in names:
            tar.add(p, arcname=f"cnn_run/{p.name}")
    tmp.replace(tar_path)
    return [p.name for p in names]


def summary(run_dir: Path) -> dict | None:
    path = run_dir / "results.json"
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    out = {}
    for arch, conds in res.get("results", {}).items():
        for cond, table in conds.items():
            out[f"{arch}/{cond}"] = {split: table.get(split, {}).get("overall") for split in ("seen", "unseen")}
    return out


def devices() -> dict:
    """The machine, asked after the run (this process must not hold the accelerator during it)."""
    try:
        import jax

        return {
            "devices": [str(d) for d in jax.devices()],
            "device_kind": jax.devices()[0].device_kind,
            "platform": jax.devices()[0].platform,
            "jax": jax.__version__,
        }
    except Exception as e:  # the budget file is still written
        return {"error": f"{type(e).__name__}: {e}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--throughput", type=Path, required=True, help="train_throughput.json with the DQN-CNN row")
    ap.add_argument("--norms", type=int, default=50, help="population: the first N norms (50: all)")
    ap.add_argument("--config", default="configs/paper_cnn_sparse_penalty.json")
    ap.add_argument("--target", type=float, default=180.0, help="wall seconds the whole run should take")
    ap.add_argument(
        "--overhead",
        type=float,
        default=None,
        help="seconds of the run outside its training loop (default: 30 + 3 x measured compile)",
    )
    ap.add_argument("--round", type=int, default=10_000, help="budget rounded down to a multiple of this")
    ap.add_argument("--min-steps", type=int, default=10_000)
    ap.add_argument("--max-steps", type=int, default=1_000_000, help="at most this budget (the paper's)")
    ap.add_argument("--steps", type=int, default=None, help="fixed per-run budget (skips the choice)")
    ap.add_argument("--timeout", type=float, default=None, help="kill the training run after this many seconds")
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--tar", type=Path, required=True, help="the .tar.gz of the run's small files")
    ap.add_argument("--budget-json", type=Path, required=True)
    ap.add_argument("extra", nargs="*", help="further key=value overrides for normjax train")
    args = ap.parse_args(argv)
    # The training run gets this environment; this process never holds the accelerator's memory.
    child_env = dict(os.environ)
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    from normjax.norms import NORM_NAMES

    runs = args.norms
    row = throughput_row(args.throughput, runs)
    if row is None and args.steps is None:
        print(f"no DQN-CNN throughput for {runs} runs in {args.throughput}: skipping the run", flush=True)
        return 3
    rate = row["transitions_per_s"] if row else None
    compile_s = row.get("compile_s") if row else None
    overhead = args.overhead if args.overhead is not None else 30.0 + 3.0 * (compile_s or 0.0)
    total = args.steps or choose_budget(rate, runs, args.target, overhead, args.round, args.min_steps, args.max_steps)
    buffer = min(100_000, total)
    overrides = [
        "capacity=10",
        f"total_steps={total}",
        f"buffer_size={buffer}",
        f"validation_at={total}",
        f"progress_every={min(10_000, total)}",
    ]
    if runs != 50:
        overrides.append("norms=" + ",".join(NORM_NAMES[:runs]))
    overrides += args.extra
    budget = {
        "what": "DQN-CNN at the largest budget that fits one short run: all runs of the population trained "
        "for total_steps transitions each with the paper's hyperparameters (sparse_penalty, K=10)",
        "config": args.config,
        "overrides": overrides,
        "runs": runs,
        "measured": None
        if row is None
        else {
            "transitions_per_s": rate,
            "compile_s": compile_s,
            "chunks": row.get("chunks"),
            "buffer_size": 10_000,
            "source": "benchmarks/train_throughput.py (same population, compile excluded)",
            "machine": row.get("machine"),
        },
        "target_s": args.target,
        "overhead_estimate_s": round(overhead, 1),
        "chosen": "fixed (--steps)" if args.steps else "adaptive",
        "total_steps": total,
        "buffer_size": buffer,
        "validation_at": [total],
        "total_transitions": total * runs,
        "expected_train_s": None if rate is None else round(total * runs / rate, 1),
    }
    print(
        f"DQN-CNN budget: {total:,} transitions per run x {runs} runs (measured {rate or float('nan'):,.0f} "
        f"transitions/s; target {args.target:.0f}s, overhead estimate {overhead:.0f}s)",
        flush=True,
    )
    args.budget_json.parent.mkdir(parents=True, exist_ok=True)
    args.budget_json.write_text(json.dumps({**budget, "status": "running"}, indent=2))

    args.run_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "normjax.cli",
        "train",
        "--config",
        str(ROOT / args.config),
        "--out",
        str(args.run_dir),
        "--no-progress",
        "--no-checkpoints",
        "--no-cache",
        *overrides,
    ]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    timed_out = False
    try:  # its output goes where this script's goes (the suite's log)
        rc = subprocess.run(cmd, cwd=ROOT, env=child_env, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:  # the child is killed
        timed_out, rc = True, None
    wall = time.perf_counter() - t0
    timing = args.run_dir / "timing.json"
    train_s = json.loads(timing.read_text())["train_seconds"] if timing.exists() else None
    budget.update(
        rc=rc,
        timed_out=timed_out,
        wall_s=round(wall, 1),
        train_seconds=None if train_s is None else round(train_s, 1),
        train_seconds_note="the trainer's own clock (timing.json): the training loop including the "
        "first block's compile, the per-block logs and the validation; wall_s adds "
        "start-up, probe collection, final tests and figures",
        train_loop_transitions_per_s=None if not train_s else round(total * runs / train_s, 1),
        final_tests=summary(args.run_dir),
        machine=devices(),
        status="timed out" if timed_out else ("ok" if rc == 0 else f"failed (rc {rc})"),
    )
    budget["packed"] = pack(args.run_dir, args.tar)
    args.budget_json.write_text(json.dumps(budget, indent=2))
    print(
        f"DQN-CNN run: {budget['status']}; {total:,} transitions x {runs} runs in {wall:.0f}s wall"
        + (f" ({train_s:.0f}s training loop)" if train_s else ""),
        flush=True,
    )
    return 0 if rc == 0 and not timed_out else 1


if __name__ == "__main__":
    sys.exit(main())
