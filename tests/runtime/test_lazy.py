"""The runner's packed host rows and lazily built turns and memory (normjax.runtime.lazy, batch.observe/advance).

* `Memory.select(n)` equals `select_memory` over the first n eagerly built
  records, for every n and many sanction patterns; records are snapshots.
* `LazyTurn` equals the eager `Turn` built field by field from the same row,
  and keeps its memory as of its own step when the memory grows later.
* The packed columns of `batch.observe` / `batch.advance` equal the state's
  and the step info's own arrays.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.protocol.metrics import collision_involvement, community_totals
from normjax.runtime import batch
from normjax.runtime.lazy import Columns, LazyTurn, Memory, others_of
from normjax.runtime.runner import protocol_test_episodes
from normjax.runtime.turns import Other, StepRecord, Turn, select_memory

K = 4
LAYOUT = batch.obs_layout(K)
COLS = Columns(LAYOUT)
WIDTH = max(s.stop for s in LAYOUT.values())


def _rows(rng, n_steps, n_rows=3):
    """Random packed arrays, one per step."""
    return [rng.integers(0, 9, (n_rows, WIDTH)).astype(np.int32) for _ in range(n_steps)]


def _fields(turn):
    return {f.name: getattr(turn, f.name) for f in dataclasses.fields(Turn)}


def _eager_record(row, action, note, reasoning, sanctioned):
    c = COLS
    others = tuple(
        ((int(row[c.pos + 2 * k]), int(row[c.pos + 2 * k + 1])), int(row[c.group + k]))
        for k in range(1, K)
        if row[c.active + k]
    )
    return StepRecord(
        t=int(row[c.t]),
        pos=(int(row[c.pos]), int(row[c.pos + 1])),
        others=others,
        action=action,
        note=note,
        reasoning=reasoning,
        sanctioned=sanctioned,
    )


@pytest.mark.parametrize("p_sanctioned", [0.0, 0.2, 0.7, 1.0])
def test_memory_select_equals_select_memory(p_sanctioned):
    rng = np.random.default_rng(int(p_sanctioned * 10))
    obs = _rows(rng, 40)
    mem, eager = Memory(obs, 1, COLS), []
    for step in range(40):
        if rng.random() < 0.1:
            continue  # newcomer off the grid: no memory entry this step
        sanctioned = bool(rng.random() < p_sanctioned)
        args = ("move up", "" if step % 3 else "blocked: I did not move", f"r{step}", sanctioned)
        mem.append(step, *args)
        eager.append(_eager_record(obs[step][1], *args))
    assert len(mem) == len(eager) > 20
    for n in range(len(eager) + 1):
        assert mem.select(n) == select_memory(eager[:n]), n
    assert mem.record(0) is mem.record(0)  # built once


def test_lazy_turn_equals_the_eager_turn_and_is_a_snapshot():
    rng = np.random.default_rng(3)
    obs = _rows(rng, 30)
    mem = Memory(obs, 2, COLS)
    for step in range(25):
        mem.append(step, "wait", "", "", step % 4 == 0)
    row = obs[25][2].tolist()
    row[COLS.active + 2] = 0  # one other agent off the grid
    c = COLS
    fields = dict(
        index=2,
        episode="x/seen_0",
        phase="seen",
        norm_id=1,
        layout="cafe",
        t=row[c.t],
        max_steps=100,
        pos=(row[c.pos], row[c.pos + 1]),
        group=row[c.group],
        goal_kind=row[c.goal_kind],
        goal_cell=(row[c.goal_cell], row[c.goal_cell + 1]),
        exit_door=row[c.exit_door],
        leg=row[c.leg],
        service_steps=3,
        sanctioned=bool(row[c.sanctioned]),
        steps_seen=25,
        first_step=obs[0][2][c.t],
        belief=None,
        confidence=None,
    )
    for intents in (False, True):
        lazy = LazyTurn(fields, row, COLS, intents, mem, 25)
        others = [
            Other(
                (row[c.pos + 2 * k], row[c.pos + 2 * k + 1]),
                row[c.group + k],
                bool(row[c.sanctioned + k]),
                row[c.intent + k] if intents else None,
            )
            for k in (1, 3)
        ]
        recent, earlier = select_memory([mem.record(i) for i in range(25)])
        eager = Turn(**fields, others=others, memory=recent, earlier=earlier)
        assert isinstance(lazy, Turn) and _fields(lazy) == _fields(eager) and others_of(row, COLS, intents) == others
        assert [r.t for r in lazy.earlier] == [obs[s][2][c.t] for s in (0, 4, 8, 12)]
    fresh = LazyTurn(fields, row, COLS, True, mem, 25)  # made now, read after the memory grew
    mem.append(26, "move left", "", "later", True)
    assert (
        fresh.memory == recent
        and fresh.earlier == earlier
        and len(LazyTurn(fields, row, COLS, True, mem, 26).memory) == 10
    )
    with pytest.raises(AttributeError, match="no_such_field"):
        _ = lazy.no_such_field


def test_packed_columns_equal_the_state_and_step_info():
    eps = protocol_test_episodes([0, 12])
    states, params, keys, pad = batch.init_stage(eps, 10, 100)
    done, waits = jnp.asarray(pad), jnp.zeros(len(pad), jnp.int32)
    L = batch.obs_layout(10)
    obs = np.asarray(batch.observe(keys[:, 0], states, params, done, waits))
    rng = np.random.default_rng(0)
    for t in range(6):
        s = jax.device_get(states)
        ag = s.agents
        col = lambda name: obs[:, L[name]]
        assert (col("active") == ag.active).all() and (col("pos") == ag.pos.reshape(len(pad), -1)).all()
        assert (col("group") == ag.group).all() and (col("sanctioned") == ag.sanctioned).all()
        assert (col("goal_cell") == ag.goal_cell[:, 0]).all() and (col("t")[:, 0] == s.t).all()
        for name, x in (
            ("goal_kind", ag.goal_kind),
            ("exit_door", ag.exit_door),
            ("leg", ag.leg),
            ("goals", ag.goals_done),
            ("n_sanctions", ag.n_sanctions),
            ("path_length", ag.steps),
        ):
            assert (col(name)[:, 0] == x[:, 0]).all(), name
        agents, steps, ret = community_totals(s)  # docs/world.md §9.4, as the compiled protocol
        assert (col("community_return")[:, 0].view(np.float32) == ret).all()
        assert (col("community_agents")[:, 0] == agents).all() and (col("community_steps")[:, 0] == steps).all()
        assert (col("intent") == -1).all()
        assert not (col("in_service")[:, 0] & ~(ag.active[:, 0] & (ag.leg[:, 0] == 0))).any()
        actions = jnp.asarray(rng.integers(0, C.N_ACTIONS, len(pad)), jnp.int32)
        states, done, waits, info, packed = batch.advance(
            keys[:, t], keys[:, t + 1], states, done, waits, actions, params
        )
        obs, info = np.asarray(packed), jax.device_get(info)
        assert (obs[:, L["done"]][:, 0] == np.asarray(done)).all() and (obs[:, L["waits"]][:, 0] == waits).all()
        for name, x in (
            ("info_active", info.active[:, 0]),
            ("forced", info.forced_wait[:, 0]),
            ("executed", info.action[:, 0]),
            ("info_sanctioned", info.sanctioned[:, 0]),
            ("bg_sanctions", info.sanctioned[:, 1:].sum(1)),
            ("involved", collision_involvement(info)[:, 0]),
        ):
            assert (obs[:, L[name]][:, 0] == x).all(), name
