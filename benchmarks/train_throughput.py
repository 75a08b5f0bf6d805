"""Training throughput of the in-graph DQN population (issue 5).

Transitions per second for the 50-norm population (one run per norm, one
reward condition), DQN-MLP and DQN-CNN, each measured over a compiled block of
chunks after a warm-up block; compile time reported separately.  Every
transition includes the scripted community, the world step with norms, the
newcomer's observation, epsilon-greedy action selection, replay writes, and
one gradient update per 4 transitions (SPEC 10).

    python benchmarks/train_throughput.py                 # mlp and cnn, 50 runs
    python benchmarks/train_throughput.py --archs mlp --chunks 200
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import save  # noqa: E402
from train.config import DQNConfig  # noqa: E402
from train.dqn import make_train  # noqa: E402


def measure(arch: str, chunks: int, buffer_size: int, runs_norms: int):
    cfg = DQNConfig(arch=arch, norms=("all",) if runs_norms == 50 else tuple(
        __import__("normjax").NORMS[i].name for i in range(runs_norms)),
        total_steps=1_000_000, buffer_size=buffer_size, learning_starts=0)
    tr = make_train(cfg)
    carry = tr.init_population(jax.random.PRNGKey(0))
    fn = jax.jit(lambda c, s: tr.run_chunks(c, s, chunks), donate_argnums=0)
    t0 = time.perf_counter()
    compiled = fn.lower(carry, tr.specs).compile()
    compile_s = time.perf_counter() - t0
    carry = jax.block_until_ready(compiled(carry, tr.specs))  # warm-up block
    t0 = time.perf_counter()
    carry = jax.block_until_ready(compiled(carry, tr.specs))
    run_s = time.perf_counter() - t0
    n_runs = len(tr.rows)
    transitions = n_runs * chunks * cfg.train_freq
    return dict(arch=arch, runs=n_runs, chunks=chunks, transitions=transitions, run_s=run_s,
                compile_s=compile_s, transitions_per_s=transitions / run_s,
                projected_minutes_for_1M_each=n_runs * 1_000_000 / (transitions / run_s) / 60)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archs", nargs="+", default=["mlp", "cnn"])
    ap.add_argument("--chunks", type=int, default=250, help="chunks (4 transitions per run) per timed block")
    ap.add_argument("--buffer-size", type=int, default=10_000)
    ap.add_argument("--norms", type=int, default=50, help="population size (first N norms)")
    args = ap.parse_args(argv)
    rows = []
    for arch in args.archs:
        chunks = args.chunks if arch == "mlp" else max(args.chunks // 5, 10)
        r = measure(arch, chunks, args.buffer_size, args.norms)
        rows.append(r)
        print(f"{arch}: {r['transitions_per_s']:,.0f} transitions/s for {r['runs']} runs "
              f"(compile {r['compile_s']:.1f}s); 1M each would take {r['projected_minutes_for_1M_each']:.0f} min",
              flush=True)
    print(f"saved {save('train_throughput', {'rows': rows})}")


if __name__ == "__main__":
    main()
