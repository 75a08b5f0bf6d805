"""Helpers to build hand-made world states for tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax.world.state import GOAL_CELL, empty_state, make_params
from normjax.world.step import reset_world, step_world

STEP = jax.jit(step_world)
RESET = jax.jit(reset_world, static_argnums=2)


def blank(capacity: int = 10):
    """A state with every slot unused (t = 0)."""
    return empty_state(capacity)


def put(
    state,
    slot,
    pos,
    *,
    group=0,
    goal=(1, 1),
    goal_kind=GOAL_CELL,
    exit_door=0,
    leg=0,
    role=None,
    spawn_t=0,
    active=True,
    **extra,
):
    """Place an agent in `slot` with the given task; returns the new state."""
    ag = state.agents
    upd = dict(
        in_use=ag.in_use.at[slot].set(True),
        active=ag.active.at[slot].set(active),
        pos=ag.pos.at[slot].set(jnp.asarray(pos)),
        prev_pos=ag.prev_pos.at[slot].set(jnp.asarray(pos)),
        group=ag.group.at[slot].set(group),
        goal_cell=ag.goal_cell.at[slot].set(jnp.asarray(goal)),
        goal_kind=ag.goal_kind.at[slot].set(goal_kind),
        exit_door=ag.exit_door.at[slot].set(exit_door),
        leg=ag.leg.at[slot].set(leg),
        spawn_t=ag.spawn_t.at[slot].set(spawn_t),
        uid=ag.uid.at[slot].set(slot),
    )
    if role is not None:
        upd["role"] = ag.role.at[slot].set(role)
    for name, value in extra.items():
        upd[name] = getattr(ag, name).at[slot].set(value)
    return state.replace(agents=ag.replace(**upd), next_uid=jnp.int32(state.agents.in_use.shape[0]))


def actions(*pairs, k: int = 10, default: int = 4):
    a = np.full(k, default, dtype=np.int32)
    for slot, act in pairs:
        a[slot] = act
    return jnp.asarray(a)


def params(layout=0, norm=-1, **kw):
    kw.setdefault("turnover_delay", (50, 50))  # keep refills out of short tests
    return make_params(layout, norm, **kw)
