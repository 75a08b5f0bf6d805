"""How much the full step could gain from a cheaper goal choice: an upper bound.

Issue 37 asks whether redesigning the community planner's goal choice (for
example goals kept across steps, re-evaluated only when what they depend on
changes) can bring the full step to 0.3x XLand-MiniGrid Empty-8x8.  Any such
redesign still pays something per step; this script times the step with the
goal choice costing nothing at all: `choose_goals` replaced by the agent's
specified goal-1 cell (cell 0 for a free choice), read in one gather.  The
ratio of the real step to that one bounds what any goal-choice redesign can
gain.

Programs, on the states of a recorded rollout (`stage_breakdown.record`: batch
B, train-phase params on the cafe, the 50 norms mixed, the single-layout path),
each `jit(scan over the T states of vmap(stage))`:

* planner            `community_actions`
* planner_free_goal  the same with the free goal choice
* full_step          `env_step` (planner + world step + observation)
* full_free_goal     the same with the free goal choice

Each is compiled once; then `--rounds` rounds time every program once
(process CPU time, best of three after a warm-up), interleaved, so a slowdown
of the shared machine hits them alike.  Run it on one pinned core for steadier
numbers:

    taskset -c 1 python -m benchmarks.experiments.planner_bound --batch 4096 --rounds 5

Results: benchmarks/experiments/results/planner_bound.json (per-round times, the minimum
and median per program, and per round full_step / full_free_goal).
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import jax.numpy as jnp

from benchmarks.common import best_of, compile_timed, save_experiment
from benchmarks.stage_breakdown import STAGES, record, stage_program
from normjax import constants as C
from normjax.community import planner
from normjax.layouts.geometry import flat_index


def free_goal(seed, lt, ctx, state, norm_id, aware, dist):
    """`choose_goals`' signature at no cost: the specified goal-1 cell (0 for a free choice)."""
    return jnp.clip(flat_index(state.agents.goal_cell), 0, C.N_CELLS - 1).astype(jnp.int32)


PROGRAMS = {  # name: (stage, goal choice replaced)
    "planner": ("planner", False),
    "planner_free_goal": ("planner", True),
    "full_step": ("full_step", False),
    "full_free_goal": ("full_step", True),
}


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--name", default="planner_bound")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.batch < 1 or args.steps < 1:
        raise SystemExit(f"--rounds, --batch and --steps must be >= 1 (got {args.rounds}, {args.batch}, {args.steps})")
    states, joints, keys, params = record(args.batch, args.steps)
    inputs = (states, joints, keys, params)
    n = args.batch * args.steps
    compiled, compile_s = {}, {}
    for name, (stage, free) in PROGRAMS.items():
        # The planner reads `choose_goals` from its module when it is traced.
        with mock.patch.object(planner, "choose_goals", free_goal if free else planner.choose_goals):
            compiled[name], compile_s[name] = compile_timed(stage_program(STAGES[stage]), *inputs)
    times = {name: [] for name in PROGRAMS}
    for r in range(args.rounds):
        for name, exe in compiled.items():
            run_s, _ = best_of(exe, *inputs, repeats=3, clock=time.process_time)
            times[name].append(round(1e6 * run_s / n, 3))
        print(f"round {r}: " + "  ".join(f"{k} {v[-1]:.2f}" for k, v in times.items()), flush=True)
    ratios = [round(a / b, 3) for a, b in zip(times["full_step"], times["full_free_goal"])]
    summary = {name: {"min": min(v), "median": statistics.median(v)} for name, v in times.items()}
    print(
        "CPU-us per env-step (min / median):",
        ", ".join(f"{k} {s['min']:.2f} / {s['median']:.2f}" for k, s in summary.items()),
    )
    print(
        f"full_step / full_free_goal per round: {ratios} (median {statistics.median(ratios):.3f}; "
        f"of the minima {summary['full_step']['min'] / summary['full_free_goal']['min']:.3f})"
    )
    path = save_experiment(
        args.name,
        {
            "what": __doc__.split("\n\n")[0],
            "batch": args.batch,
            "steps": args.steps,
            "rounds": args.rounds,
            "cpu_us_per_env_step": times,
            "summary": summary,
            "full_over_free_goal_per_round": ratios,
            "compile_s": {k: round(v, 2) for k, v in compile_s.items()},
        },
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
