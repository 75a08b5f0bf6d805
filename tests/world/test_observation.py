"""docs/world.md §10.3 other-agent slots ("active" vs "slot used") and the
task-completed flag of `observe(..., slot=i)`, on hand-built states."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.world.observation import N_OTHER, N_VEC, observe
from normjax.world.state import WorldConfig, make_params
from tests.support.world_helpers import RESET, blank, params, put

OBS = jax.jit(observe, static_argnames="slot")
OBS_TRACED = jax.jit(observe)  # slot traced, as the PettingZoo wrapper vmaps it


def _others(o):
    v = np.asarray(o.vector)
    return v[N_VEC : N_VEC + N_OTHER * 9].reshape(9, N_OTHER)


def test_active_and_slot_used_differ_for_an_agent_waiting_to_enter():
    p = params(0, -1, max_steps=100)
    s = put(blank(), 0, (5, 5), goal=(1, 7))
    s = put(s, 4, (5, 9), group=1)  # on the grid, 4 away
    s = put(s, 2, (5, 6), group=2, sanctioned=True)  # on the grid, 1 away
    s = put(s, 7, (3, 3), active=False, spawn_t=5, entry_door=0)  # waiting outside a door
    rows = _others(OBS(s, p))
    # Nearest first: slot 2, slot 4, then the waiting agent, then the 6 unused slots.
    assert rows[0].tolist() == pytest.approx([0, 1 / 15, 0, 1 / 15, 1.0, 1, 1, 1])
    assert rows[1].tolist() == pytest.approx([0, 4 / 15, 0, 4 / 15, 2 / 3, 1, 0, 1])
    assert rows[2].tolist() == [0, 0, 0, 0, 0, 0, 0, 1]  # slot used, not active, no position
    assert not rows[3:].any()


def test_waiting_agents_sort_before_unused_slots():
    p = params(0, -1)
    s = put(blank(), 0, (5, 5))
    s = put(s, 8, (0, 0), active=False, spawn_t=3)
    s = put(s, 3, (5, 4))
    rows = _others(OBS(s, p))
    assert rows[0, 5] == 1 and rows[0, 7] == 1
    assert rows[1, 5] == 0 and rows[1, 7] == 1
    assert not rows[2:].any()


def test_reset_state_marks_every_slot_in_use():
    p = make_params(0, 5)
    s = RESET(jax.random.PRNGKey(3), p, WorldConfig())
    rows = _others(OBS(s, p))
    ag = jax.tree.map(np.asarray, s.agents)
    assert rows[:, 5].sum() == ag.active[1:].sum()
    assert rows[:, 7].sum() == ag.in_use[1:].sum()
    assert ag.in_use[1:].sum() > ag.active[1:].sum()  # staggered entry: some still wait
    assert (rows[:, 7] >= rows[:, 5]).all()  # on the grid implies in use


def test_task_completed_flag_is_the_observed_slots_own():
    p = params(0, -1)
    s = put(blank(), 0, (0, 0), active=False, steps=9)  # the newcomer has left
    s = s.replace(newcomer_done=jnp.bool_(True), agents=s.agents.replace(in_use=s.agents.in_use.at[0].set(False)))
    s = put(s, 3, (5, 5), steps=4)  # on the grid
    s = put(s, 5, (0, 0), active=False, steps=6, spawn_t=9)  # left; its successor waits
    s = put(s, 6, (0, 0), active=False, steps=0, spawn_t=2)  # not entered yet
    flag = lambda o: float(np.asarray(o.vector)[7])
    assert flag(OBS(s, p, slot=0)) == 1.0
    assert flag(OBS(s, p, slot=3)) == 0.0  # used to copy slot 0's newcomer_done
    assert flag(OBS(s, p, slot=5)) == 1.0
    assert flag(OBS(s, p, slot=6)) == 0.0
    for slot, want in ((0, 1.0), (3, 0.0), (5, 1.0), (6, 0.0)):
        assert flag(OBS_TRACED(s, p, jnp.int32(slot))) == want
    s2 = s.replace(newcomer_done=jnp.bool_(False))
    assert flag(OBS(s2, p, slot=0)) == 0.0 and flag(OBS(s2, p, slot=5)) == 1.0
