"""The `blind_any` reference newcomer (normjax/env/blind_any.py, docs/world.md §9.5):
a uniformly random shortest route on the rules' move graph, re-planned every step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.env import STATE_POLICIES
from normjax.env.blind_any import blind_any_policy, distance_to, goal_graph
from normjax.layouts import load_layout
from normjax.protocol.scenarios import build_test_episode
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.testing.scenario_checker import bfs, load_map


def test_distances_cross_chairs_and_end_at_doors():
    lay = load_layout("cafe")
    door = lay.kind == C.DOOR
    targets = np.zeros_like(door)
    targets[tuple(lay.doors[1])] = True  # door B
    d = np.asarray(jax.jit(distance_to)(jnp.asarray(targets), jnp.asarray(lay.walkable & ~door)))
    # The independent checker's search, from every walkable cell (norm-blind, leg 1).
    room = load_map("cafe")
    for cell in map(tuple, np.argwhere(lay.walkable)):
        dist = bfs(room, cell, None, 0, 1, False)
        want = min((v for (c, _), v in dist.items() if c == tuple(lay.doors[1])), default=None)
        assert d[cell] == want, cell
    assert d[7, 11] == 7  # across chair (8,11); the planners' graph needs 9


@pytest.fixture(scope="module")
def right_door_episode():
    e = protocol_episodes([6])[0]  # right_door_forbidden, seen 0: goal 1 chair (7,11)
    state, params = jax.jit(build_test_episode)(jax.random.PRNGKey(e["seed"]), e["layout_id"], e["norm_id"], e["group"])
    return state, params


def test_random_shortest_moves_only(right_door_episode):
    state, params = right_door_episode
    # Leg 1 from the chair: B and C are both 7 moves away, so DOWN (towards B, across
    # chair (8,11)), UP and RIGHT (towards C) all start shortest routes; LEFT is a table.
    ag = state.agents
    on_chair = state.replace(agents=ag.replace(pos=ag.pos.at[0].set(jnp.asarray([7, 11])), leg=ag.leg.at[0].set(1)))
    keys = jax.random.split(jax.random.PRNGKey(0), 256)

    @jax.jit
    def probe(state, params):  # one program: the distance grid and 256 draws
        targets, passable = goal_graph(state, params)
        acts = jax.vmap(blind_any_policy, in_axes=(0, None, None))(keys, state, params)
        return distance_to(targets, passable), targets | passable, acts

    d, enterable, acts = (np.asarray(x) for x in probe(on_chair, params))
    assert d[7, 11] == 7
    steps = {C.UP: (6, 11), C.DOWN: (8, 11), C.LEFT: (7, 10), C.RIGHT: (7, 12)}
    assert set(acts.tolist()) <= set(steps)
    for a in set(acts.tolist()):
        assert d[steps[a]] == 6, a
    counts = np.bincount(acts, minlength=5)
    shortest = [a for a, c in steps.items() if d[c] == 6 and enterable[c]]
    assert sorted(set(acts.tolist())) == sorted(shortest) and len(shortest) >= 2
    assert counts[shortest].min() > 256 / len(shortest) / 2  # roughly uniform


def test_blind_any_is_an_evaluate_policy():
    from normjax.cli_names import POLICY_NAMES

    assert STATE_POLICIES["blind_any"] is blind_any_policy and "blind_any" in POLICY_NAMES
