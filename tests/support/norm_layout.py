"""The hand-made 11 x 15 test layout of the norm tests (docs/world.md §1 legend and §7
queue shapes), built into `LayoutTables` independently of `normjax.layouts`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.layouts.tables import MAX_CELLS, MAX_CHAIRS, LayoutTables, cell_codes

# A hand-made 11 x 15 layout in the docs/world.md §1 legend.  dA (5, 0), dB (10, 7),
# dC (5, 14); counter above the service cell (1, 7); queue block rows 1..5,
# columns 4..10.  TL chairs (2, 2) (2, 3) next to Q (3, 2) (3, 3); BL chairs
# (7, 2) (7, 3); BR chairs (7, 11) (7, 12); R = (6, 9) (6, 10) (6, 11).
TEST_MAP = (
    "#######K#######",
    "#.............#",
    "#.hh..........#",
    "#.qq..........#",
    "#.............#",
    "A.............C",
    "#........rrr..#",
    "#.hh.......hh.#",
    "#...o.........#",
    "#.............#",
    "#######B#######",
)

# docs/world.md §7 queue shapes as moves from the head: R/L = right/left, A = away
# (+row), T = toward the counter.  Norm order 23..38.
QUEUE_PROGRAMS = (
    "RAAAA",
    "RRAAA",
    "LAAAA",
    "LLAAA",  # bend_right_1/2, bend_left_1/2
    "RALAR",
    "RRALL",
    "LARAL",
    "LLARR",  # zigzag_right_1/2, zigzag_left_1/2
    "RARAA",
    "LALAA",  # staircase_right / left
    "AARRA",
    "AALLA",  # l_shape_right / left
    "RAALLT",
    "LAARRT",  # square_right / left (7 cells)
    "LLL",
    "RRR",  # edge_queue_left / right (4 cells)
)
_PROGRAM_STEP = {"R": (0, 1), "L": (0, -1), "A": (1, 0), "T": (-1, 0)}


# ---------------------------------------------------------------------------
# The hand-made layout, derived from docs/world.md §1 / docs/world.md §7 independently of normjax.layouts


def _cw(r, c):
    if r == 1 and c < 13:
        return (0, 1)
    if c == 13 and r < 9:
        return (1, 0)
    if r == 9 and c > 1:
        return (0, -1)
    return (-1, 0)


def _ccw(r, c):
    if c == 1 and r < 9:
        return (1, 0)
    if r == 9 and c < 13:
        return (0, 1)
    if c == 13 and r > 1:
        return (-1, 0)
    return (0, -1)


def _region(r, c, door_a, door_b):
    if r < door_a[0] and c < door_b[1]:
        return C.TL
    if r > door_a[0] and c < door_b[1]:
        return C.BL
    if r > door_a[0] and c > door_b[1]:
        return C.BR
    return -1


def _queue_path(service, program):
    cells = [tuple(service)]
    for ch in program:
        dr, dc = _PROGRAM_STEP[ch]
        cells.append((cells[-1][0] + dr, cells[-1][1] + dc))
    return cells


def map_arrays(rows=TEST_MAP) -> dict[str, np.ndarray]:
    """The norm-relevant arrays of a map, straight from docs/world.md §1 and 7."""
    chars = np.array([list(line) for line in rows])
    find = lambda ch: tuple(int(v) for v in np.argwhere(chars == ch)[0])
    doors = [find(d) for d in "ABC"]
    inward = [(doors[0][0], 1), (C.H - 2, doors[1][1]), (doors[2][0], C.W - 2)]
    service = (1, find("K")[1])
    walkable = np.isin(chars, list(".qrh"))
    rows_i, cols_i = np.indices((C.H, C.W))
    ring = walkable & (np.isin(rows_i, (1, 9)) | np.isin(cols_i, (1, 13)))
    cw = np.zeros((C.H, C.W, 2), np.int32)
    ccw = np.zeros((C.H, C.W, 2), np.int32)
    for r, c in np.argwhere(ring):
        cw[r, c], ccw[r, c] = _cw(r, c), _ccw(r, c)
    region = np.array([[_region(r, c, doors[0], doors[1]) for c in range(C.W)] for r in range(C.H)])
    paths = np.full((C.N_QUEUE_PATHS, C.MAX_QUEUE_LEN, 2), -1, np.int32)
    lengths = np.zeros(C.N_QUEUE_PATHS, np.int32)
    for p, program in enumerate(QUEUE_PROGRAMS):
        cells = _queue_path(service, program)
        paths[p, : len(cells)] = cells
        lengths[p] = len(cells)
    chairs = np.argwhere(chars == "h").astype(np.int32)  # row-major
    l2r = sorted(map(tuple, chairs), key=lambda rc: (rc[1], rc[0]))
    r2l = sorted(map(tuple, chairs), key=lambda rc: (-rc[1], rc[0]))
    return dict(
        kind=np.vectorize(C.LEGEND.__getitem__)(chars).astype(np.int8),
        walkable=walkable,
        zone_q=chars == "q",
        zone_r=chars == "r",
        chair=chars == "h",
        region=region.astype(np.int8),
        ring=ring,
        cw=cw,
        ccw=ccw,
        doors=np.array(doors, np.int32),
        door_inward=np.array(inward, np.int32),
        service=np.array(service, np.int32),
        queue_paths=paths,
        queue_len=lengths,
        chairs=chairs,
        seat_order=np.array([l2r, r2l], np.int32),
    )


def _pad(cells, size):
    out = np.full((size,) + cells.shape[1:], -1, np.int32)
    out[: len(cells)] = cells
    return out


def build_test_tables(rows=TEST_MAP) -> LayoutTables:
    """A single-layout LayoutTables for `rows`; fields norms never read are zeros."""
    a = map_arrays(rows)
    order = np.full((2, MAX_CHAIRS, 2), -1, np.int32)
    order[:, : a["seat_order"].shape[1]] = a["seat_order"]
    fields = dict(
        a,
        code=cell_codes(a["kind"], a["zone_r"], a["zone_q"]),
        chairs=_pad(a["chairs"], MAX_CHAIRS),
        n_chairs=np.int32(len(a["chairs"])),
        seat_order=order,
        r_cells=_pad(np.argwhere(a["zone_r"]).astype(np.int32), MAX_CELLS),
        n_r_cells=np.int32(a["zone_r"].sum()),
        dest_cells=np.zeros((MAX_CELLS, 2), np.int32),
        n_dest_cells=np.int32(0),
        dist=np.zeros((C.N_CELLS, C.N_CELLS), np.int16),
        dist_to_set=np.zeros((3, C.N_CELLS), np.int16),
        nearest_of_set=np.zeros((3, C.N_CELLS), np.int32),
    )
    return LayoutTables(**{k: jnp.asarray(v) for k, v in fields.items()})


def numpy_view(lt: LayoutTables) -> LayoutTables:
    """The same tables as numpy arrays (for building cases on the host)."""
    return jax.tree.map(np.asarray, lt)
