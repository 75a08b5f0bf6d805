"""The Python loop a user would otherwise write for fine-tuning labels, for comparison
with `normjax.finetune.harvest` (benchmarks/finetune_throughput.py).

One interaction-phase episode on the cafe at a time: `env.reset`, then 200 calls of the
jitted `env.step` with the jitted oracle policy as newcomer, each step's public
sanctions read back to the host as the judgment labels (`info.sanctioned`: less than the
harvest records, which also hold the newcomer's tie set and five replayed actions).
Compilation is excluded (one warm-up episode).

    python -m benchmarks.experiments.finetune_loop_baseline --episodes 4    # about 2 minutes on 2 cores

Results: benchmarks/experiments/results/finetune_loop_baseline.json.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import normjax
from benchmarks.common import save_experiment
from normjax.env import oracle_policy

STEPS = 200


def episode(env, policy, seed: int) -> int:
    key = jax.random.PRNGKey(seed)
    key, k = jax.random.split(key)
    _, state = env.reset(k)
    labels = []
    for _ in range(STEPS):
        key, k_pol, k_step = jax.random.split(key, 3)
        action = policy(k_pol, state, env.default_params)
        _, state, _, _, _, info = env.step(k_step, state, action)
        labels.append(np.asarray(info.sanctioned))  # the host needs every step's labels
    return len(labels)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--norm", default="forbidden_zone_q")
    args = ap.parse_args()
    env = normjax.make(layout="cafe", norm=args.norm, phase="interaction")
    policy = jax.jit(oracle_policy)
    t0 = time.perf_counter()
    episode(env, policy, 0)  # compiles
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    steps = sum(episode(env, policy, s) for s in range(1, args.episodes + 1))
    wall = time.perf_counter() - t0
    payload = dict(
        norm=args.norm,
        episodes=args.episodes,
        steps=steps,
        wall_s=round(wall, 3),
        steps_per_s=round(steps / wall, 1),
        first_episode_s=round(warm, 2),
    )
    print(payload)
    print("wrote", save_experiment("finetune_loop_baseline", payload))


if __name__ == "__main__":
    main()
