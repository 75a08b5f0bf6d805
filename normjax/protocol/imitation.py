"""Over-imitation of distractor habits by the newcomer (docs/world.md §8.5).

Over-imitation rate of a newcomer: the share of its steps on the grid that
follow a habit present in the episode (`params.habit`, with a share > 0) that
its norm does not require.  "Follows" is defined on what a trajectory shows,
step by step, for slot 0:

* `move1_wait1`: the step is a WAIT of its own choice (not a service wait)
  right after a move, while some move was free: permitted by the norm now
  (the per-action mask, §7), stepping into a corridor cell or its goal that is
  strictly nearer its goal on the norm-aware route table (the goal the
  norm-aware planner would choose, §8.2), and no other agent within two moves
  of it at the start of the step (so nobody could block or contest any cell
  it might step into, whatever its goal).  Waits the norm demands (rhythm and
  turn norms, queues, capacity), waits near other agents and waits with no way
  forward do not count.
* `same_exit_door`: every step of an exit leg (leg 1, §5) that ends by leaving
  through the entry door, when the exit was a free choice, the norm allows
  the entry door, and at the start of the leg another door the norm allows
  for its group was strictly nearer on the norm-aware route table.  Leaving by
  the entry door because it is the nearest allowed one does not count.

The norm-aware planner without habits (the Norm Oracle) therefore never
follows a habit.  `update` is one step of the count (used inside the protocol
scan); `over_imitation` counts a whole recorded trajectory.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.community.planner import choose_goals
from normjax.constants import HABIT_MOVE1_WAIT1, HABIT_SAME_EXIT_DOOR
from normjax.ground.moves import DELTAS, effective_actions, in_grid
from normjax.layouts.geometry import flat_index as _flat
from normjax.layouts.routes import corridor_tables, route_rows
from normjax.layouts.tables import world_tables
from normjax.norms.table import norm_row
from normjax.world.state import ANY_DOOR, WorldParams, WorldState
from normjax.world.step import state_norm


class Imitation(NamedTuple):
    """Running count for slot 0 (all int32 / bool scalars)."""

    follows: jax.Array  # steps that followed the episode's habit
    steps: jax.Array  # steps on the grid (the rate's denominator)
    in_leg1: jax.Array  # on an exit leg at the last step
    leg_steps: jax.Array  # steps of the current exit leg so far
    nearer: jax.Array  # at the leg's start another allowed door was strictly nearer


def init() -> Imitation:
    z = jnp.int32(0)
    return Imitation(follows=z, steps=z, in_leg1=jnp.bool_(False), leg_steps=z, nearer=jnp.bool_(False))


def _tables(state: WorldState, params: WorldParams):
    """(layout tables, route variant of slot 0 under the norm, its flat cell, distance fn)."""
    lt = world_tables().at(params.layout)
    variant = norm_row(params.norm_id, "route_variant")
    x = _flat(state.agents.pos[0])
    rows = route_rows()
    dist = lambda cells: rows[params.layout, variant, x, cells]
    return lt, variant, x, dist


def free_progress(state: WorldState, params: WorldParams):
    """Whether slot 0 had a permitted, uncontested move toward its goal (see module doc)."""
    ag = state.agents
    k = ag.active.shape[0]
    lt, variant, x, _ = _tables(state, params)
    rows = route_rows()
    lid = params.layout
    view = state_norm(state, params)  # the episode's norm on this state (docs/world.md §7)
    aware = jnp.arange(k) == 0
    # The goal the norm-aware planner would choose (fixed seed: ties are rare and harmless here).
    dist_all = lambda cells: rows[lid, variant, _flat(ag.pos)[:, None], cells]
    goal = choose_goals(jnp.uint32(0), lt, view.ctx, state, params.norm_id, aware, dist_all)[0]
    mask = view.permitted[0]  # [5]
    permitted = mask | (params.norm_id < 0)
    acts = jnp.arange(4)
    nxt = ag.pos[0][None, :] + DELTAS[:4]  # [4, 2]
    y = jnp.where(in_grid(nxt), _flat(nxt), x)
    is_move = effective_actions(lt.kind, jnp.broadcast_to(ag.pos[0], (4, 2)), acts) == acts
    enter_ok = corridor_tables()[lid, variant, y] | (y == goal)
    d_x = rows[lid, variant, x, goal].astype(jnp.int32)
    closer = rows[lid, variant, y, goal].astype(jnp.int32) < d_x
    # Alone: an agent two moves away could enter a cell next to the newcomer, so
    # any wait near others may be a yield (e.g. a norm-blind newcomer yielding
    # on its own route while the norm-aware route is clear).
    others = ag.active & (jnp.arange(k) > 0)
    alone = ~(others & (jnp.abs(ag.pos - ag.pos[0][None, :]).sum(-1) <= 2)).any()
    free = is_move & enter_ok & closer & (d_x < C.UNREACHABLE) & permitted[:4]
    return alone & free.any()


def other_door_nearer(state: WorldState, params: WorldParams):
    """Whether the norm allows slot 0's entry door and a strictly nearer other door."""
    ag = state.agents
    lt, _, _, dist = _tables(state, params)
    allowed = norm_row(params.norm_id, "allowed_doors")[ag.group[0]]  # [3]
    d = dist(_flat(lt.doors)).astype(jnp.int32)  # [3]
    e = ag.entry_door[0]
    other = allowed & (jnp.arange(3) != e) & (d < d[e]) & (d < C.UNREACHABLE)
    return allowed[e] & other.any()


def update(carry: Imitation, state: WorldState, info, params: WorldParams) -> Imitation:
    """Count step `info` of slot 0, taken from `state` (the world at the step's start)."""
    ag = state.agents
    lt = world_tables().at(params.layout)
    on = info.active[0] & (params.habit_share > 0)
    # move1_wait1: a chosen WAIT right after a move although a free move existed.
    rest = (info.action[0] == C.WAIT) & ~info.forced_wait[0] & ag.moves[0, 0]
    mw = on & (params.habit == HABIT_MOVE1_WAIT1) & rest & free_progress(state, params)
    # same_exit_door: the whole exit leg counts when it ends by the entry door.
    leg1 = info.active[0] & (ag.leg[0] == 1)
    start = leg1 & ~carry.in_leg1
    nearer = jnp.where(start, other_door_nearer(state, params), carry.nearer)
    leg_steps = jnp.where(leg1, jnp.where(start, 0, carry.leg_steps) + 1, 0)
    door = jnp.argmax((lt.doors == info.target[0][None, :]).all(-1))
    by_entry = info.exited[0] & (door == ag.entry_door[0]) & (ag.exit_door[0] == ANY_DOOR)
    sd = on & (params.habit == HABIT_SAME_EXIT_DOOR) & leg1 & by_entry & nearer
    follows = carry.follows + mw.astype(jnp.int32) + jnp.where(sd, leg_steps, 0)
    return Imitation(
        follows=follows,
        steps=carry.steps + info.active[0].astype(jnp.int32),
        in_leg1=leg1 & ~info.exited[0],
        leg_steps=leg_steps,
        nearer=nearer,
    )


def over_imitation(states: WorldState, infos, params: WorldParams) -> Imitation:
    """The count over a recorded trajectory: `states[t]` the world at the start of
    step t (at least T entries), `infos` the T steps' `StepInfo` (time-stacked)."""
    n = infos.active.shape[0]
    head = jax.tree.map(lambda a: a[:n], states)
    out, _ = jax.lax.scan(lambda c, si: (update(c, si[0], si[1], params), None), init(), (head, infos))
    return out


def rate(follows, steps):
    """follows / steps (0 for a newcomer that never stood on the grid)."""
    return float(follows) / float(steps) if int(steps) > 0 else 0.0


__all__ = ["Imitation", "free_progress", "init", "other_door_nearer", "over_imitation", "rate", "update"]
