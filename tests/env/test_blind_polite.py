"""The `blind_polite` reference newcomer (normjax/env/blind_polite.py, docs/world.md §9.5):
a random shortest route on the rules' move graph that never enters a cell another agent
stands on or announces it moves to, and waits when blocked."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.env import STATE_POLICIES
from normjax.env.blind_polite import blind_polite_policy, blocked_cells, polite_moves
from normjax.env.step import community_actions
from normjax.ground.moves import DELTAS, effective_actions
from normjax.layouts.tables import world_tables
from normjax.protocol.scenarios import build_test_episode
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.world.state import GOAL_CELL

B = 1  # door B (10, 7) of the cafe; its only floor neighbour is (9, 7)
MOVES = {C.UP: (-1, 0), C.DOWN: (1, 0), C.LEFT: (0, -1), C.RIGHT: (0, 1)}


@pytest.fixture(scope="module")
def cafe_episode():
    e = protocol_episodes([14])[0]  # any cafe episode: the tests place every agent themselves
    return jax.jit(build_test_episode)(jax.random.PRNGKey(e["seed"]), e["layout_id"], e["norm_id"], e["group"])


def place(state, newcomer, goal, leg, exit_door, other=None, other_goal=None):
    """Only the newcomer (and, with `other`, slot 1) on the grid, each with a specified goal cell."""
    ag = state.agents
    k = ag.active.shape[0]
    active = jnp.zeros((k,), bool).at[0].set(True)
    pos, goal_cell = ag.pos.at[0].set(jnp.asarray(newcomer)), ag.goal_cell.at[0].set(jnp.asarray(goal))
    leg_, timer = ag.leg.at[0].set(leg), ag.timer.at[:2].set(0)
    if other is not None:
        active = active.at[1].set(True)
        pos, goal_cell, leg_ = (
            pos.at[1].set(jnp.asarray(other)),
            goal_cell.at[1].set(jnp.asarray(other_goal)),
            leg_.at[1].set(0),
        )
    return state.replace(
        agents=ag.replace(
            active=active,
            in_use=active,
            pos=pos,
            prev_pos=pos,
            goal_kind=ag.goal_kind.at[:2].set(GOAL_CELL),
            goal_cell=goal_cell,
            leg=leg_,
            timer=timer,
            exit_door=ag.exit_door.at[0].set(exit_door),
            role=ag.role.at[1].set(C.ROLE_AWARE),
        )
    )


KEYS = jax.random.split(jax.random.PRNGKey(3), 64)


@jax.jit
def actions_of(state, params):
    return jax.vmap(blind_polite_policy, in_axes=(0, None, None))(KEYS, state, params)


def test_free_corridor_walks_the_shortest_route(cafe_episode):
    state, params = cafe_episode
    # Leg 1 from (8, 7) to door B: one shortest route, DOWN through (9, 7).
    s = place(state, (8, 7), (8, 7), 1, B)
    assert set(np.asarray(actions_of(s, params)).tolist()) == {C.DOWN}
    # Leg 0 from (1, 5) to (1, 1) on an empty row: LEFT only (every other move is longer).
    s = place(state, (1, 5), (1, 1), 0, B)
    assert set(np.asarray(actions_of(s, params)).tolist()) == {C.LEFT}


def test_blocked_corridor_waits(cafe_episode):
    state, params = cafe_episode
    # Someone in service on (9, 7), the door's only way in: no route, so WAIT (never into it).
    s = place(state, (8, 7), (8, 7), 1, B, other=(9, 7), other_goal=(9, 7))
    assert set(np.asarray(actions_of(s, params)).tolist()) == {C.WAIT}
    # blind_any walks into it.
    any_acts = jax.jit(jax.vmap(STATE_POLICIES["blind_any"], in_axes=(0, None, None)))(KEYS, s, params)
    assert set(np.asarray(any_acts).tolist()) == {C.DOWN}


def test_detours_around_a_standing_agent(cafe_episode):
    state, params = cafe_episode
    # (1, 3) occupied on the way from (1, 5) to (1, 1): row 1 is cut, the detour runs
    # through row 2 (across the chairs (2, 2), (2, 3)): 6 moves, first DOWN (or via (1, 4)
    # then DOWN: 6 too).  Never onto (1, 3).
    s = place(state, (1, 5), (1, 1), 0, B, other=(1, 3), other_goal=(1, 3))
    blocked = np.zeros((C.H, C.W), bool)
    blocked[1, 3] = True
    ok, d = polite_moves(jnp.asarray(blocked), s, params)
    assert int(d[1, 5]) == 6 and int(d[1, 4]) == 5 and int(d[2, 5]) == 5
    assert np.asarray(ok).tolist() == [False, True, True, False]  # UP, DOWN, LEFT, RIGHT
    acts = set(np.asarray(actions_of(s, params)).tolist())
    assert acts == {C.DOWN, C.LEFT}


def test_announced_cells_are_blocked(cafe_episode):
    state, params = cafe_episode
    # Slot 1 at (1, 2) bound for (1, 9) heads RIGHT into (1, 3): the newcomer's next cell
    # towards (1, 1).  Where slot 1 announces that move, the newcomer must not take (1, 3).
    s = place(state, (1, 4), (1, 1), 0, B, other=(1, 2), other_goal=(1, 9))
    lt = world_tables().at(params.layout)

    @jax.jit
    def probe(key):
        k_plan, _ = jax.random.split(key)
        planned = effective_actions(lt.kind, s.agents.pos, community_actions(k_plan, s, params))
        return planned[1], blocked_cells(k_plan, s, params), blind_polite_policy(key, s, params)

    announced_right = 0
    for key in KEYS[:32]:
        plan1, blocked, act = (np.asarray(x) for x in probe(key))
        want = np.zeros((C.H, C.W), bool)
        want[1, 2] = True
        want[tuple(np.asarray([1, 2]) + np.asarray(DELTAS[int(plan1)]))] = True
        assert (blocked == want).all()
        if int(act) != C.WAIT:
            assert not blocked[tuple(np.asarray([1, 4]) + MOVES[int(act)])]
        if int(plan1) == C.RIGHT:
            announced_right += 1
            assert int(act) != C.LEFT
    assert announced_right > 0  # the case happened


def test_blind_polite_is_an_evaluate_policy():
    from normjax.cli_names import POLICY_NAMES

    assert STATE_POLICIES["blind_polite"] is blind_polite_policy and "blind_polite" in POLICY_NAMES
