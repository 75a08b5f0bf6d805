"""Per-layout arrays stacked over every layout (`ALL_LAYOUTS`: the ten and the validation cafes), as device constants.

Every layout is parsed once on the host (`normjax.layouts.parse`), then the arrays the
jitted world needs are stacked along a leading layout axis.  A state or params
pytree only carries the traced `layout_id`; `LayoutTables.at(layout_id)` gathers
one layout's slice, so one compiled step serves every layout and a vmapped batch
may mix layouts (docs/world.md §1, 9: seen and unseen layouts in one program).

Shortest-path distances (docs/world.md §8, docs/world.md §10 "BFS distance") are computed here once,
by breadth-first search on the host, instead of by relaxation inside each step.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from normjax import constants as C
from normjax.constants import UNREACHABLE
from normjax.layouts.geometry import distances_to_all, neighbour_index
from normjax.layouts.parse import ALL_LAYOUTS, Layout, check_layout_name, load_layout

# Padding for variable-length cell lists.
MAX_CHAIRS = 48
MAX_CELLS = C.N_CELLS
# `LayoutTables.code`: one byte per cell, so a lookup at many cells (every
# action's target) is one gather: the cell kind in the low bits, then the R
# and Q zone flags.  Off the grid reads as 0 (a wall, no zone).
CODE_KIND = 0b111
CODE_ZONE_R = 0b1000
CODE_ZONE_Q = 0b10000


def distance_table(lay: Layout, through: np.ndarray) -> np.ndarray:
    """All-targets distance table [N_CELLS (target), N_CELLS (from)] as int16.

    Entry [g, x] is the number of moves from x to g (UNREACHABLE where none).
    A path may pass only through cells where `through[r, c]`; the target itself
    may always be entered from such a neighbour, so chairs and doors can be goals
    without being corridors (docs/world.md §8).  Targets that are not walkable
    and not doors are UNREACHABLE from everywhere but themselves.
    """
    passable = through.reshape(-1)
    on_grid = neighbour_index() >= 0
    allowed = [np.broadcast_to(passable & on_grid[:, a], (C.N_CELLS, C.N_CELLS)) for a in range(4)]
    enterable = (lay.walkable | (lay.kind == C.DOOR)).reshape(-1)
    dist = distances_to_all(allowed, enterable)
    table = np.where(dist < 0, UNREACHABLE, dist).astype(np.int16)
    np.fill_diagonal(table, 0)
    return table


def _pad_cells(cells: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    out = np.full((size, 2), -1, dtype=np.int32)
    n = len(cells)
    if n > size:
        raise ValueError(f"{n} cells exceed the table capacity {size}")
    if n:
        out[:n] = cells
    return out, n


def destination_cells(lay: Layout) -> np.ndarray:
    """Candidate 'specified destination' cells (docs/world.md §5) of a layout.

    Plain floor cells away from the things norms regulate, so that a
    destination never sits in Q, R, the queue block, on a chair, or on a
    door's inward cell (where it would block entry).
    """
    ok = (lay.kind == C.FLOOR) & ~lay.zone_q & ~lay.zone_r
    sr, sc = lay.service
    ok[1:6, sc - 3 : sc + 4] = False
    for r, c in lay.door_inward:
        ok[r, c] = False
    return np.argwhere(ok).astype(np.int32)


@struct.dataclass
class LayoutTables:
    """Arrays of one layout (or, stacked, of all layouts along axis 0)."""

    kind: jax.Array  # int8 [H, W]
    code: jax.Array  # int8 [H, W]: kind | CODE_ZONE_R | CODE_ZONE_Q (`cell_codes`)
    walkable: jax.Array  # bool [H, W]
    zone_q: jax.Array  # bool [H, W]
    zone_r: jax.Array  # bool [H, W]
    chair: jax.Array  # bool [H, W]
    region: jax.Array  # int8 [H, W]
    ring: jax.Array  # bool [H, W]
    cw: jax.Array  # int32 [H, W, 2]
    ccw: jax.Array  # int32 [H, W, 2]
    doors: jax.Array  # int32 [3, 2]
    door_inward: jax.Array  # int32 [3, 2]
    service: jax.Array  # int32 [2]
    queue_paths: jax.Array  # int32 [16, 7, 2] (-1 padded)
    queue_len: jax.Array  # int32 [16]
    chairs: jax.Array  # int32 [MAX_CHAIRS, 2] (-1 padded)
    n_chairs: jax.Array  # int32 []
    seat_order: jax.Array  # int32 [2, MAX_CHAIRS, 2] (-1 padded)
    r_cells: jax.Array  # int32 [MAX_CELLS, 2]
    n_r_cells: jax.Array  # int32 []
    dest_cells: jax.Array  # int32 [MAX_CELLS, 2]
    n_dest_cells: jax.Array  # int32 []
    # dist[g, x]: moves from x to g; chairs may be crossed (the newcomer's view,
    # docs/world.md §10 observation and dense reward).
    dist: jax.Array  # int16 [N_CELLS, N_CELLS]
    # Distance from every cell to the nearest chair / R cell / door [3, N_CELLS],
    # and which one is nearest (flat cell index) for free-choice goal geometry.
    dist_to_set: jax.Array  # int16 [3, N_CELLS]
    nearest_of_set: jax.Array  # int32 [3, N_CELLS]

    # Index of the layout a sliced table belongs to (-1 while stacked).
    layout_index: jax.Array = None  # type: ignore[assignment]
    # The same index when it is known at trace time (the single-layout path,
    # `WorldParams.static_layout`), else -1: stages may then drop the padding
    # of per-layout lists (candidates, seat orders) up to the longest layout's.
    static_index: int = struct.field(pytree_node=False, default=-1)

    def at(self, layout_id) -> LayoutTables:
        """The slice of one layout from stacked tables (layout_id may be traced).

        The big [165, 165] distance table is *not* sliced: under `vmap` a slice
        would copy it for every environment and step.  It stays stacked and
        `distance` gathers single entries with the layout index instead.
        """
        sliced = jax.tree.map(lambda a: a[layout_id], self.replace(dist=None, layout_index=None))
        static = layout_id if isinstance(layout_id, int) else -1
        return sliced.replace(dist=self.dist, layout_index=jnp.asarray(layout_id, jnp.int32), static_index=static)

    @property
    def index(self):
        """The layout index to read stacked tables with: the static one when known
        (a compile-time constant), else the traced `layout_index`."""
        return self.static_index if self.static_index >= 0 else self.layout_index

    def read(self, field: str, *index):
        """`getattr(self, field)[index]`; with a traced layout index, read from
        the stacked tables at (layout, *index) instead: under `vmap` the
        one-layout slice made by `at` is a copy of the whole table per
        environment and step, where only a few entries are needed."""
        own, stacked = getattr(self, field), getattr(world_tables(), field)
        # Direct for constant tables, tables that are not a slice of the stacked
        # ones, and a field a view replaced (its shape differs).
        if (
            self.static_index >= 0
            or self.layout_index is None
            or self.layout_index.ndim
            or own.shape != stacked.shape[1:]
        ):
            return own[index]
        return stacked[(self.layout_index,) + index]

    def distance(self, target_flat, from_flat):
        """Moves from cell `from_flat` to cell `target_flat` (flat indices)."""
        return self.dist[self.layout_index, target_flat, from_flat]


SET_CHAIRS, SET_R, SET_DOORS = 0, 1, 2


def _set_distance(table: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    flat = cells[:, 0] * C.W + cells[:, 1]
    sub = table[flat]  # [n, N_CELLS]
    return sub.min(axis=0).astype(np.int16), flat[sub.argmin(axis=0)].astype(np.int32)


def cell_codes(kind, zone_r, zone_q) -> np.ndarray:
    """The packed per-cell byte of `LayoutTables.code` (int8 [H, W])."""
    if int(np.max(kind)) > CODE_KIND:
        raise ValueError(f"cell kinds must fit in {CODE_KIND.bit_length()} bits, got {int(np.max(kind))}")
    code = kind.astype(np.int16) | np.where(zone_r, CODE_ZONE_R, 0) | np.where(zone_q, CODE_ZONE_Q, 0)
    return code.astype(np.int8)


def build_layout_arrays(lay: Layout) -> dict[str, np.ndarray]:
    """Host-side arrays of one layout (numpy), in LayoutTables field order."""
    chair_mask = lay.kind == C.CHAIR
    chairs, n_chairs = _pad_cells(lay.chairs, MAX_CHAIRS)
    order = np.full((2, MAX_CHAIRS, 2), -1, dtype=np.int32)
    order[:, : lay.seat_order.shape[1]] = lay.seat_order
    r_cells, n_r = _pad_cells(np.argwhere(lay.zone_r).astype(np.int32), MAX_CELLS)
    dest, n_dest = _pad_cells(destination_cells(lay), MAX_CELLS)
    # The newcomer may walk over chairs; doors are exits, never corridors.
    through = lay.walkable.copy()
    dist = distance_table(lay, through)
    d_ch, n_ch = _set_distance(dist, lay.chairs)
    d_r, n_rr = _set_distance(dist, np.argwhere(lay.zone_r))
    d_d, n_d = _set_distance(dist, lay.doors)
    return dict(
        kind=lay.kind.astype(np.int8),
        code=cell_codes(lay.kind, lay.zone_r, lay.zone_q),
        walkable=lay.walkable,
        zone_q=lay.zone_q,
        zone_r=lay.zone_r,
        chair=chair_mask,
        region=lay.region.astype(np.int8),
        ring=lay.ring,
        cw=lay.cw.astype(np.int32),
        ccw=lay.ccw.astype(np.int32),
        doors=lay.doors.astype(np.int32),
        door_inward=lay.door_inward.astype(np.int32),
        service=np.asarray(lay.service, dtype=np.int32),
        queue_paths=lay.queue_paths.astype(np.int32),
        queue_len=lay.queue_len.astype(np.int32),
        chairs=chairs,
        n_chairs=np.int32(n_chairs),
        seat_order=order,
        r_cells=r_cells,
        n_r_cells=np.int32(n_r),
        dest_cells=dest,
        n_dest_cells=np.int32(n_dest),
        dist=dist,
        dist_to_set=np.stack([d_ch, d_r, d_d]),
        nearest_of_set=np.stack([n_ch, n_rr, n_d]),
    )


@functools.cache
def host_tables() -> dict[str, np.ndarray]:
    """numpy arrays of every layout (`ALL_LAYOUTS`) stacked on axis 0 (cached)."""
    per = [build_layout_arrays(load_layout(name)) for name in ALL_LAYOUTS]
    return {k: np.stack([p[k] for p in per]) for k in per[0]}


@functools.cache
def world_tables() -> LayoutTables:
    """Device arrays of every layout (`ALL_LAYOUTS`), stacked along the layout axis (cached).

    Created eagerly even when first called inside a trace, so the cache never
    holds a tracer; inside jit they enter the program as constants.
    """
    with jax.ensure_compile_time_eval():
        arrays = {k: jnp.asarray(v) for k, v in host_tables().items()}
        return LayoutTables(**arrays, layout_index=jnp.int32(-1))


def layout_id(name: str) -> int:
    """Index of a layout name in `ALL_LAYOUTS`; a clear error for unknown names."""
    return ALL_LAYOUTS.index(check_layout_name(name))
