"""Two-goal tasks (docs/world.md §5, paper Table A3): sampling, acceptance, distances.

The goal types depend on the family of the episode's norm.  Each norm id maps
to one task type through the norm table (`normjax.norms.table`), so task sampling is a gather, not
a branch, and works for a traced norm id.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.ground.draws_at import randint_at
from normjax.layouts.geometry import same_cell
from normjax.layouts.tables import SET_CHAIRS, SET_DOORS, SET_R
from normjax.norms.table import (
    TASK_DEST,
    TASK_DOOR_CHOICE,
    TASK_Q_CHAIR,
    TASK_QUEUE,
    TASK_R_ZONE,
    TASK_SEAT,
    norm_row,
)
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL


def task_type(norm_id):
    """The task type (TASK_* of the norm table) agents get under a norm."""
    return norm_row(norm_id, "task_type")


def sample_tasks(key, lt, norm_id, k: int, at=None):
    """Fresh tasks for k agents: (goal_kind, goal_cell [k,2], exit_door, entry_door, group).

    With `at` (int [m] agent indices) only those agents' tasks, exactly the
    k-agent result at `at`, without drawing the others' (`draws_at`).
    """
    if at is None:
        n = k
        draw = lambda kk, lo, hi: jax.random.randint(kk, (k,), lo, hi)
    else:
        n = at.shape[0]
        draw = lambda kk, lo, hi: randint_at(kk, at, lo, hi)
    kd, kc, kx, ke, kg = jax.random.split(key, 5)
    ty = task_type(norm_id)
    dest = lt.read("dest_cells", draw(kd, 0, jnp.maximum(lt.n_dest_cells, 1)))
    chair = lt.read("chairs", draw(kc, 0, jnp.maximum(lt.n_chairs, 1)))
    service = jnp.broadcast_to(lt.service, (n, 2))
    none = jnp.full((n, 2), -1, jnp.int32)
    goal_cell = jnp.select(
        [ty == TASK_DEST, ty == TASK_QUEUE, (ty == TASK_Q_CHAIR) | (ty == TASK_DOOR_CHOICE)],
        [dest, service, chair],
        none,
    )
    goal_kind = jnp.select([ty == TASK_R_ZONE, ty == TASK_SEAT], [GOAL_ANY_R, GOAL_ANY_CHAIR], GOAL_CELL) * jnp.ones(
        (n,), jnp.int32
    )
    exit_door = draw(kx, 0, C.N_DOORS)
    exit_door = jnp.where(ty == TASK_DOOR_CHOICE, ANY_DOOR, exit_door)
    entry_door = draw(ke, 0, C.N_DOORS)
    group = draw(kg, 0, C.N_GROUPS)
    return goal_kind, goal_cell.astype(jnp.int32), exit_door, entry_door, group


def on_goal1(lt, goal_kind, goal_cell, pos):
    """Whether each agent stands on an acceptable goal-1 cell [K]."""
    r, c = pos[:, 0], pos[:, 1]
    exact = same_cell(pos, goal_cell)
    return jnp.select(
        [goal_kind == GOAL_ANY_CHAIR, goal_kind == GOAL_ANY_R],
        [lt.chair[r, c], lt.zone_r[r, c]],
        exact,
    )


def door_ok(exit_door, door_index):
    """Whether leaving through door `door_index` completes goal 2."""
    return (exit_door == ANY_DOOR) | (exit_door == door_index)


def goal_target(lt, leg, goal_kind, goal_cell, exit_door, pos):
    """The cell each agent heads for now [K, 2] (nearest one for free choices).

    Free-choice goals use the nearest object of the acceptable category
    (docs/world.md §10), measured on the newcomer's distance table.
    """
    flat = pos[:, 0] * C.W + pos[:, 1]
    near_chair = lt.read("nearest_of_set", SET_CHAIRS, flat)
    near_r = lt.read("nearest_of_set", SET_R, flat)
    near_door = lt.read("nearest_of_set", SET_DOORS, flat)
    door_cell = lt.doors[jnp.maximum(exit_door, 0)]
    near = lambda f: jnp.stack([f // C.W, f % C.W], -1)
    g1 = jnp.select(
        [goal_kind[:, None] == GOAL_ANY_CHAIR, goal_kind[:, None] == GOAL_ANY_R],
        [near(near_chair), near(near_r)],
        goal_cell,
    )
    g2 = jnp.where((exit_door == ANY_DOOR)[:, None], near(near_door), door_cell)
    return jnp.where((leg == 0)[:, None], g1, g2).astype(jnp.int32)


def goal_distance(lt, leg, goal_kind, goal_cell, exit_door, cells):
    """BFS distance (newcomer's graph) from `cells` [K,2] to the current goal [K].

    UNREACHABLE where no path exists.  Free-choice goals measure the distance to
    the nearest acceptable cell.
    """
    flat = cells[:, 0] * C.W + cells[:, 1]
    gflat = jnp.maximum(goal_cell[:, 0], 0) * C.W + jnp.maximum(goal_cell[:, 1], 0)
    dflat = lt.doors[jnp.maximum(exit_door, 0)]
    dflat = dflat[:, 0] * C.W + dflat[:, 1]
    d_cell = lt.distance(gflat, flat)
    d_door = lt.distance(dflat, flat)
    d1 = jnp.select(
        [goal_kind == GOAL_ANY_CHAIR, goal_kind == GOAL_ANY_R],
        [lt.read("dist_to_set", SET_CHAIRS, flat), lt.read("dist_to_set", SET_R, flat)],
        d_cell,
    )
    d2 = jnp.where(exit_door == ANY_DOOR, lt.read("dist_to_set", SET_DOORS, flat), d_door)
    return jnp.where(leg == 0, d1, d2).astype(jnp.int32)


__all__ = [
    "task_type",
    "sample_tasks",
    "on_goal1",
    "door_ok",
    "goal_target",
    "goal_distance",
]
