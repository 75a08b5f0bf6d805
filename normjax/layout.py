"""The ten layouts: parser, validator and per-layout norm features (host side, numpy).

A layout is data: an 11 x 15 text map in the legend of SPEC section 1, stored in
`normjax/maps/<name>.txt`.  `parse_layout` validates the map against every rule of
SPEC 1 (`validate_grid`) and derives the arrays the norms of SPEC 7 need: cell kinds,
the Q / R overlays, doors and their inward cells, the service cell, chairs and seating
regions, the outer walkable ring with its clockwise / counterclockwise steps, the 16
queue paths (norms 23..38) and the two seat orders (norms 48, 49).

Decisions taken where SPEC 1 / 7 leave room (documented here, see the issue note):

* Validation rules run in a fixed order and the first broken rule is reported; each
  has a short id (`size`, `legend`, `border`, `doors`, `counter`, `door_inward`,
  `service_cell`, `queue_block`, `chair_region`, `region_chairs`, `zones`,
  `reachability`, `q_avoidable`, `r_avoidable`) that appears in the error message.
* A counter column outside 4..10 is a `queue_block` error (the 5x7 block would leave
  the interior).
* Reachability (SPEC 1 "each door has one walkable inward neighbour", SPEC 8 agents
  walk between any two places): paths move in 4 directions, never pass through a door
  and enter a chair only as their last cell.  Every walkable cell must be reachable
  from every door's inward cell.  So that the Q-avoiding norms (0, 22) and the R norms
  (39-41) can be followed, the same must hold with all Q cells removed (for non-Q
  cells) and with all R cells removed (for non-R cells); a door inward cell inside Q
  (or R) breaks that rule.
* Q and R are disjoint from each other and from chairs by construction (one legend
  character per cell) and from the queue block by the `queue_block` rule, so the
  `zones` rule only asks that both are non-empty.
* `region` is defined for every cell by SPEC 1's inequalities alone (walls included);
  cells on the row of dA, the column of dB and the top-right quadrant get -1.
* `cw` / `ccw` are given for every ring cell by SPEC 1's first-matching rule, even
  where the cell they point to is blocked; they are (0, 0) off the ring.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from pathlib import Path

import numpy as np

from normjax import constants as C

# The ten layouts (SPEC 1, paper 9.2), in benchmark order; the cafe is the seen layout.
LAYOUTS: tuple[str, ...] = (
    "cafe",
    "bank",
    "barbershop",
    "clothing_store",
    "grocery_store",
    "hospital",
    "library",
    "movie_theater",
    "pharmacy",
    "post_office",
)

MAPS_DIR = Path(__file__).resolve().parent / "maps"

# Queue shapes of norms 23..38 (SPEC 7), in norm order.  Offsets are (away, right)
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
FIRST_QUEUE_NORM = 23

# Queue block (SPEC 1): rows 1..5, columns c-3..c+3 around the service column c.
QUEUE_ROWS = (1, 5)
QUEUE_HALF_WIDTH = 3

RING_ROWS = (1, C.H - 2)
RING_COLS = (1, C.W - 2)

# The wall each door sits on (SPEC 1): name -> (row or None, col or None, description).
_DOOR_WALL = {
    "A": (None, 0, "left wall (column 0)"),
    "B": (C.H - 1, None, "bottom wall (row 10)"),
    "C": (None, C.W - 1, "right wall (column 14)"),
}
_WALKABLE_CHARS = frozenset(".qrh")
_FLOOR_CHARS = frozenset(".qr")

Cell = tuple[int, int]


class LayoutError(ValueError):
    """A layout map breaks a rule of SPEC 1.

    The message names the layout, the rule id and the offending cells as (row, col).
    """

    def __init__(self, layout: str, rule: str, message: str, cells=()):
        self.layout = layout
        self.rule = rule
        self.cells = [tuple(int(v) for v in cell) for cell in cells]
        text = f"layout {layout!r} breaks rule '{rule}': {message}"
        if self.cells:
            shown = ", ".join(f"({r}, {c})" for r, c in self.cells[:12])
            more = f" and {len(self.cells) - 12} more" if len(self.cells) > 12 else ""
            text += f" at cell(s) {shown}{more}"
        super().__init__(text)


# ---------------------------------------------------------------------------
# Small grid helpers
# ---------------------------------------------------------------------------


def _cells_of(lines, chars) -> list[Cell]:
    """All cells whose character is in `chars`, row-major."""
    return [(r, c) for r, line in enumerate(lines) for c, ch in enumerate(line) if ch in chars]


def _is_border(r: int, c: int) -> bool:
    return r in (0, C.H - 1) or c in (0, C.W - 1)


def _is_corner(r: int, c: int) -> bool:
    return r in (0, C.H - 1) and c in (0, C.W - 1)


def _neighbours(r: int, c: int):
    for dr, dc in C.ACTION_DELTAS[:4]:
        rr, cc = r + int(dr), c + int(dc)
        if 0 <= rr < C.H and 0 <= cc < C.W:
            yield rr, cc


def _inward(door: Cell) -> Cell:
    """The one interior neighbour of a (non-corner) border door cell (SPEC 1)."""
    r, c = door
    return (min(max(r, 1), C.H - 2), min(max(c, 1), C.W - 2))


def _find_one(lines, ch: str) -> Cell:
    return _cells_of(lines, ch)[0]


def region_of(r: int, c: int, door_a: Cell, door_b: Cell) -> int:
    """Seating region of a cell by SPEC 1's inequalities (TL / BL / BR, or -1)."""
    row_a, col_b = door_a[0], door_b[1]
    if r < row_a and c < col_b:
        return C.TL
    if r > row_a and c < col_b:
        return C.BL
    if r > row_a and c > col_b:
        return C.BR
    return -1


def queue_block_cells(counter_col: int) -> list[Cell]:
    """Cells of the 5x7 queue block (SPEC 1) around service column `counter_col`."""
    r0, r1 = QUEUE_ROWS
    return [
        (r, c)
        for r in range(r0, r1 + 1)
        for c in range(counter_col - QUEUE_HALF_WIDTH, counter_col + QUEUE_HALF_WIDTH + 1)
    ]


def reachable_from(start: Cell, passable: np.ndarray, enterable: np.ndarray) -> np.ndarray:
    """Cells reachable from `start` (SPEC 1 reachability rule), bool [H, W].

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
        for nxt in _neighbours(*cell):
            if enterable[nxt] and not seen[nxt]:
                seen[nxt] = True
                frontier.append(nxt)
    return seen


# ---------------------------------------------------------------------------
# Validation rules (SPEC 1), one function per rule, run in order
# ---------------------------------------------------------------------------


def _check_size(name, lines):
    """Rule `size`: exactly 11 lines of 15 characters."""
    if len(lines) != C.H:
        raise LayoutError(name, "size", f"expected {C.H} lines, got {len(lines)}")
    bad = [(r, len(line)) for r, line in enumerate(lines) if len(line) != C.W]
    if bad:
        rows = ", ".join(f"line {r} has {n}" for r, n in bad)
        raise LayoutError(name, "size", f"every line must have {C.W} characters ({rows})")


def _check_legend(name, lines):
    """Rule `legend`: only the characters of SPEC 1's legend."""
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch not in C.LEGEND:
                allowed = " ".join(C.LEGEND)
                raise LayoutError(
                    name, "legend", f"unknown character {ch!r}; allowed legend: {allowed}", [(r, c)]
                )


def _allowed_on_border(r: int, c: int) -> set[str]:
    if _is_corner(r, c):
        return {"#"}
    if r == 0:
        return {"#", "K"}
    if c == 0:
        return {"#", "A"}
    if r == C.H - 1:
        return {"#", "B"}
    return {"#", "C"}


def _check_border(name, lines):
    """Rule `border`: the outer frame is wall, except K on top, A left, B bottom, C right."""
    bad = [
        (r, c)
        for r, line in enumerate(lines)
        for c, ch in enumerate(line)
        if _is_border(r, c) and ch not in _allowed_on_border(r, c)
    ]
    if bad:
        raise LayoutError(
            name,
            "border",
            "border cells must be '#' (one 'K' in row 0, door A in column 0, "
            "B in row 10, C in column 14; corners are walls)",
            bad,
        )


def _check_doors(name, lines):
    """Rule `doors`: exactly one A (left wall), one B (bottom wall), one C (right wall)."""
    for door, (row, col, wall) in _DOOR_WALL.items():
        cells = _cells_of(lines, door)
        if len(cells) != 1:
            raise LayoutError(name, "doors", f"expected exactly one door {door}, found {len(cells)}", cells)
        r, c = cells[0]
        if (row is not None and r != row) or (col is not None and c != col):
            raise LayoutError(name, "doors", f"door {door} must be on the {wall}", cells)


def _check_counter(name, lines):
    """Rule `counter`: exactly one K, in the top wall (row 0)."""
    cells = _cells_of(lines, "K")
    if len(cells) != 1:
        raise LayoutError(name, "counter", f"expected exactly one counter K, found {len(cells)}", cells)
    if cells[0][0] != 0:
        raise LayoutError(name, "counter", "the counter K must be in the top wall (row 0)", cells)


def _check_door_inward(name, lines):
    """Rule `door_inward`: each door's inward neighbour is walkable and not a chair."""
    for door in "ABC":
        r, c = _inward(_find_one(lines, door))
        ch = lines[r][c]
        if ch not in _FLOOR_CHARS:
            raise LayoutError(
                name, "door_inward", f"door {door}'s inward cell must be walkable floor, not {ch!r}", [(r, c)]
            )


def _check_service_cell(name, lines):
    """Rule `service_cell`: the cell below K is walkable floor."""
    _, kc = _find_one(lines, "K")
    ch = lines[1][kc]
    if ch not in _FLOOR_CHARS:
        raise LayoutError(name, "service_cell", f"the cell below K must be floor, not {ch!r}", [(1, kc)])


def _check_queue_block(name, lines):
    """Rule `queue_block`: rows 1..5, columns c-3..c+3 lie inside and are plain '.' floor."""
    _, kc = _find_one(lines, "K")
    lo, hi = kc - QUEUE_HALF_WIDTH, kc + QUEUE_HALF_WIDTH
    if lo < 1 or hi > C.W - 2:
        raise LayoutError(
            name,
            "queue_block",
            f"counter column {kc} puts the 5x7 queue block (columns {lo}..{hi}) outside the "
            f"interior; K's column must be in {1 + QUEUE_HALF_WIDTH}..{C.W - 2 - QUEUE_HALF_WIDTH}",
            [(0, kc)],
        )
    bad = [(r, c) for r, c in queue_block_cells(kc) if lines[r][c] != "."]
    if bad:
        raise LayoutError(name, "queue_block", "the queue block must be plain '.' floor", bad)


def _doors_ab(lines) -> tuple[Cell, Cell]:
    return _find_one(lines, "A"), _find_one(lines, "B")


def _check_chair_region(name, lines):
    """Rule `chair_region`: every chair lies in TL, BL or BR."""
    door_a, door_b = _doors_ab(lines)
    bad = [cell for cell in _cells_of(lines, "h") if region_of(*cell, door_a, door_b) < 0]
    if bad:
        raise LayoutError(
            name,
            "chair_region",
            "chairs must lie in TL, BL or BR (not on dA's row, dB's column or top-right)",
            bad,
        )


def _check_region_chairs(name, lines):
    """Rule `region_chairs`: each of TL, BL, BR holds at least two chairs."""
    door_a, door_b = _doors_ab(lines)
    chairs = _cells_of(lines, "h")
    for region, region_name in enumerate(C.REGION_NAMES):
        inside = [cell for cell in chairs if region_of(*cell, door_a, door_b) == region]
        if len(inside) < 2:
            raise LayoutError(
                name, "region_chairs", f"region {region_name} holds {len(inside)} chair(s), needs >= 2", inside
            )


def _check_zones(name, lines):
    """Rule `zones`: zone Q ('q') and zone R ('r') are both non-empty."""
    for ch, zone in (("q", "Q"), ("r", "R")):
        if not _cells_of(lines, ch):
            raise LayoutError(name, "zones", f"zone {zone} is empty (mark it with '{ch}')")


def _masks(lines, removed: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(passable, enterable) masks for reachability, with cells of `removed` blocked."""
    grid = np.array([list(line) for line in lines])
    enterable = np.isin(grid, list(_WALKABLE_CHARS - set(removed)))
    passable = enterable & (grid != "h")
    return passable, enterable


def _check_reachable(name, lines, rule: str, removed: str = ""):
    """Every walkable (non-removed) cell is reachable from every door's inward cell."""
    passable, enterable = _masks(lines, removed)
    for door in "ABC":
        start = _inward(_find_one(lines, door))
        if not enterable[start]:
            raise LayoutError(name, rule, f"door {door}'s inward cell lies in the removed zone", [start])
        missing = np.argwhere(enterable & ~reachable_from(start, passable, enterable))
        if len(missing):
            what = f" with zone {removed.upper()} removed" if removed else ""
            raise LayoutError(
                name, rule, f"cells unreachable from door {door}'s inward cell {start}{what}", missing
            )


def _check_reachability(name, lines):
    """Rule `reachability`: all walkable cells reachable from every door."""
    _check_reachable(name, lines, "reachability")


def _check_q_avoidable(name, lines):
    """Rule `q_avoidable`: with Q removed, all other walkable cells stay reachable."""
    _check_reachable(name, lines, "q_avoidable", removed="q")


def _check_r_avoidable(name, lines):
    """Rule `r_avoidable`: with R removed, all other walkable cells stay reachable."""
    _check_reachable(name, lines, "r_avoidable", removed="r")


VALIDATION_RULES = (
    ("size", _check_size),
    ("legend", _check_legend),
    ("border", _check_border),
    ("doors", _check_doors),
    ("counter", _check_counter),
    ("door_inward", _check_door_inward),
    ("service_cell", _check_service_cell),
    ("queue_block", _check_queue_block),
    ("chair_region", _check_chair_region),
    ("region_chairs", _check_region_chairs),
    ("zones", _check_zones),
    ("reachability", _check_reachability),
    ("q_avoidable", _check_q_avoidable),
    ("r_avoidable", _check_r_avoidable),
)


def validate_grid(name: str, lines) -> None:
    """Check a map (a sequence of 11 strings) against every rule of SPEC 1.

    Raises `LayoutError` naming the first broken rule and its cells.
    """
    lines = list(lines)
    for _, check in VALIDATION_RULES:
        check(name, lines)


# ---------------------------------------------------------------------------
# Derived arrays (SPEC 1 and 7)
# ---------------------------------------------------------------------------


def ring_mask(walkable: np.ndarray) -> np.ndarray:
    """Outer walkable ring (SPEC 1): walkable cells in row 1, row 9, column 1 or 13."""
    rows, cols = np.indices((C.H, C.W))
    on_lines = np.isin(rows, RING_ROWS) | np.isin(cols, RING_COLS)
    return walkable & on_lines


def cw_step(r: int, c: int) -> tuple[int, int]:
    """Clockwise step of a ring cell (SPEC 1, first matching rule)."""
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
    """Counterclockwise step of a ring cell (SPEC 1, first matching rule)."""
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
    """int8 [H, W] seating region of every cell (SPEC 1 inequalities; -1 = none)."""
    out = np.empty((C.H, C.W), dtype=np.int8)
    for r in range(C.H):
        for c in range(C.W):
            out[r, c] = region_of(r, c, door_a, door_b)
    return out


def queue_paths(service: Cell) -> tuple[np.ndarray, np.ndarray]:
    """Queue paths of norms 23..38 (SPEC 7): int32 [16, 7, 2] (-1 padded), int32 [16]."""
    paths = np.full((C.N_QUEUE_PATHS, C.MAX_QUEUE_LEN, 2), -1, dtype=np.int32)
    lengths = np.zeros(C.N_QUEUE_PATHS, dtype=np.int32)
    sr, sc = service
    for i, offsets in enumerate(QUEUE_SHAPES.values()):
        paths[i, : len(offsets)] = [(sr + away, sc + right) for away, right in offsets]
        lengths[i] = len(offsets)
    return paths, lengths


def seat_orders(chairs: np.ndarray) -> np.ndarray:
    """Seat orders sigma of norms 48 / 49 (SPEC 7): int32 [2, NC, 2].

    [0] l2r: columns left to right, top to bottom within a column;
    [1] r2l: columns right to left, top to bottom within a column.
    """
    chairs = np.asarray(chairs, dtype=np.int32).reshape(-1, 2)
    l2r = chairs[np.lexsort((chairs[:, 0], chairs[:, 1]))]
    r2l = chairs[np.lexsort((chairs[:, 0], -chairs[:, 1]))]
    return np.stack([l2r, r2l]).astype(np.int32)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """One parsed and validated layout (SPEC 1), with the norm features of SPEC 7.

    All arrays are numpy (host side) and read-only.  Equality and hashing are by
    identity (`eq=False`): layouts are cached singletons, and numpy fields cannot be
    compared as a tuple.
    """

    name: str
    grid: tuple[str, ...]
    kind: np.ndarray  # int8 [H, W], codes from constants (q / r cells are FLOOR)
    zone_q: np.ndarray  # bool [H, W]
    zone_r: np.ndarray  # bool [H, W]
    walkable: np.ndarray  # bool [H, W]: floor (incl. Q / R) and chairs
    doors: np.ndarray  # int32 [3, 2]: dA, dB, dC
    door_inward: np.ndarray  # int32 [3, 2]
    counter: np.ndarray  # int32 [2]
    service: np.ndarray  # int32 [2]
    chairs: np.ndarray  # int32 [NC, 2], row-major
    region: np.ndarray  # int8 [H, W]: TL / BL / BR or -1
    ring: np.ndarray  # bool [H, W]
    cw: np.ndarray  # int8 [H, W, 2]
    ccw: np.ndarray  # int8 [H, W, 2]
    queue_paths: np.ndarray  # int32 [16, 7, 2], -1 padded, norms 23..38
    queue_len: np.ndarray  # int32 [16]
    seat_order: np.ndarray  # int32 [2, NC, 2]: l2r, r2l

    def ascii(self) -> str:
        """The map as text (the 11 legend strings joined by newlines)."""
        return "\n".join(self.grid)

    @property
    def n_chairs(self) -> int:
        return int(self.chairs.shape[0])

    def queue_path(self, queue_name: str) -> np.ndarray:
        """The cells of one queue path by norm name (e.g. 'square_left'), head first."""
        i = QUEUE_NAMES.index(queue_name)
        return self.queue_paths[i, : self.queue_len[i]]


def _split_lines(text: str) -> list[str]:
    """Map text -> lines; a trailing newline and '\\r' line endings are ignored."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def build_layout(name: str, lines) -> Layout:
    """Arrays of a map that already passed `validate_grid`."""
    grid = tuple(lines)
    chars = np.array([list(line) for line in grid])
    kind = np.vectorize(C.LEGEND.__getitem__, otypes=[np.int8])(chars)
    walkable = np.isin(chars, list(_WALKABLE_CHARS))
    doors = np.array([_find_one(grid, d) for d in C.DOOR_NAMES], dtype=np.int32)
    door_inward = np.array([_inward(tuple(d)) for d in doors], dtype=np.int32)
    counter = np.array(_find_one(grid, "K"), dtype=np.int32)
    service = counter + np.array([1, 0], dtype=np.int32)
    chairs = np.array(_cells_of(grid, "h"), dtype=np.int32).reshape(-1, 2)
    ring = ring_mask(walkable)
    paths, lengths = queue_paths(tuple(service))
    arrays = dict(
        kind=kind,
        zone_q=chars == "q",
        zone_r=chars == "r",
        walkable=walkable,
        doors=doors,
        door_inward=door_inward,
        counter=counter,
        service=service,
        chairs=chairs,
        region=region_grid(tuple(doors[0]), tuple(doors[1])),
        ring=ring,
        cw=ring_steps(ring, cw_step),
        ccw=ring_steps(ring, ccw_step),
        queue_paths=paths,
        queue_len=lengths,
        seat_order=seat_orders(chairs),
    )
    return Layout(name=name, grid=grid, **{k: _readonly(v) for k, v in arrays.items()})


def parse_layout(name: str, text: str) -> Layout:
    """Parse map text, validate it (SPEC 1) and derive its arrays; raises LayoutError."""
    lines = _split_lines(text)
    validate_grid(name, lines)
    return build_layout(name, lines)


def _check_name(name: str) -> None:
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; valid layouts: {', '.join(LAYOUTS)}")


@functools.lru_cache(maxsize=None)
def load_layout(name: str) -> Layout:
    """Read, validate and parse `normjax/maps/<name>.txt` (cached)."""
    _check_name(name)
    return parse_layout(name, (MAPS_DIR / f"{name}.txt").read_text(encoding="utf-8"))


def get_layout(name: str) -> Layout:
    """The parsed layout called `name`; ValueError listing the valid names if unknown."""
    _check_name(name)
    return load_layout(name)
