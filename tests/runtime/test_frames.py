"""The frames a VLM newcomer sees show nothing the community cannot see: with
distractor habits on, a frame equals the frame of the same state with every
habit cleared (no habit badge), while the researcher's renderer still draws them."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.runtime import batch
from normjax.runtime.runner import interaction_episodes, protocol_test_episodes


def _frames_equal_without_habits(specs, steps):
    states, params, _, _ = batch.init_stage(specs, 10, steps, C.HABIT_NAMES.index("move1_wait1"), 1.0)
    rows = np.arange(len(specs))
    ag = states.agents
    shown = np.asarray(ag.active & (ag.habit > 0))[rows]
    assert shown.any()  # habit agents are on the grid in these frames
    cleared = states.replace(agents=ag.replace(habit=jnp.zeros_like(ag.habit)))
    np.testing.assert_array_equal(batch.render(states, params, rows), batch.render(cleared, params, rows))


def test_vlm_frames_show_no_habit_in_either_stage():
    _frames_equal_without_habits(interaction_episodes([0, 12]), 8)
    _frames_equal_without_habits(protocol_test_episodes([39]), 100)  # queue scenarios start with agents on the grid
