"""World step (docs/world.md §2-6): invariants on random rollouts, tasks, rewards, entry."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.layouts.tables import host_tables, world_tables
from normjax.world.observation import obs_size, observe
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, WorldConfig, make_params
from normjax.world.step import reset_world, step_world
from tests.support.world_helpers import RESET, STEP, actions, blank, params, put

K = 10
U, D, L, R, W_ = C.UP, C.DOWN, C.LEFT, C.RIGHT, C.WAIT


def rollout(key, p, n_steps):
    """Random joint actions for n_steps; returns stacked (states, infos)."""

    def body(state, k):
        ka, ks = jax.random.split(k)
        a = jax.random.randint(ka, (K,), 0, C.N_ACTIONS)
        state, info = step_world(ks, state, a, p)
        return state, (state, info)

    state = reset_world(jax.random.fold_in(key, 7), p)
    _, (states, infos) = jax.lax.scan(body, state, jax.random.split(key, n_steps))
    return states, infos


ROLLOUT = jax.jit(rollout, static_argnums=2)
N_STEPS = 60
OBSERVE = jax.jit(observe)


def check_invariants(layout, states, infos):
    kind = host_tables()["kind"][layout]
    active = np.asarray(states.agents.active)
    pos = np.asarray(states.agents.pos)
    for t in range(active.shape[0]):
        cells = pos[t][active[t]]
        assert len({tuple(c) for c in cells}) == len(cells), f"shared cell at t={t}"
        k = kind[cells[:, 0], cells[:, 1]]
        assert np.all((k == C.FLOOR) | (k == C.CHAIR)), f"agent off walkable cells at t={t}"
    # A push is never sanctioned: sanctions depend on the intended move only,
    # and WAIT (including forced waits) is never sanctioned.
    waited = np.asarray(infos.action) == C.WAIT
    assert not np.any(np.asarray(infos.sanctioned) & waited)
    assert np.all(np.asarray(states.t) == np.arange(1, active.shape[0] + 1))


@settings(max_examples=12, deadline=None)
@given(layout=st.integers(0, 9), norm=st.integers(-1, 49), seed=st.integers(0, 2**30))
def test_random_rollouts_keep_invariants(layout, norm, seed):
    p = make_params(layout, norm)
    states, infos = ROLLOUT(jax.random.PRNGKey(seed), p, N_STEPS)
    check_invariants(layout, states, infos)


def test_fixed_key_replays_bit_for_bit():
    p = make_params(3, 12)
    a = ROLLOUT(jax.random.PRNGKey(5), p, N_STEPS)
    b = ROLLOUT(jax.random.PRNGKey(5), p, N_STEPS)
    chex.assert_trees_all_equal(a, b)
    c = ROLLOUT(jax.random.PRNGKey(6), p, N_STEPS)
    assert not np.array_equal(np.asarray(a[0].agents.pos), np.asarray(c[0].agents.pos))


# One batch mixing layouts, norms (none included) and reward conditions, rolled
# out under jit(vmap) and env by env with ROLLOUT: one program shared by the
# vmap == unbatched test and the mixed-reward test.
MIXED = [
    (0, 0, "sparse_penalty"),
    (4, 23, "no_penalty"),
    (7, 48, "dense"),
    (9, -1, "sparse_penalty"),
    (1, 30, "no_penalty"),
    (5, 12, "dense"),
]


@functools.cache
def _mixed_rollouts():
    ps = [make_params(lay, norm, reward_condition=c) for lay, norm, c in MIXED]
    keys = jax.random.split(jax.random.PRNGKey(3), len(ps))
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *ps)
    batched = jax.jit(jax.vmap(lambda k, p: rollout(k, p, N_STEPS)))(keys, stacked)
    return batched, [ROLLOUT(keys[i], p, N_STEPS) for i, p in enumerate(ps)]


def test_jit_vmap_step_equals_unbatched_step():
    """jit(vmap(step)) in a scan: every state and step record of every
    environment equals its unbatched rollout's, step by step."""
    batched, alone = _mixed_rollouts()
    for b, single in enumerate(alone):
        chex.assert_trees_all_equal(jax.tree.map(lambda x: x[b], batched), single)


def test_step_does_not_retrace_across_norms_and_layouts():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, a, p):
        return step_world(key, state, a, p)

    state = RESET(jax.random.PRNGKey(0), make_params(0, 0), WorldConfig())
    # Tracing goes through jit's trace cache, as a call does, without compiling.
    for layout, norm in [(0, 0), (1, 30), (5, -1), (9, 49)]:
        step.trace(jax.random.PRNGKey(1), state, actions(), make_params(layout, norm))


def test_reset_agents_enter_staggered_on_door_cells():
    p = make_params(0, -1)
    s = RESET(jax.random.PRNGKey(3), p, WorldConfig())
    inward = host_tables()["door_inward"][0]
    ag = jax.tree.map(np.asarray, s.agents)
    assert ag.active[0] and ag.in_use.sum() >= 6
    for i in np.flatnonzero(ag.active):
        assert any((ag.pos[i] == c).all() for c in inward)
    assert not np.any(ag.active & ~ag.in_use)


# --- Tasks (docs/world.md §5) on the cafe ------------------------------------------------
# cafe: service cell (1,7) below K at (0,7); dA (6,0) inward (6,1); dB (10,7)
# inward (9,7); dC (3,14) inward (3,13).


def test_goal1_service_wait_then_exit_through_specified_door():
    p = params(0, -1, replace_newcomer=False)
    s = put(blank(), 0, (2, 7), goal=(1, 7), exit_door=0)
    k = jax.random.PRNGKey(0)
    s, info = STEP(k, s, actions((0, U)), p)  # arrive at the service cell
    assert s.agents.pos[0].tolist() == [1, 7] and int(s.agents.leg[0]) == 0
    assert float(info.reward[0]) == pytest.approx(-0.1)
    rewards = []
    for _ in range(3):  # forced waits: even a move request is a WAIT
        s, info = STEP(k, s, actions((0, D)), p)
        assert int(info.action[0]) == C.WAIT and bool(info.forced_wait[0])
        rewards.append(float(info.reward[0]))
    assert rewards == pytest.approx([-0.1, -0.1, 9.9])
    assert int(s.agents.leg[0]) == 1 and int(s.agents.goals_done[0]) == 1
    # walk to dA: (1,7) -> (6,1) and out
    s = s.replace(agents=s.agents.replace(pos=s.agents.pos.at[0].set(jnp.array([6, 1]))))
    s, info = STEP(k, s, actions((0, L)), p)
    assert bool(info.exited[0]) and int(s.agents.goals_done[0]) == 2
    assert float(info.reward[0]) == pytest.approx(9.9)
    assert not bool(s.agents.active[0])


def test_exit_through_other_door_ends_task_with_goals_so_far():
    p = params(0, -1, replace_newcomer=False)
    s = put(blank(), 0, (6, 1), goal=(1, 7), exit_door=2, leg=1, goals_done=1)
    s, info = STEP(jax.random.PRNGKey(0), s, actions((0, L)), p)
    assert bool(info.exited[0]) and int(info.goals_completed[0]) == 0
    assert int(s.agents.goals_done[0]) == 1 and bool(s.newcomer_done)
    assert not bool(s.agents.in_use[0])  # not replaced in test episodes


def test_exit_during_goal1_scores_nothing():
    p = params(0, -1, replace_newcomer=False)
    s = put(blank(), 0, (6, 1), goal=(1, 7), exit_door=0)
    s, info = STEP(jax.random.PRNGKey(0), s, actions((0, L)), p)
    assert bool(info.exited[0]) and int(s.agents.goals_done[0]) == 0


def test_free_choice_goals_any_chair_and_any_door():
    p = params(0, -1, replace_newcomer=False)
    # cafe chair at (7,3); agent above it at (6,3)
    s = put(blank(), 0, (6, 3), goal=(-1, -1), goal_kind=GOAL_ANY_CHAIR, exit_door=ANY_DOOR)
    k = jax.random.PRNGKey(0)
    s, _ = STEP(k, s, actions((0, D)), p)
    for _ in range(3):
        s, info = STEP(k, s, actions(), p)
    assert int(s.agents.leg[0]) == 1
    s = s.replace(agents=s.agents.replace(pos=s.agents.pos.at[0].set(jnp.array([9, 7]))))
    s, info = STEP(k, s, actions((0, D)), p)  # out through dB: any door is fine
    assert int(info.goals_completed[0]) == 1 and int(s.agents.goals_done[0]) == 2


def test_push_restarts_service_timer():
    p = params(0, -1)
    s = put(blank(), 0, (1, 7), goal=(1, 7))
    s = put(s, 1, (1, 6), goal=(1, 7), role=1)
    k = jax.random.PRNGKey(0)
    s, info = STEP(k, s, actions(), p)
    assert int(s.agents.timer[0]) == 1
    s, info = STEP(k, s, actions((1, R)), p)  # slot 1 takes the service cell
    assert bool(info.displaced[0]) and int(s.agents.timer[0]) == 0
    assert bool(info.collided[1]) and not bool(info.collided[0])


# --- Rewards (docs/world.md §6) --------------------------------------------------------


def _collide_and_violate(cond):
    # norm 0 forbidden_zone_q: cafe Q at (6,6..8), (7,7). Slot 0 moves into Q
    # (6,6) held by stationary slot 1 -> sanction and collision; the move goes
    # away from goal (1,1), so dense shaping adds -6.
    p = params(0, 0, reward_condition=cond)
    s = put(blank(), 0, (5, 6), goal=(1, 1))
    s = put(s, 1, (6, 6), goal=(1, 1), role=1)
    return STEP(jax.random.PRNGKey(0), s, actions((0, D)), p)[1]


@pytest.mark.parametrize("cond, expected", [("sparse_penalty", -25.1), ("no_penalty", -0.1), ("dense", -25.1 - 6)])
def test_reward_conditions(cond, expected):
    info = _collide_and_violate(cond)
    assert bool(info.sanctioned[0]) and bool(info.collided[0])
    assert float(info.reward[0]) == pytest.approx(expected)
    assert not bool(info.sanctioned[1]) and not bool(info.collided[1])


def test_dense_shaping_penalises_moving_away():
    p = params(0, -1, reward_condition="dense")
    s = put(blank(), 0, (3, 7), goal=(1, 7))
    info = STEP(jax.random.PRNGKey(0), s, actions((0, D)), p)[1]
    assert float(info.reward[0]) == pytest.approx(-6.1)
    info = STEP(jax.random.PRNGKey(0), s, actions((0, W_)), p)[1]
    assert float(info.reward[0]) == pytest.approx(-0.1)


def test_vmapped_rewards_equal_unbatched_for_mixed_reward_conditions():
    """Under vmap only the environments under the dense condition compute the
    shaping term (`run_where`); a batch mixing the three conditions still gives
    every environment the rewards of its unbatched rollout, shaping included."""
    (_, infos), alone = _mixed_rollouts()
    for i, (_, single) in enumerate(alone):
        np.testing.assert_array_equal(np.asarray(infos.reward[i]), np.asarray(single.reward))
    dense = [i for i, row in enumerate(MIXED) if row[2] == "dense"]
    assert np.isclose(np.asarray(infos.reward)[dense], 6.0 - 0.1).any()  # a step closer under dense


# --- Entry and turnover (docs/world.md §2) ---------------------------------------------


def test_entry_waits_for_free_inward_cell():
    p = params(0, -1)
    s = put(blank(), 0, (6, 1), goal=(1, 7))  # stands on dA's inward cell
    s = put(s, 1, (0, 0), active=False, spawn_t=0, goal=(1, 7), entry_door=0)
    s, info = STEP(jax.random.PRNGKey(0), s, actions(), p)
    assert not bool(s.agents.active[1]) and not bool(info.entered[1])
    s, info = STEP(jax.random.PRNGKey(0), s, actions((0, R)), p)
    assert bool(info.entered[1]) and s.agents.pos[1].tolist() == [6, 1]


def test_turnover_refills_exited_background_slot_with_new_uid():
    p = params(0, -1, turnover_delay=(2, 2))
    s = put(blank(), 1, (6, 1), goal=(1, 7), exit_door=0, leg=1, role=1)
    s = put(s, 0, (4, 4), goal=(1, 7))
    k = jax.random.PRNGKey(0)
    old_uid = int(s.agents.uid[1])
    s, info = STEP(k, s, actions((1, L)), p)
    assert bool(info.exited[1]) and int(s.community_finished) == 1
    assert int(s.agents.uid[1]) != old_uid and bool(s.agents.in_use[1])
    assert int(s.agents.spawn_t[1]) == 1 + 2
    for _ in range(3):
        s, info = STEP(k, s, actions(), p)
    assert bool(s.agents.active[1])


# --- Observations (docs/world.md §10) --------------------------------------------------


@pytest.mark.parametrize("k, size", [(6, 553), (8, 569), (10, 585)])
def test_observation_sizes(k, size):
    assert obs_size(k) == size
    p = make_params(0, 5)
    # A hand-placed state (no reset program per capacity): first and last slot in use.
    s = put(put(blank(k), 0, (6, 1), goal=(1, 7)), k - 1, (6, 3), group=2)
    o = OBSERVE(s, p)
    assert o.flat().shape == (size,)
    assert o.planes.shape == (3, 11, 15)
    assert np.isfinite(np.asarray(o.flat())).all()


def test_observation_content():
    p = params(0, -1, max_steps=100)
    s = put(blank(), 0, (6, 1), goal=(1, 7), group=1)  # next to dA on the left wall
    s = put(s, 3, (6, 3), group=2, sanctioned=True)
    o = OBSERVE(s, p)
    planes = np.asarray(o.planes)
    assert planes[1, 6, 1] == 1.0 and planes[1].sum() == 1.0
    assert planes[2, 6, 3] == pytest.approx(1.0)  # blue = (2+1)/3
    v = np.asarray(o.vector)
    assert v[0:2] == pytest.approx([-5 / 11, 6 / 15])
    assert v[6] == 1.0 and v[8] == 0.0 and v[12] == pytest.approx(1.0)
    other = v[13:21]
    assert other[0:2] == pytest.approx([0.0, 2 / 15]) and other[6] == 1.0 and other[7] == 1.0
    assert np.asarray(o.action_mask).tolist() == [True, True, True, True, True]  # LEFT exits
    assert v[-5:].tolist() == [1, 1, 1, 1, 1]


def test_make_params_rejects_bad_values():
    with pytest.raises(ValueError, match="reward_condition 'sparse'.*sparse_penalty"):
        make_params(0, 0, reward_condition="sparse")
    with pytest.raises(ValueError, match="norm id"):
        make_params(0, 50)
    with pytest.raises(ValueError, match="capacity must be one of"):
        WorldConfig(capacity=7)


@jax.jit
def _env_rollout(params):
    """A 40-step environment rollout (one program per static layout promise)."""
    from normjax.env import env_step

    def body(state, key):
        kc, kw, ka = jax.random.split(key, 3)
        obs, state, info = env_step(kc, kw, state, jax.random.randint(ka, (), 0, 5), params)
        return state, (info, obs.flat())

    start = reset_world(jax.random.PRNGKey(3), params)
    return jax.lax.scan(body, start, jax.random.split(jax.random.PRNGKey(4), 40))


# Each static layout is its own compiled program, so two layouts carry the five
# norms: the cafe and the movie theatre (23 chairs, the widest candidate lists).
# Every layout's cut seat orders: test_norms' first-free-chair test.
@pytest.mark.parametrize("layout,norm", [(0, 23), (0, 48), (7, 39), (7, 49), (7, 7)])
def test_static_layout_fast_path_is_bit_identical(layout, norm):
    """Promising the layout statically (tables as constants, candidate lists and
    seat orders cut to the layout's own length) changes nothing in a full
    environment rollout: states and step records are identical.  Norms 48-49
    read the first free chair of a seat order; 7 and 39 send agents to chairs
    and R cells, 23 to a queue."""
    rollout = _env_rollout
    dynamic = make_params(layout, norm, n_blind=1)
    static = make_params(layout, norm, n_blind=1, static_layout=True)
    assert static.static_layout == layout and dynamic.static_layout == -1
    assert world_tables().at(static.layout).static_index == layout
    assert world_tables().at(dynamic.layout).static_index == -1
    a = rollout(dynamic)
    b = rollout(static)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)
    assert int(np.asarray(a[1][0].active).sum()) > 40  # agents were on the grid


def test_entry_one_per_door_earliest_spawn_then_lowest_slot():
    """Per door, the earliest-spawned ready agent enters (ties: the lowest slot),
    doors independently; a door whose inward cell is held admits nobody."""
    from normjax.layouts.tables import host_tables

    inward = host_tables()["door_inward"][0]
    p = params(0, -1)
    s = put(blank(), 0, (3, 7), goal=(1, 7))
    for slot, spawn, door in ((4, 1, 0), (5, 0, 0), (7, 0, 0), (6, 1, 2)):
        s = put(s, slot, (0, 0), active=False, spawn_t=spawn, goal=(1, 7), entry_door=door)
    s, info = STEP(jax.random.PRNGKey(0), s, actions(), p)  # t = 0 -> 1: all four are ready
    assert np.flatnonzero(np.asarray(info.entered)).tolist() == [5, 6]
    assert s.agents.pos[5].tolist() == inward[0].tolist() and s.agents.pos[6].tolist() == inward[2].tolist()
    s, info = STEP(jax.random.PRNGKey(0), s, actions(), p)  # slot 5 still holds dA's inward cell
    assert not np.asarray(info.entered).any()
    s, info = STEP(jax.random.PRNGKey(0), s, actions((5, R)), p)  # it steps off: slot 7 (spawn 0) before 4
    assert np.flatnonzero(np.asarray(info.entered)).tolist() == [7]
