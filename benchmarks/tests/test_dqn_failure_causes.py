"""benchmarks/dqn_failure_causes.py: the classification of an episode from its newcomer's
per-step record, on hand-built records; the replay check that must fail on a mismatch; the
closed-door counterfactual's policy."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.dqn_failure_causes import _differences, classify
from benchmarks.dqn_failure_report import breakdown
from benchmarks.dqn_failure_training import closed_door_policy
from normjax import constants as C
from normjax.env import phase_params
from normjax.ground.moves import DELTAS
from normjax.layouts.tables import layout_id, world_tables
from normjax.world.state import GOAL_ANY_CHAIR, GOAL_CELL
from normjax.world.step import reset_world

UP, DOWN = 0, 1  # any two moves; only WAIT's code matters to the classification


def record(path, actions, *, exited_at=None, leg=0, held=False, received=(), forced=(), steps=100):
    """A per-step record: the newcomer's cells `path` (one more than its steps), then the episode
    over (done) after `len(actions)` steps; the rest of the scan's steps are not live."""
    n = len(actions)
    pos = np.zeros((steps, 2), np.int32)
    nxt = np.zeros((steps, 2), np.int32)
    pos[:n], nxt[:n] = np.asarray(path[:-1]), np.asarray(path[1:])
    target = nxt.copy()
    exited = np.zeros(steps, bool)
    if exited_at is not None:
        exited[exited_at] = True
        target[exited_at] = (5, 0)  # a door cell
    flag = lambda idx: np.isin(np.arange(steps), list(idx))
    return dict(
        live=np.arange(steps) < n,
        pos=pos,
        next_pos=nxt,
        target=target,
        action=np.r_[np.asarray(actions), np.full(steps - n, C.WAIT)],
        forced=flag(forced),
        exited=exited,
        received=flag(received),
        leg=np.full(steps, leg),
        timer=np.zeros(steps, np.int32),
        held=np.full(steps, held),
        distance=np.full(steps, 7),
    )


def test_a_newcomer_that_steps_back_out_of_its_door_left_during_goal_1():
    r = record([(5, 1), (5, 1)], [UP], exited_at=0)
    c = classify(0, True, GOAL_CELL, r)
    assert (c["outcome"], c["behaviour"], c["exit_step"], c["exit_cell"]) == ("exited_in_goal1", None, 1, (5, 0))
    assert c["start_distance"] == 7
    assert classify(1, True, GOAL_CELL, r)["outcome"] == "wrong_exit"
    assert classify(2, True, GOAL_CELL, r)["outcome"] == "success"


def test_time_outs_are_told_apart_by_behaviour():
    still = [(3, 3)] * 101
    waiting = classify(0, False, GOAL_ANY_CHAIR, record(still, [C.WAIT] * 100))
    assert (waiting["outcome"], waiting["behaviour"], waiting["stuck"]) == ("timeout_0_goals", "waiting", True)
    # moves that were not carried out: an agent in the way
    blocked = classify(1, False, GOAL_ANY_CHAIR, record(still, [UP] * 100, leg=1, received=[4, 9]))
    assert (blocked["outcome"], blocked["behaviour"], blocked["received"]) == ("timeout_1_goal", "blocked", 2)
    # back and forth between two cells: moving every step, never still
    zigzag = [(3, 3) if i % 2 == 0 else (4, 3) for i in range(101)]
    osc = classify(0, False, GOAL_ANY_CHAIR, record(zigzag, [DOWN, UP] * 50))
    assert (osc["behaviour"], osc["stuck"]) == ("oscillating", False)
    # a walk over new cells
    walk = [(1 + i // 14, i % 14) for i in range(101)]
    assert classify(0, False, GOAL_ANY_CHAIR, record(walk, [DOWN] * 100))["behaviour"] == "wandering"
    # service WAITs are forced, not the newcomer's choice
    forced = classify(0, False, GOAL_ANY_CHAIR, record(still, [C.WAIT] * 100, forced=range(100)))
    assert forced["behaviour"] != "waiting"


def test_a_specified_goal_cell_held_by_another_agent_is_flagged_only_for_cell_goals():
    still = [(3, 3)] * 101
    assert classify(0, False, GOAL_CELL, record(still, [C.WAIT] * 100, held=True))["goal_cell_held"]
    assert not classify(0, False, GOAL_ANY_CHAIR, record(still, [C.WAIT] * 100, held=True))["goal_cell_held"]
    assert not classify(0, False, GOAL_CELL, record(still, [C.WAIT] * 100, held=False))["goal_cell_held"]


def test_breakdown_charges_each_cause_its_task_points():
    base = dict(family="access", layout="cafe", behaviour=None, received=0, stuck=False, goal_cell_held=False)
    base.update(service_interrupted=False, exit_step=None, start_distance=3, entry_door="A", goal_kind=0)
    rows = [dict(base, norm="n0", task=1.0, outcome="success", exit_step=9)]
    rows.append(dict(base, norm="n1", task=0.0, outcome="exited_in_goal1", exit_step=1, exit_specified=True))
    rows.append(dict(base, norm="n1", task=0.5, outcome="timeout_1_goal", behaviour="waiting"))
    rows.append(dict(base, norm="n2", task=1.0, outcome="success", exit_step=20))
    b = breakdown(rows)
    assert (b["task"], b["failed"], b["task_points_lost"]) == (62.5, 2, 37.5)
    assert b["by_outcome"]["exited_in_goal1"] == dict(episodes=1, task_points_lost=25.0)
    assert b["by_outcome"]["timeout_1_goal"] == dict(episodes=1, task_points_lost=12.5)
    assert b["exits_in_goal1"]["within_5_steps"] == 1
    assert b["concentration"]["norms_with_failures"] == 1


def test_the_replay_check_names_every_difference():
    committed = {"overall": {"task": 74.33333333333333, "joint": 0.0}, "episodes": [{"task": 1.0}, {"task": 0.5}]}
    assert _differences("x", committed, committed) == []
    replay = {"overall": {"task": 74.0, "joint": 0.0}, "episodes": [{"task": 1.0}, {"task": 1.0}]}
    assert _differences("x", replay, committed) == [
        "x.episodes[1].task: replay 1.0, committed 0.5",
        "x.overall.task: replay 74.0, committed 74.33333333333333",
    ]
    assert _differences("x", {"episodes": [1]}, {"episodes": [1, 2]}) == ["x.episodes: 1 entries, committed 2"]


def test_the_closed_door_policy_masks_the_door_only_during_goal_1():
    params = phase_params("test", layout_id("cafe"), 1)
    state = jax.jit(reset_world)(jax.random.PRNGKey(3), params)
    pos = np.asarray(state.agents.pos[0])  # the newcomer enters on its door's inward neighbour
    doors = np.asarray(world_tables().at(params.layout).doors)
    onto = [a for a in range(5) if (np.asarray(pos + DELTAS[a]) == doors).all(-1).any()]
    assert len(onto) == 1  # one move steps back out
    q = jnp.zeros(5).at[onto[0]].set(10.0)  # the Q-values prefer leaving
    policy = jax.jit(closed_door_policy(SimpleNamespace(apply=lambda q_params, obs: q_params), q))
    assert int(policy(None, state, params)) != onto[0]
    leg1 = state.replace(agents=state.agents.replace(leg=state.agents.leg.at[0].set(1)))
    assert int(policy(None, leg1, params)) == onto[0]
