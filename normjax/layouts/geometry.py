"""Layout geometry (host side, numpy): grid neighbours, seating regions, the queue
block and the 16 queue paths, the outer ring with its cw / ccw steps, seat orders.

These are the derived features of a map that the norms need (docs/world.md §1, §7);
`normjax.layouts.parse` applies them to every layout once.
"""

from __future__ import annotations

import collections
import functools

import numpy as np

from normjax import constants as C

# Queue shapes of norms 23..38 (docs/world.md §7), in norm order.  Offsets are (away, right)
# = (+row, +col) from the head, which is the service cell; consecutive cells are
# 4-adjacent.  Open-ended shapes are cut at 6 cells, square_* has 7, edge_queue_* 4.
QUEUE_SHAPES: dict[str, list[tuple[int, int]]] = {
    "bend_right_1": [(0, 0), (0, 1), (1, 1), (2, 1), (3, 1), (4, 1)],
    "bend_right_2": [(0, 0), (0, 1), (0, 2), (1, 2), (2, 2), (3, 2)],
    "bend_left_1": [(0, 0), (0, -1), (1, -1), (2, -1), (3, -1), (4, -1)],
    "bend_left_2": [(0, 0), (0, -1), (0, -2), (1, -2), (2, -2), (3, -2)],
    "zigzag_right_1": [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)],
    "zigzag_right_2": [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1), (1, 0)],
    "zigzag_left_1": [(0, 0), (0, -1), (1, -1), (1, 0), (2, 0), (2, -1)],
    "zigzag_left_2": [(0, 0), (0, -1), (0, -2), (1, -2), (1, -1), (1, 0)],
    "staircase_right": [(0, 0), (0, 1), (1, 1), (1, 2), (2, 2), (3, 2)],
    "staircase_left": [(0, 0), (0, -1), (1, -1), (1, -2), (2, -2), (3, -2)],
    "l_shape_right": [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (3, 2)],
    "l_shape_left": [(0, 0), (1, 0), (2, 0), (2, -1), (2, -2), (3, -2)],
    "square_right": [(0, 0), (0, 1), (1, 1), (2, 1), (2, 0), (2, -1), (1, -1)],
    "square_left": [(0, 0), (0, -1), (1, -1), (2, -1), (2, 0), (2, 1), (1, 1)],
    "edge_queue_left": [(0, 0), (0, -1), (0, -2), (0, -3)],
    "edge_queue_right": [(0, 0), (0, 1), (0, 2), (0, 3)],
}
QUEUE_NAMES: tuple[str, ...] = tuple(QUEUE_SHAPES)

# Queue block (docs/world.md §1): rows 1..5, columns c-3..c+3 around the service column c.
QUEUE_ROWS = (1, 5)
QUEUE_HALF_WIDTH = 3

RING_ROWS = (1, C.H - 2)
RING_COLS = (1, C.W - 2)

Cell = tuple[int, int]


# ---------------------------------------------------------------------------
# Small grid helpers
# ---------------------------------------------------------------------------


def cells_of(lines, chars) -> list[Cell]:
    """All cells whose character is in `chars`, row-major."""
    return [(r, c) for r, line in enumerate(lines) for c, ch in enumerate(line) if ch in chars]


def is_border(r: int, c: int) -> bool:
    return r in (0, C.H - 1) or c in (0, C.W - 1)


def is_corner(r: int, c: int) -> bool:
    return r in (0, C.H - 1) and c in (0, C.W - 1)


def same_cell(a, b):
    """Whether [..., 2] cells a and b are equal (broadcasting), as two
    comparisons: an `all` over the last axis of 2 is a reduction XLA:CPU does
    not vectorise."""
    return (a[..., 0] == b[..., 0]) & (a[..., 1] == b[..., 1])


def flat_index(cells):
    """Flat cell index row * W + col of [..., 2] cells (numpy or jax arrays)."""
    return cells[..., 0] * C.W + cells[..., 1]


@functools.cache
def neighbour_index() -> np.ndarray:
    """[N_CELLS, 4] flat index of each cell's neighbour per move UP..RIGHT (-1 off grid).
    Cached (the route tables read it once per layout and graph) and read-only."""
    nb = np.full((C.N_CELLS, 4), -1, dtype=np.int64)
    for x in range(C.N_CELLS):
        for a, (rr, cc) in _neighbours_by_action(*divmod(x, C.W)):
            nb[x, a] = rr * C.W + cc
    nb.setflags(write=False)
    return nb


def distances_to_all(allowed: list[np.ndarray], start: np.ndarray) -> np.ndarray:
    """Moves from every cell to every target cell, by breadth-first search from
    all targets at once (one vectorised round per distance): int32 [G (target),
    X (from)], -1 where there is no path.

    `allowed[a][g, x]` (bool [G, X], one per move UP..RIGHT) says whether the
    move a from x may be taken on the way to g; `start[g]` whether g can be a
    target at all (distance 0 to itself; else no cell reaches it).
    """
    nb = neighbour_index()
    safe_nb = np.where(nb >= 0, nb, 0)
    cells = np.arange(C.N_CELLS)
    reached = np.zeros((C.N_CELLS, C.N_CELLS), bool)
    reached[cells, cells] = start
    dist = np.where(reached, 0, -1).astype(np.int32)
    for d in range(1, C.N_CELLS):
        new = reached.copy()
        for a in range(4):
            new |= allowed[a] & reached[:, safe_nb[:, a]]
        fresh = new & ~reached
        if not fresh.any():
            break
        dist[fresh] = d
        reached = new
    return dist


def _neighbours_by_action(r: int, c: int):
    for a, (dr, dc) in enumerate(C.ACTION_DELTAS[:4]):
        rr, cc = r + int(dr), c + int(dc)
        if 0 <= rr < C.H and 0 <= cc < C.W:
            yield a, (rr, cc)


def neighbours(r: int, c: int):
    """The on-grid 4-neighbours of (r, c), in action order."""
    for _, cell in _neighbours_by_action(r, c):
        yield cell


def inward_cell(door: Cell) -> Cell:
    """The one interior neighbour of a (non-corner) border door cell (docs/world.md §1)."""
    r, c = door
    return (min(max(r, 1), C.H - 2), min(max(c, 1), C.W - 2))


def find_one(lines, ch: str) -> Cell:
    return cells_of(lines, ch)[0]


def region_of(r: int, c: int, door_a: Cell, door_b: Cell) -> int:
    """Seating region of a cell by docs/world.md §1's inequalities (TL / BL / BR, or -1)."""
    row_a, col_b = door_a[0], door_b[1]
    if r < row_a and c < col_b:
        return C.TL
    if r > row_a and c < col_b:
        return C.BL
    if r > row_a and c > col_b:
        return C.BR
    return -1


def queue_block_cells(counter_col: int) -> list[Cell]:
    """Cells of the 5x7 queue block (docs/world.md §1) around service column `counter_col`."""
    r0, r1 = QUEUE_ROWS
    return [
        (r, c)
        for r in range(r0, r1 + 1)
        for c in range(counter_col - QUEUE_HALF_WIDTH, counter_col + QUEUE_HALF_WIDTH + 1)
    ]


def reachable_from(start: Cell, passable: np.ndarray, enterable: np.ndarray) -> np.ndarray:
    """Cells reachable from `start` (docs/world.md §1 reachability rule), bool [H, W].

    Moves are 4-directional into `enterable` cells; only `passable` cells are left
    again, so chairs (enterable, not passable) can end a path but never carry one.
    """
    seen = np.zeros((C.H, C.W), dtype=bool)
    if not enterable[start]:
        return seen
    seen[start] = True
    frontier = collections.deque([start])
    while frontier:
        cell = frontier.popleft()
        if not passable[cell]:
            continue  # a chair: a path may end here but not go on
        for nxt in neighbours(*cell):
            if enterable[nxt] and not seen[nxt]:
                seen[nxt] = True
                frontier.append(nxt)
    return seen


# ---------------------------------------------------------------------------
# Derived arrays (docs/world.md §1 and 7)
# ---------------------------------------------------------------------------


def ring_mask(walkable: np.ndarray) -> np.ndarray:
    """Outer walkable ring (docs/world.md §1): walkable cells in row 1, row 9, column 1 or 13."""
    rows, cols = np.indices((C.H, C.W))
    on_lines = np.isin(rows, RING_ROWS) | np.isin(cols, RING_COLS)
    return walkable & on_lines


def cw_step(r: int, c: int) -> tuple[int, int]:
    """Clockwise step of a ring cell (docs/world.md §1, first matching rule)."""
    top, bottom = RING_ROWS
    left, right = RING_COLS
    if r == top and c < right:
        return (0, 1)
    if c == right and r < bottom:
        return (1, 0)
    if r == bottom and c > left:
        return (0, -1)
    return (-1, 0)  # c == left


def ccw_step(r: int, c: int) -> tuple[int, int]:
    """Counterclockwise step of a ring cell (docs/world.md §1, first matching rule)."""
    top, bottom = RING_ROWS
    left, right = RING_COLS
    if c == left and r < bottom:
        return (1, 0)
    if r == bottom and c < right:
        return (0, 1)
    if c == right and r > top:
        return (-1, 0)
    return (0, -1)  # r == top


def ring_steps(ring: np.ndarray, step) -> np.ndarray:
    """int8 [H, W, 2] of `step(r, c)` on ring cells, (0, 0) elsewhere."""
    out = np.zeros((C.H, C.W, 2), dtype=np.int8)
    for r, c in np.argwhere(ring):
        out[r, c] = step(int(r), int(c))
    return out


def region_grid(door_a: Cell, door_b: Cell) -> np.ndarray:
    """int8 [H, W] seating region of every cell (docs/world.md §1 inequalities; -1 = none)."""
    out = np.empty((C.H, C.W), dtype=np.int8)
    for r in range(C.H):
        for c in range(C.W):
            out[r, c] = region_of(r, c, door_a, door_b)
    return out


def queue_paths(service: Cell) -> tuple[np.ndarray, np.ndarray]:
    """Queue paths of norms 23..38 (docs/world.md §7): int32 [16, 7, 2] (-1 padded), int32 [16]."""
    paths = np.full((C.N_QUEUE_PATHS, C.MAX_QUEUE_LEN, 2), -1, dtype=np.int32)
    lengths = np.zeros(C.N_QUEUE_PATHS, dtype=np.int32)
    sr, sc = service
    for i, offsets in enumerate(QUEUE_SHAPES.values()):
        paths[i, : len(offsets)] = [(sr + away, sc + right) for away, right in offsets]
        lengths[i] = len(offsets)
    return paths, lengths


def seat_orders(chairs: np.ndarray) -> np.ndarray:
    """Seat orders sigma of norms 48 / 49 (docs/world.md §7): int32 [2, NC, 2].

    [0] l2r: columns left to right, top to bottom within a column;
    [1] r2l: columns right to left, top to bottom within a column.
    """
    chairs = np.asarray(chairs, dtype=np.int32).reshape(-1, 2)
    l2r = chairs[np.lexsort((chairs[:, 0], chairs[:, 1]))]
    r2l = chairs[np.lexsort((chairs[:, 0], -chairs[:, 1]))]
    return np.stack([l2r, r2l]).astype(np.int32)
