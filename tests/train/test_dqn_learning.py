"""Learning works (slow tier): a DQN-MLP learns to avoid the sanctions of a timing norm,
in every seed of a population.

With the sparse penalty under even_turns_only, moving on odd turns costs -20; a policy
that has learned something moves on even turns only or waits.  Eight seeds train as one
population (20k transitions each).  The test asserts on what was learned (each seed's
sanction rate falls several-fold from the first 5k transitions to the last, and its
reward per step rises), never on time.  High *task* success on an easy task is shown
by `test_dqn_task_learning.py`.

Where the bounds come from: 16 seeds (seeds_per_norm=16, 2-core AMD EPYC VM, JAX 0.10.2
CPU) gave sanctions per step 0.206 / 0.214 / 0.228 (min / median / max) over the first
5k transitions and 0.015 / 0.018 / 0.024 over the last; last / first 0.072 / 0.086 /
0.109 (so the earlier single-run bound of 1/10 would have failed one seed in 16); the
rise in reward per step 3.87 / 4.01 / 4.35.  With the factorised first layer
(`python -m benchmarks.experiments.learning_bounds --tests sanctions`, 2026-12-06, same machine kind):
0.206 / 0.214 / 0.228, 0.015 / 0.018 / 0.024, 0.072 / 0.085 / 0.107 and 3.87 / 4.01 /
4.35.  The bounds below leave a wide margin on each side.
"""

from __future__ import annotations

import json

import pytest

from normjax.train.config import load_config
from normjax.train.run import train_population

AVOID = load_config("test_learning_sanctions")  # configs/test_learning_sanctions.json
SEEDS = AVOID.seeds_per_norm


@pytest.mark.training
def test_dqn_learns_to_avoid_sanctions(tmp_path):
    train_population(AVOID, tmp_path, progress=False, final_test=False, log=lambda *_: None)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    by_seed = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(r)
    assert sorted(by_seed) == list(range(SEEDS)), rows
    for seed, runs in by_seed.items():
        first, last = runs[0], runs[-1]
        assert first["sanctions_per_step"] > 0.1, (seed, first)
        assert last["sanctions_per_step"] < 0.25 * first["sanctions_per_step"], (seed, first, last)
        assert last["reward_per_step"] > first["reward_per_step"] + 2.0, (seed, first, last)
