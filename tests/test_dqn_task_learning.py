"""Learning works: on an easy task a small DQN-MLP reaches high task success.

The easy task: norm forbidden_zone_q on the cafe with 6 agents and the
`dense` reward condition (docs/world.md §6: +-6 for moves that shorten or lengthen the
BFS distance to the current goal), 40k transitions, Adam 1e-3 and target
copies every 1,000 steps (faster than docs/world.md §10's defaults, which need ~1M
transitions).  Two seeds train as one population.  Success is measured the
way validation measures it: the greedy policy on 12 held-out seen-layout
test episodes per run (protocol seeds 101-104, never trained on).

The test asserts on what was learned, never on time: at learning start the
greedy policy completes almost nothing; after training the runs complete
most of their tasks.  It fails when learning is broken (checked with
learning_rate=1e-9: task success stays at 0).
"""

from __future__ import annotations

import json

import numpy as np

from train.config import DQNConfig
from train.run import train_population

EASY = DQNConfig(
    norms=("forbidden_zone_q",), reward_conditions=("dense",), seeds_per_norm=2, capacity=6,
    total_steps=40_000, buffer_size=10_000, learning_starts=1_000, target_update=1_000,
    learning_rate=1e-3, validation_at=(1_000, 40_000),
)


def test_dqn_reaches_high_task_success_on_an_easy_task(tmp_path):
    train_population(EASY, tmp_path, progress=False, final_test=False, log=lambda *_: None)
    rows = [json.loads(x) for x in (tmp_path / "validation.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["layout"] == "cafe"]  # the seen layout (the modified cafes are diagnostics)
    by_step = {s: [r["task"] for r in rows if r["step"] == s] for s in EASY.validation_at}
    assert len(by_step[1_000]) == len(by_step[40_000]) == 2, rows
    assert np.mean(by_step[1_000]) <= 0.25, by_step  # untrained: hardly any goal reached
    # High task success: 0.96 on average for seed 0 (1.0 and 0.92); seeds 1 and 2 reach 0.83
    # (1.0 and 0.67), so the bounds leave room for other float rounding on other CPUs.
    assert np.mean(by_step[40_000]) >= 0.75, by_step
    assert min(by_step[40_000]) >= 0.5, by_step
    # Training episodes agree: the newcomer completes several tasks per episode (with turnover).
    metrics = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["goals_per_step"] * EASY.episode_steps >= 4.0, metrics[-1]
