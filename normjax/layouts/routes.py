"""Shortest-path tables for the scripted agents' planner (docs/world.md §8).

The paper's agents plan with A*; here every layout gets, once at import, a
table of shortest-path distances to every target cell over each *move graph*
a norm can shape.  Inside the jitted step a planner only gathers from these
tables and adds dynamic costs (predicted collisions, the norm's per-action
mask), which is what makes the community cheap under `vmap` (docs/world.md §8 allows
"precomputed static tables combined with dynamic costs").

Move graph: an agent standing on any walkable cell may step to a 4-neighbour
that is a *corridor* cell, or to its target cell itself.  Corridors are floor
cells (with or without Q/R marks); chairs and doors are never corridors, so
scripted agents never route through chairs or doors other than their own goal
(docs/world.md §8).  Graph variants (static parts of norms):

  0 base             every floor cell is a corridor;
  1 no_q             Q cells are not corridors (forbidden_zone_q);
  2 cw, 3 ccw        moves between two ring cells only along cw / ccw;
  4 + j              queue path j's cells are not corridors (queue norms):
                     agents join at the tail and leave without cutting across.

Distances are computed on the host by breadth-first search from all targets at
once (`normjax.layouts.geometry.distances_to_all`), stored as uint8
(`constants.UNREACHABLE` = no path).
Which norm uses which variant is a column of the norm table
(`normjax.norms.table`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.cache import stored
from normjax.layouts.geometry import distances_to_all, neighbour_index
from normjax.layouts.parse import ALL_LAYOUTS, Layout, load_layout

V_BASE, V_NO_Q, V_CW, V_CCW, V_QUEUE0 = 0, 1, 2, 3, 4
N_VARIANTS = V_QUEUE0 + C.N_QUEUE_PATHS


def _edge_mask(lay: Layout, variant: int) -> np.ndarray:
    """[N_CELLS, 4] static permission of the step x -> neighbour (ring direction)."""
    nb = neighbour_index()
    ok = nb >= 0
    if variant in (V_CW, V_CCW):
        ring = lay.ring.reshape(-1)
        step = (lay.cw if variant == V_CW else lay.ccw).reshape(-1, 2)
        for x in np.flatnonzero(ring):
            for a in range(4):
                y = nb[x, a]
                if y >= 0 and ring[y]:
                    ok[x, a] = bool((C.ACTION_DELTAS[a] == step[x]).all())
    return ok


def _corridors(lay: Layout, variant: int) -> np.ndarray:
    corridor = (lay.kind == C.FLOOR).reshape(-1).copy()
    if variant == V_NO_Q:
        corridor &= ~lay.zone_q.reshape(-1)
    if variant >= V_QUEUE0:
        j = variant - V_QUEUE0
        for r, c in lay.queue_paths[j][: lay.queue_len[j]]:
            corridor[r * C.W + c] = False
    return corridor


def distance_to_targets(lay: Layout, variant: int) -> np.ndarray:
    """[N_CELLS (target), N_CELLS (from)] move counts under one graph variant."""
    nb = neighbour_index()
    edge = _edge_mask(lay, variant)
    corridor = _corridors(lay, variant)
    standable = ((lay.kind == C.FLOOR) | (lay.kind == C.CHAIR)).reshape(-1)
    enterable = standable | (lay.kind == C.DOOR).reshape(-1)
    targets = np.arange(C.N_CELLS)
    safe_nb = np.where(nb >= 0, nb, 0)
    # allowed[a][g, x]: from x, the step a may be taken when heading for g.
    step_ok = edge & standable[:, None]  # [X, 4]
    allowed = [
        step_ok[:, a][None, :] & (corridor[safe_nb[:, a]][None, :] | (safe_nb[None, :, a] == targets[:, None]))
        for a in range(4)
    ]
    dist = distances_to_all(allowed, enterable)
    return np.where(dist < 0, C.UNREACHABLE, np.minimum(dist, 254)).astype(np.uint8)


@functools.cache
def host_route_tables() -> np.ndarray:
    """uint8 [n_layouts, N_VARIANTS, N_CELLS, N_CELLS] (cached; ~5 MB; on disk too when the command
    line's cache is configured: `normjax.cache.stored`)."""
    return stored("routes", _build_route_tables)


def _build_route_tables() -> np.ndarray:
    return np.stack(
        [np.stack([distance_to_targets(load_layout(name), v) for v in range(N_VARIANTS)]) for name in ALL_LAYOUTS]
    )


@functools.cache
def host_corridors() -> np.ndarray:
    """bool [n_layouts, N_VARIANTS, N_CELLS]: cells a path may pass through."""
    return np.stack([np.stack([_corridors(load_layout(name), v) for v in range(N_VARIANTS)]) for name in ALL_LAYOUTS])


@functools.cache
def corridor_tables() -> jax.Array:
    with jax.ensure_compile_time_eval():
        return jnp.asarray(host_corridors())


# The planner's goal-choice cases, in the order of the rows of `host_goal_candidates`.
CASE_CHAIR, CASE_R, CASE_Q, CASE_DOOR = 0, 1, 2, 3
N_CASES = 4


def planner_width(longest: int) -> int:
    """Columns the planner scores for rows of `longest` cells: the row, then
    padding, then the agent's own cell, rounded up to a multiple of 8 because
    the compiled per-candidate loops are vectorised 8 wide (measured: 13
    columns cost more than 24, 16 less)."""
    return -(-(longest + 1) // 8) * 8


@functools.cache
def host_goal_candidates() -> dict[str, np.ndarray]:
    """Every cell a free-choice goal can be, per layout and case, as short padded lists.

    A free-choice goal is any chair (CASE_CHAIR), any R cell (CASE_R), a Q cell
    (CASE_Q: visit Q first) or an allowed door (CASE_DOOR); an agent is in one
    case at a time, so it scores one row (at most a few dozen cells) instead of
    all 165 cells, or all four lists.  Returns int32 arrays: `cell` [n_layouts,
    N_CASES, W] (flat indices in row-major order, -1 padded to `planner_width`
    of the longest list; the door row is the layout's doors 0, 1, 2) and
    `region` [n_layouts, W] (the seat region of each chair of the chair row, -1
    padded).
    """
    lists, regions = [], []
    for name in ALL_LAYOUTS:
        lay = load_layout(name)
        flat = lambda mask: [int(r) * C.W + int(c) for r, c in np.argwhere(mask)]
        chairs = flat(lay.kind == C.CHAIR)
        doors = [int(r) * C.W + int(c) for r, c in lay.doors]
        lists.append([chairs, flat(lay.zone_r), flat(lay.zone_q), doors])
        regions.append([int(lay.region.reshape(-1)[x]) for x in chairs])
    w = planner_width(max(len(row) for rows in lists for row in rows))
    pad = lambda row: row + [-1] * (w - len(row))
    return {
        "cell": np.asarray([[pad(row) for row in rows] for rows in lists], np.int32),
        "region": np.asarray([pad(row) for row in regions], np.int32),
    }


def candidate_count(layout: int | None = None) -> int:
    """Length of a layout's longest candidate list (of all layouts' lists
    when `layout` is None, i.e. traced)."""
    count = (host_goal_candidates()["cell"] >= 0).sum(axis=2)  # [n_layouts, N_CASES]
    return int(count.max() if layout is None else count[layout].max())


@functools.cache
def goal_candidate_tables() -> dict[str, jax.Array]:
    with jax.ensure_compile_time_eval():
        return {k: jnp.asarray(v) for k, v in host_goal_candidates().items()}


@functools.cache
def route_rows() -> jax.Array:
    """uint8 [n_layouts, N_VARIANTS, N_CELLS (from), N_CELLS (target)]: the
    transposed route table, so that all distances from one cell are one row."""
    with jax.ensure_compile_time_eval():
        return jnp.asarray(np.ascontiguousarray(host_route_tables().transpose(0, 1, 3, 2)))


@functools.cache
def route_tables() -> jax.Array:
    """Device copy of `host_route_tables` (created outside any trace)."""
    with jax.ensure_compile_time_eval():
        return jnp.asarray(host_route_tables())
