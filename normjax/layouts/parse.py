"""The ten layouts and the validation cafes: parser, validator and per-layout norm features (host side, numpy).

A layout is data: an 11 x 15 text map in the legend of docs/world.md §1, stored in
`normjax/layouts/maps/<name>.txt`.  `parse_layout` validates the map against every rule of
docs/world.md §1 (`validate_grid`) and derives the arrays the norms of docs/world.md §7 need: cell kinds,
the Q / R overlays, doors and their inward cells, the service cell, chairs and seating
regions, the outer walkable ring with its clockwise / counterclockwise steps, the 16
queue paths (norms 23..38) and the two seat orders (norms 48, 49).

Decisions taken where docs/world.md §1 / 7 leave room (documented here, see the issue note):

* Validation rules run in a fixed order and the first broken rule is reported; each
  has a short id (`size`, `legend`, `border`, `doors`, `counter`, `door_inward`,
  `service_cell`, `queue_block`, `chair_region`, `region_chairs`, `zones`,
  `reachability`, `q_avoidable`, `r_avoidable`) that appears in the error message.
* A counter column outside 4..10 is a `queue_block` error (the 5x7 block would leave
  the interior).
* Reachability (docs/world.md §1 "each door has one walkable inward neighbour", docs/world.md §8 agents
  walk between any two places): paths move in 4 directions, never pass through a door
  and enter a chair only as their last cell.  Every walkable cell must be reachable
  from every door's inward cell.  So that the Q-avoiding norms (0, 22) and the R norms
  (39-41) can be followed, the same must hold with all Q cells removed (for non-Q
  cells) and with all R cells removed (for non-R cells); a door inward cell inside Q
  (or R) breaks that rule.
* Q and R are disjoint from each other and from chairs by construction (one legend
  character per cell) and from the queue block by the `queue_block` rule, so the
  `zones` rule only asks that both are non-empty.
* `region` is defined for every cell by docs/world.md §1's inequalities alone (walls included);
  cells on the row of dA, the column of dB and the top-right quadrant get -1.
* `cw` / `ccw` are given for every ring cell by docs/world.md §1's first-matching rule, even
  where the cell they point to is blocked; they are (0, 0) off the ring.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from normjax import constants as C
from normjax.layouts.geometry import (
    QUEUE_NAMES,
    ccw_step,
    cells_of,
    cw_step,
    find_one,
    inward_cell,
    queue_paths,
    region_grid,
    ring_mask,
    ring_steps,
    seat_orders,
)
from normjax.layouts.validate import _WALKABLE_CHARS, validate_grid

# The ten layouts (docs/world.md §1, paper 9.2), in benchmark order; the cafe is the seen layout.
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

# Diagnostic validation layouts (docs/world.md §1.7): modified cafes for DQN validation.
# Never test layouts; their ids follow the ten (10, 11) so that no paper id moves.
VALIDATION_LAYOUTS: tuple[str, ...] = ("cafe_rearranged", "cafe_shifted")

# Every layout with a map and tables, indexed by layout id.
ALL_LAYOUTS: tuple[str, ...] = LAYOUTS + VALIDATION_LAYOUTS

MAPS_DIR = Path(__file__).resolve().parent / "maps"


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """One parsed and validated layout (docs/world.md §1), with the norm features of docs/world.md §7.

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
    doors = np.array([find_one(grid, d) for d in C.DOOR_NAMES], dtype=np.int32)
    door_inward = np.array([inward_cell(tuple(d)) for d in doors], dtype=np.int32)
    counter = np.array(find_one(grid, "K"), dtype=np.int32)
    service = counter + np.array([1, 0], dtype=np.int32)
    chairs = np.array(cells_of(grid, "h"), dtype=np.int32).reshape(-1, 2)
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
    """Parse map text, validate it (docs/world.md §1) and derive its arrays; raises LayoutError."""
    lines = _split_lines(text)
    validate_grid(name, lines)
    return build_layout(name, lines)


def check_layout_name(name: str) -> str:
    """`name` if it is a layout; else ValueError listing the valid names (the one layout-name check)."""
    if name not in ALL_LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; valid layouts: {', '.join(ALL_LAYOUTS)}")
    return name


@functools.cache
def load_layout(name: str) -> Layout:
    """Read, validate and parse `normjax/layouts/maps/<name>.txt` (cached)."""
    check_layout_name(name)
    return parse_layout(name, (MAPS_DIR / f"{name}.txt").read_text(encoding="utf-8"))


def get_layout(name: str) -> Layout:
    """The parsed layout called `name`; ValueError listing the valid names if unknown."""
    check_layout_name(name)
    return load_layout(name)
