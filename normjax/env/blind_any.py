"""`blind_any`: a norm-blind newcomer that takes a uniformly random shortest route
on the world's own move graph (docs/world.md §9.5, issue 33).

The `blind` reference newcomer is the scripted planner: one graph (chairs are
never crossed, §8.1) and one tie-break.  `blind_any` probes the promise of the
test scenarios (§9.3) more widely: every step it measures the distance to its
current goal on the graph the rules allow (§3.1: floor and chairs walkable, a
door only as the exit it is bound for) and takes one of the moves that keep
it on a shortest route, uniformly at random (the policy key).  Specifics:

* leg 0, a specified cell: chairs may be crossed, doors never entered;
* leg 0, any chair / any R cell: the goal is every such cell no other agent
  stands on; chairs are route ends (the first chair entered is the seat);
* leg 1: the exit door, or any door for a free exit; chairs may be crossed.

Other agents are not obstacles (it may walk into them, as a norm-blind agent
that ignores the community would); with no route it WAITs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.layouts.tables import world_tables
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, WorldParams, WorldState

_FAR = 10_000
_STEPS = jnp.asarray([(-1, 0), (1, 0), (0, -1), (0, 1)], jnp.int32)  # UP, DOWN, LEFT, RIGHT


def _neighbour_min(d):
    """min over the 4 neighbours of each cell (outside the grid: _FAR)."""
    p = jnp.pad(d, 1, constant_values=_FAR)
    return jnp.minimum(jnp.minimum(p[:-2, 1:-1], p[2:, 1:-1]), jnp.minimum(p[1:-1, :-2], p[1:-1, 2:]))


def distance_to(targets, passable):
    """int32 [H, W] moves from each cell to the nearest target, routes passing only
    through `passable` cells (targets are route ends); _FAR where none."""

    def body(carry):
        d, _ = carry
        nd = jnp.where(targets, 0, jnp.where(passable, jnp.minimum(d, _neighbour_min(d) + 1), _FAR))
        return nd, jnp.any(nd != d)

    d0 = jnp.where(targets, 0, _FAR)
    return jax.lax.while_loop(lambda c: c[1], body, (d0, jnp.bool_(True)))[0]


def goal_graph(state: WorldState, params: WorldParams, slot: int = 0):
    """(targets, passable) bool [H, W] of the slot's current goal on the rules' graph."""
    lt = world_tables().at(params.layout)
    ag = state.agents
    others = ag.active & (jnp.arange(ag.active.shape[0]) != slot)
    occupied = jnp.zeros((C.H, C.W), bool).at[ag.pos[:, 0], ag.pos[:, 1]].max(others)
    door = lt.kind == C.DOOR
    kind, cell, leg = ag.goal_kind[slot], ag.goal_cell[slot], ag.leg[slot]
    specified = jnp.zeros((C.H, C.W), bool).at[cell[0], cell[1]].set(True)
    goal1 = jnp.where(
        kind == GOAL_ANY_CHAIR, lt.chair & ~occupied, jnp.where(kind == GOAL_ANY_R, lt.zone_r & ~occupied, specified)
    )
    ex = ag.exit_door[slot]
    exit_cells = (
        jnp.zeros((C.H, C.W), bool).at[lt.doors[:, 0], lt.doors[:, 1]].set((ex == ANY_DOOR) | (jnp.arange(3) == ex))
    )
    targets = jnp.where(leg == 0, goal1, exit_cells)
    passable = lt.walkable & ~door & ~((leg == 0) & (kind == GOAL_ANY_CHAIR) & lt.chair)
    return targets, passable


def blind_any_policy(key, state: WorldState, params: WorldParams):
    """One step of a uniformly random shortest route to the newcomer's current goal."""
    targets, passable = goal_graph(state, params)
    d = distance_to(targets, passable)
    x = state.agents.pos[0]
    y = x[None, :] + _STEPS
    inside = (y[:, 0] >= 0) & (y[:, 0] < C.H) & (y[:, 1] >= 0) & (y[:, 1] < C.W)
    yc = jnp.clip(y, 0, jnp.asarray([C.H - 1, C.W - 1]))
    dy = jnp.where(inside & (targets | passable)[yc[:, 0], yc[:, 1]], d[yc[:, 0], yc[:, 1]], _FAR)
    best = dy.min()
    ok = (dy == best) & (best < _FAR)
    move = jax.random.categorical(key, jnp.where(ok, 0.0, -jnp.inf))
    return jnp.where(ok.any(), move, C.WAIT).astype(jnp.int32)


__all__ = ["blind_any_policy", "distance_to", "goal_graph"]
