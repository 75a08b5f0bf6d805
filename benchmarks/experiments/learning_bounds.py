"""Seed distributions behind the learning tests' bounds (slow tier).

tests/train/test_dqn_learning.py and tests/train/test_dqn_task_learning.py assert that learning
happens in every seed of an 8-seed population, with bounds set well below what a
16-seed population shows.  This script trains those two populations at 16 seeds
with the tests' own configs and prints (and saves, benchmarks/experiments/results/
learning_bounds_<first layer>.json) the min / median / max of every quantity the tests bound, so
the docstrings' numbers can be re-measured after any change to training:

    python -m benchmarks.experiments.learning_bounds                    # both, 16 seeds
    python -m benchmarks.experiments.learning_bounds --tests sanctions --first-layer dense
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import save_experiment
from normjax.interop.export import read_jsonl
from normjax.train.config import FIRST_LAYERS, load_config
from normjax.train.run import train_population


def _spread(values) -> dict:
    v = np.asarray(list(values), float)
    return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}


def sanctions(seeds: int, first_layer: str) -> dict:
    """tests/train/test_dqn_learning.py: sanctions and reward per step, first block vs last."""
    cfg = dataclasses.replace(load_config("test_learning_sanctions"), seeds_per_norm=seeds, first_layer=first_layer)
    with tempfile.TemporaryDirectory() as out:
        train_population(cfg, out, progress=False, final_test=False, log=lambda *_: None)
        rows = read_jsonl(Path(out) / "metrics.jsonl")
    by_seed: dict = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(r)
    first = {s: r[0] for s, r in by_seed.items()}
    last = {s: r[-1] for s, r in by_seed.items()}
    return {
        "sanctions_first": _spread(r["sanctions_per_step"] for r in first.values()),
        "sanctions_last": _spread(r["sanctions_per_step"] for r in last.values()),
        "last_over_first_per_seed": [
            round(last[s]["sanctions_per_step"] / first[s]["sanctions_per_step"], 4) for s in sorted(first)
        ],
        "last_over_first": _spread(last[s]["sanctions_per_step"] / first[s]["sanctions_per_step"] for s in first),
        "reward_rise": _spread(last[s]["reward_per_step"] - first[s]["reward_per_step"] for s in first),
    }


def task(seeds: int, first_layer: str) -> dict:
    """tests/train/test_dqn_task_learning.py: task success at 1k and 40k, gains, goals per episode."""
    cfg = dataclasses.replace(load_config("test_learning_task"), seeds_per_norm=seeds, first_layer=first_layer)
    with tempfile.TemporaryDirectory() as out:
        train_population(cfg, out, progress=False, final_test=False, log=lambda *_: None)
        rows = [r for r in read_jsonl(Path(out) / "validation.jsonl") if r["layout"] == "cafe"]
        metrics = read_jsonl(Path(out) / "metrics.jsonl")
    before = {r["run"]: r["task"] for r in rows if r["step"] == 1_000}
    after = {r["run"]: r["task"] for r in rows if r["step"] == 40_000}
    last = {m["seed"]: m for m in metrics}
    groups = [float(np.median([after[k] for k in sorted(after)[i : i + 8]])) for i in range(0, len(after), 8)]
    return {
        "task_at_1k": _spread(before.values()),
        "task_at_40k": _spread(after.values()),
        "gain": _spread(after[k] - before[k] for k in before),
        "gain_per_seed": [round(after[k] - before[k], 4) for k in sorted(before)],
        "median_at_40k_per_8_seeds": groups,
        "goals_per_episode_last": _spread(m["goals_per_step"] * cfg.episode_steps for m in last.values()),
    }


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", nargs="+", default=["sanctions", "task"], choices=["sanctions", "task"])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--first-layer", default="factorised", choices=FIRST_LAYERS)
    args = ap.parse_args(argv)
    out = {"seeds": args.seeds, "first_layer": args.first_layer}
    for name in args.tests:
        t0 = time.perf_counter()
        out[name] = {
            "first_layer": args.first_layer,
            **{"sanctions": sanctions, "task": task}[name](args.seeds, args.first_layer),
            "seconds": time.perf_counter() - t0,
        }
        print(name, json.dumps(out[name], indent=1), flush=True)
    print("saved", save_experiment(f"learning_bounds_{args.first_layer}", out))


if __name__ == "__main__":
    main()
