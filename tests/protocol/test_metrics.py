"""docs/world.md §9.4 metrics: collision involvement and the community metrics.

Hand-built scenes on the cafe (layout 0) check each role in which the newcomer
takes part in a collision; a protocol episode run with an early-finishing and
a never-finishing newcomer checks that the community metrics cover every
other agent of the episode, against totals recomputed from the step infos.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.community.planner import plan_actions
from normjax.env import env_step
from normjax.protocol.metrics import collision_involvement, community_totals
from normjax.protocol.runner import run_episode, summarize
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.protocol.seeds import TEST_STEPS
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.world.step import StepInfo, terminated
from tests.support.world_helpers import STEP, actions, blank, params, put

U, D, L, R, W_ = C.UP, C.DOWN, C.LEFT, C.RIGHT, C.WAIT
KEY = jax.random.PRNGKey(0)


def _step(placed, acts):
    s = blank()
    for slot, cell in placed.items():
        s = put(s, slot, cell, goal=(9, 13))
    return STEP(KEY, s, actions(*acts.items()), params(0, -1))


def test_newcomer_moved_into_without_being_pushed_counts():
    # The newcomer stands in the top-left corner; slot 1 walks into it, slot 2
    # follows slot 1, slot 3 (the only bystander next to the corner) is boxed in
    # by slots 4 and 5, so the newcomer cannot be pushed and everyone stays.
    s, info = _step({0: (1, 1), 1: (1, 2), 2: (1, 3), 3: (2, 1), 4: (3, 1), 5: (2, 2)}, {1: L, 2: L})
    assert np.asarray(s.agents.pos[:3]).tolist() == [[1, 1], [1, 2], [1, 3]]
    assert not bool(info.collided[0]) and not bool(info.displaced[0])
    assert bool(info.collided[1])  # the mover is charged
    inv = np.asarray(collision_involvement(info))
    assert inv[0] and inv[1] and inv[2]
    assert not inv[3:6].any()


def test_newcomer_pushed_counts():
    s, info = _step({0: (5, 5), 1: (5, 6)}, {1: L})
    assert bool(info.displaced[0]) and not bool(info.collided[0])
    assert s.agents.pos[1].tolist() == [5, 5]
    assert bool(collision_involvement(info)[0])


def test_newcomer_as_mover_counts():
    _, info = _step({0: (5, 5), 1: (5, 6)}, {0: R})
    assert bool(info.collided[0])
    inv = np.asarray(collision_involvement(info))
    assert inv[0] and inv[1]  # slot 1 was moved into


def test_newcomer_not_involved_while_others_collide():
    # The newcomer walks on with slot 1 following into its old cell, slots 2
    # and 3 swap (they pass), and slot 5 walks into the standing slot 4.
    _, info = _step({0: (5, 5), 1: (5, 6), 2: (4, 5), 3: (4, 6), 4: (1, 5), 5: (1, 6)}, {0: L, 1: L, 2: R, 3: L, 5: L})
    inv = np.asarray(collision_involvement(info))
    assert not inv[:4].any()
    assert inv[4] and inv[5]


def _info(**kw):
    k = 3
    base = dict(
        active=jnp.ones(k, bool),
        pos=jnp.asarray([[5, 5], [5, 7], [1, 1]]),
        action=jnp.full(k, W_),
        target=jnp.asarray([[5, 5], [5, 7], [1, 1]]),
        next_pos=jnp.zeros((k, 2), jnp.int32),
        reward=jnp.zeros(k),
        sanctioned=jnp.zeros(k, bool),
        collided=jnp.zeros(k, bool),
        displaced=jnp.zeros(k, bool),
        exited=jnp.zeros(k, bool),
        goals_completed=jnp.zeros(k, jnp.int32),
        entered=jnp.zeros(k, bool),
        forced_wait=jnp.zeros(k, bool),
        uid=jnp.arange(k),
    )
    base.update(kw)
    return StepInfo(**base)


def test_each_role_alone_on_hand_built_step_infos():
    assert not collision_involvement(_info()).any()
    pushed = _info(displaced=jnp.asarray([True, False, False]))
    assert collision_involvement(pushed).tolist() == [True, False, False]
    charged = _info(collided=jnp.asarray([False, True, False]))
    assert collision_involvement(charged).tolist() == [False, True, False]
    # Slot 1 moves LEFT onto (5, 6): nobody stands there, nobody is moved into.
    passing = _info(action=jnp.asarray([W_, L, W_]), target=jnp.asarray([[5, 5], [5, 6], [1, 1]]))
    assert not collision_involvement(passing).any()
    # Slot 2 moves onto the standing newcomer's cell.
    into = _info(action=jnp.asarray([W_, W_, D]), target=jnp.asarray([[5, 5], [5, 7], [5, 5]]))
    assert collision_involvement(into).tolist() == [True, False, False]
    # The same with the newcomer moving away: it leaves the cell, no conflict.
    away = _info(action=jnp.asarray([U, W_, D]), target=jnp.asarray([[4, 5], [5, 7], [5, 5]]))
    assert not collision_involvement(away)[0]
    # An agent off the grid is never involved.
    off = _info(active=jnp.asarray([False, True, True]), displaced=jnp.asarray([True, False, False]))
    assert not collision_involvement(off)[0]
    # Host numpy arrays give the same answer (the LLM runner's path).
    host = jax.tree.map(np.asarray, into)
    assert np.asarray(collision_involvement(host)).tolist() == [True, False, False]


def test_community_totals_count_exited_and_present_agents():
    s = blank()
    s = put(s, 0, (5, 5), steps=7, ret=-0.7)
    s = put(s, 1, (5, 6), steps=4, ret=9.6)
    s = put(s, 2, (1, 1), steps=0, ret=0.0)  # entered at the end of the last step
    s = put(s, 3, (0, 0), active=False, steps=12, ret=19.0)  # left; booked below
    s = s.replace(community_finished=jnp.int32(2), community_steps=jnp.int32(30), community_return=jnp.float32(35.0))
    n, steps, ret = community_totals(s)
    assert int(n) == 3 and int(steps) == 34 and float(ret) == np.float32(35.0) + np.float32(9.6)


def test_summarize_uses_involvement_and_every_community_agent():
    eps = [
        dict(
            norm_id=0,
            norm="forbidden_zone_q",
            family="spatial",
            condition="seen",
            layout="cafe",
            layout_id=0,
            episode=i,
            seed=i,
            group=0,
        )
        for i in range(3)
    ]
    raw = dict(
        goals=np.asarray([2, 2, 0]),
        sanctions=np.zeros(3, int),
        collisions=np.asarray([0, 1, 0]),
        involved=np.asarray([2, 1, 0]),
        path_length=np.asarray([10, 20, 100]),
        finished=np.asarray([True, True, False]),
        t_end=np.asarray([10, 20, 100]),
        community_finished=np.asarray([0, 1, 3]),
        community_agents=np.asarray([4, 5, 0]),
        community_steps=np.asarray([40, 60, 0]),
        community_return=np.asarray([8.0, -5.0, 0.0]),
    )
    out = summarize(eps, raw)
    rows = out["episodes"]
    assert [r["collision"] for r in rows] == [True, True, False]  # moved into / pushed counts
    assert rows[0]["community_path_length"] == 10.0 and rows[0]["community_welfare"] == 2.0
    assert rows[2]["community_path_length"] is None
    agg = out["seen"]["overall"]
    assert agg["collision_rate"] == pytest.approx(100.0 * 2 / 3)
    assert agg["community_path_length"] == (10.0 + 12.0) / 2 and agg["community_welfare"] == (2.0 - 1.0) / 2


# --- The community metrics on a protocol episode ------------------------------------

QUEUE = 30  # a coordination norm: the blind newcomer cuts in and leaves early


def _policy(mode):
    """mode 0: the norm-blind planner (finishes early); 1: always WAIT (never finishes)."""

    def policy(k, s, p):
        blind = plan_actions(k, s, p, jnp.zeros(s.agents.active.shape[0], bool))[0]
        return jnp.where(mode == 1, W_, blind)

    return policy


def _by_hand(mode, key, lay, nid, grp):
    """The episode of `run_episode` replayed with its step infos and end flags."""
    policy = _policy(mode)
    k_build, k_run = jax.random.split(key)
    state, params_ = build_test_episode(k_build, lay, nid, grp)

    def body(carry, k):
        s, done = carry
        kc, kp, kw = jax.random.split(k, 3)
        _, s2, info = env_step(kc, kw, s, policy(kp, s, params_), params_, SCENARIO_COMMUNITY)
        return (s2, done | terminated(s2, params_)), (info, done)

    _, (infos, before) = jax.lax.scan(body, (state, jnp.bool_(False)), jax.random.split(k_run, TEST_STEPS))
    return infos, before


@functools.cache
def _runs():
    e = [x for x in protocol_episodes([QUEUE]) if x["condition"] == "seen"][0]
    args = (jax.random.PRNGKey(e["seed"]), jnp.int32(e["layout_id"]), jnp.int32(e["norm_id"]), jnp.int32(e["group"]))

    def both(mode, key, lay, nid, grp):
        return run_episode(_policy(mode), key, lay, nid, grp), _by_hand(mode, key, lay, nid, grp)

    # One unbatched program run for each mode (a traced argument): smaller to
    # compile than its vmapped form; rows stacked as if batched.
    run = jax.jit(both)
    rows = [run(jnp.int32(mode), *args) for mode in (0, 1)]
    raw, (infos, before) = jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x]), *rows)
    return raw, infos, before


def _expected(infos, before, row):
    """Per uid (slots 1..K-1): steps on the grid and summed reward before the end."""
    steps, reward = {}, {}
    for t in range(TEST_STEPS):
        if before[row, t]:
            break
        for slot in range(1, infos.active.shape[-1]):
            if infos.active[row, t, slot]:
                u = int(infos.uid[row, t, slot])
                steps[u] = steps.get(u, 0) + 1
                reward[u] = reward.get(u, 0.0) + float(infos.reward[row, t, slot])
    return steps, reward


def test_community_metrics_cover_every_other_agent_whatever_the_newcomer_does():
    raw, infos, before = _runs()
    assert bool(raw["finished"][0]) and int(raw["t_end"][0]) < TEST_STEPS  # blind: finishes early
    assert not bool(raw["finished"][1]) and int(raw["t_end"][1]) == TEST_STEPS  # WAIT: never
    for row in (0, 1):
        steps, reward = _expected(infos, before, row)
        assert int(raw["community_agents"][row]) == len(steps) > 0
        assert int(raw["community_steps"][row]) == sum(steps.values())
        np.testing.assert_allclose(float(raw["community_return"][row]), sum(reward.values()), rtol=1e-5, atol=1e-4)
        # Agents still on the grid at the end count too, not only those that exited.
        assert int(raw["community_agents"][row]) > int(raw["community_finished"][row])
    # The never-finishing newcomer's episode covers at least the early one's agents.
    assert int(raw["community_agents"][1]) >= int(raw["community_agents"][0])


def test_protocol_collision_flag_counts_every_role():
    raw, infos, before = _runs()
    for row in (0, 1):
        live = ~before[row]
        hand = (np.asarray(collision_involvement(jax.tree.map(lambda x: x[row], infos)))[:, 0] & live).sum()
        assert int(raw["involved"][row]) == int(hand)
        charged = (infos.collided[row, :, 0] & live).sum()
        assert int(raw["collisions"][row]) == int(charged) <= int(raw["involved"][row])
