"""The layout validator: one named rule per function, run in order (docs/world.md §1).

`validate_grid(name, lines)` raises `LayoutError` naming the first broken rule
(`size`, `legend`, `border`, `doors`, `counter`, `door_inward`, `service_cell`,
`queue_block`, `chair_region`, `region_chairs`, `zones`, `reachability`,
`q_avoidable`, `r_avoidable`) and the offending cells.
"""

from __future__ import annotations

import numpy as np

from normjax import constants as C
from normjax.layouts.geometry import (
    QUEUE_HALF_WIDTH,
    Cell,
    cells_of,
    find_one,
    inward_cell,
    is_border,
    is_corner,
    queue_block_cells,
    reachable_from,
    region_of,
)

# The wall each door sits on (docs/world.md §1): name -> (row or None, col or None, description).
_DOOR_WALL = {
    "A": (None, 0, "left wall (column 0)"),
    "B": (C.H - 1, None, "bottom wall (row 10)"),
    "C": (None, C.W - 1, "right wall (column 14)"),
}
_WALKABLE_CHARS = frozenset(".qrh")
_FLOOR_CHARS = frozenset(".qr")


class LayoutError(ValueError):
    """A layout map breaks a rule of docs/world.md §1.

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
# Validation rules (docs/world.md §1), one function per rule, run in order
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
    """Rule `legend`: only the characters of docs/world.md §1's legend."""
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch not in C.LEGEND:
                allowed = " ".join(C.LEGEND)
                raise LayoutError(name, "legend", f"unknown character {ch!r}; allowed legend: {allowed}", [(r, c)])


def _allowed_on_border(r: int, c: int) -> set[str]:
    if is_corner(r, c):
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
        if is_border(r, c) and ch not in _allowed_on_border(r, c)
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
        cells = cells_of(lines, door)
        if len(cells) != 1:
            raise LayoutError(name, "doors", f"expected exactly one door {door}, found {len(cells)}", cells)
        r, c = cells[0]
        if (row is not None and r != row) or (col is not None and c != col):
            raise LayoutError(name, "doors", f"door {door} must be on the {wall}", cells)


def _check_counter(name, lines):
    """Rule `counter`: exactly one K, in the top wall (row 0)."""
    cells = cells_of(lines, "K")
    if len(cells) != 1:
        raise LayoutError(name, "counter", f"expected exactly one counter K, found {len(cells)}", cells)
    if cells[0][0] != 0:
        raise LayoutError(name, "counter", "the counter K must be in the top wall (row 0)", cells)


def _check_door_inward(name, lines):
    """Rule `door_inward`: each door's inward neighbour is walkable and not a chair."""
    for door in "ABC":
        r, c = inward_cell(find_one(lines, door))
        ch = lines[r][c]
        if ch not in _FLOOR_CHARS:
            raise LayoutError(
                name, "door_inward", f"door {door}'s inward cell must be walkable floor, not {ch!r}", [(r, c)]
            )


def _check_service_cell(name, lines):
    """Rule `service_cell`: the cell below K is walkable floor."""
    _, kc = find_one(lines, "K")
    ch = lines[1][kc]
    if ch not in _FLOOR_CHARS:
        raise LayoutError(name, "service_cell", f"the cell below K must be floor, not {ch!r}", [(1, kc)])


def _check_queue_block(name, lines):
    """Rule `queue_block`: rows 1..5, columns c-3..c+3 lie inside and are plain '.' floor."""
    _, kc = find_one(lines, "K")
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
    return find_one(lines, "A"), find_one(lines, "B")


def _check_chair_region(name, lines):
    """Rule `chair_region`: every chair lies in TL, BL or BR."""
    door_a, door_b = _doors_ab(lines)
    bad = [cell for cell in cells_of(lines, "h") if region_of(*cell, door_a, door_b) < 0]
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
    chairs = cells_of(lines, "h")
    for region, region_name in enumerate(C.REGION_NAMES):
        inside = [cell for cell in chairs if region_of(*cell, door_a, door_b) == region]
        if len(inside) < 2:
            raise LayoutError(
                name, "region_chairs", f"region {region_name} holds {len(inside)} chair(s), needs >= 2", inside
            )


def _check_zones(name, lines):
    """Rule `zones`: zone Q ('q') and zone R ('r') are both non-empty."""
    for ch, zone in (("q", "Q"), ("r", "R")):
        if not cells_of(lines, ch):
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
        start = inward_cell(find_one(lines, door))
        if not enterable[start]:
            raise LayoutError(name, rule, f"door {door}'s inward cell lies in the removed zone", [start])
        missing = np.argwhere(enterable & ~reachable_from(start, passable, enterable))
        if len(missing):
            what = f" with zone {removed.upper()} removed" if removed else ""
            raise LayoutError(name, rule, f"cells unreachable from door {door}'s inward cell {start}{what}", missing)


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
    """Check a map (a sequence of 11 strings) against every rule of docs/world.md §1.

    Raises `LayoutError` naming the first broken rule and its cells.
    """
    lines = list(lines)
    for _, check in VALIDATION_RULES:
        check(name, lines)
