"""Learning works (slow): a DQN-MLP learns to avoid the sanctions of a timing norm.

With the sparse penalty under even_turns_only, moving on odd turns costs -20;
a policy that has learned something moves on even turns only or waits.  The
test asserts on what was learned (the newcomer's sanction rate falls by an
order of magnitude and the reward per step rises), never on time.  High
*task* success on an easy task is shown by `test_dqn_task_learning.py`.
"""

from __future__ import annotations

import json

import pytest

from train.config import DQNConfig
from train.run import train_population


@pytest.mark.slow
def test_dqn_learns_to_avoid_sanctions(tmp_path):
    cfg = DQNConfig(norms=("even_turns_only",), reward_conditions=("sparse_penalty",),
                    total_steps=20_000, buffer_size=10_000, learning_starts=1_000,
                    target_update=2_000, validation_at=(5_000, 10_000, 15_000, 20_000))
    train_population(cfg, tmp_path, progress=False, final_test=False, log=lambda *_: None)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    first, last = rows[0], rows[-1]
    assert first["sanctions_per_step"] > 0.05, first
    assert last["sanctions_per_step"] < first["sanctions_per_step"] / 10, (first, last)
    assert last["reward_per_step"] > first["reward_per_step"] + 1.0, (first, last)
