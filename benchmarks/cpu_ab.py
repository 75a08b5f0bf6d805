"""A/B of the full step's CPU time between two checkouts of this repository.

How each speed change in docs/speed.md was measured: process CPU time per
env-step of the full step (`env_throughput.make_rollout`, 20 steps, batch
4,096, the 50 norms mixed), on one pinned core (`taskset -c 1`, so other work
on the machine disturbs it less), processes of A and B interleaved
(`--repeats`, 3), each timing `--runs` (10) runs; the least of all is kept.
On a quiet machine differences under about 3% are within the noise; on a
busy one the same code varied by 40% between processes, so compare A with A
first (`cpu_ab.py X X`) when in doubt.

    git worktree add --detach /tmp/base <commit>
    python -m benchmarks.cpu_ab /tmp/base .            # B/A - 1 in percent
    python -m benchmarks.cpu_ab /tmp/base . --static   # the single-layout path
    python -m benchmarks.cpu_ab /tmp/base . --world    # the world step alone

Each run is a fresh process that imports normjax from the checkout it times.
Results: benchmarks/results/cpu_ab.json (cpu_ab_static.json with --static,
cpu_ab_world.json with --world).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.common import save

ROOT = Path(__file__).resolve().parents[1]

# One timing in a fresh process, run from the checkout under test.
ONE_RUN = """
import sys, time
import jax
import normjax
assert normjax.__file__.startswith({repo!r}), normjax.__file__
getattr(normjax, "configure", lambda: None)()  # as the CLI (older checkouts applied it on import)
from benchmarks.env_throughput import make_rollout, batch_params, batch_reset
from benchmarks.common import block
if {world}:  # the world step alone under random joint actions (public API only)
    from normjax.world.step import step_world

    def make_rollout(n):
        def one_env(key, state, params):
            def body(c, _):
                state, key = c
                key, ka, ks = jax.random.split(key, 3)
                actions = jax.random.randint(ka, (state.agents.active.shape[0],), 0, 5)
                return (step_world(ks, state, actions, params)[0], key), None
            return jax.lax.scan(body, (state, key), None, length=n)[0][0]  # the whole final state
        return jax.jit(jax.vmap(one_env))
batch, n = {batch}, 20
params = batch_params(batch, {static})
state = block(batch_reset(jax.random.split(jax.random.PRNGKey(0), batch), params))
keys = jax.random.split(jax.random.PRNGKey(1), batch)
run = make_rollout(n).lower(keys, state, params).compile()
block(run(keys, state, params))
best = 1e9
for _ in range({runs}):
    t0 = time.process_time(); block(run(keys, state, params)); best = min(best, time.process_time() - t0)
print(1e6 * best / (batch * n))
"""


def cpu_us(repo: Path, batch: int, static: bool, runs: int, world: bool = False) -> float:
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") else []
    code = ONE_RUN.format(repo=str(repo), batch=batch, static=static, runs=runs, world=world)
    out = subprocess.run(pin + [sys.executable, "-c", code], capture_output=True, text=True, cwd=repo)
    if out.returncode != 0:
        raise RuntimeError(f"timing {repo} failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="checkout A (the baseline)")
    ap.add_argument("b", type=Path, help="checkout B (the change)")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs of each")
    ap.add_argument("--runs", type=int, default=10, help="timed runs in each process (the least is kept)")
    ap.add_argument("--static", action="store_true", help="the single-layout path")
    ap.add_argument("--world", action="store_true", help="the world step alone (`step_world`, random joint actions)")
    args = ap.parse_args(argv)
    for repo in (args.a, args.b):
        if not (repo / "normjax" / "__init__.py").exists():
            raise SystemExit(f"cpu_ab: {repo} is not a checkout of this repository (no normjax/__init__.py)")
    a, b = args.a.resolve(), args.b.resolve()
    runs = {"a": [], "b": []}
    for _ in range(args.repeats):
        for name, repo in (("a", a), ("b", b)):
            runs[name].append(cpu_us(repo, args.batch, args.static, args.runs, args.world))
            print(f"{name} {repo}: {runs[name][-1]:.2f} CPU-us/env-step", flush=True)
    change = 100 * (min(runs["b"]) / min(runs["a"]) - 1)
    print(
        f"A {min(runs['a']):.2f}, B {min(runs['b']):.2f} CPU-us/env-step (least of {args.repeats} x {args.runs}): B/A - 1 = {change:+.1f}%"
    )
    name = "cpu_ab" + ("_world" if args.world else "") + ("_static" if args.static else "")
    path = save(
        name,
        {
            "a": str(a),
            "b": str(b),
            "batch": args.batch,
            "static_layout": args.static,
            "program": "world step" if args.world else "full step",
            "runs": args.runs,
            "cpu_us_per_env_step": runs,
            "change_percent": change,
        },
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
