"""Route lengths on the world's own move graph, for scenario construction (host, numpy).

The scripted planners walk corridors (floor) and enter chairs only as their goal
(docs/world.md §8.1), but the world's rules (§3.1) let any agent step onto a
chair and off it again.  A newcomer that plans on the rules' graph may thus
cross a chair where the planners would walk round it; a test scenario must
defeat such routes too (docs/world.md §9.3).  This module measures them:
floor and chairs are walkable, a door is entered only as a route's last cell
(stepping on it leaves the grid), and a search may forbid cells (a norm's
cells, seated customers), make cells route ends (the chairs of an any-chair
goal: the first chair entered is the seat) or restrict ring moves to one
direction (circulation norms).
"""

from __future__ import annotations

import functools
from collections import deque

import numpy as np

from normjax import constants as C
from normjax.constants import UNREACHABLE
from normjax.layouts import Layout
from normjax.layouts.routes import V_BASE, V_CCW, V_CW, V_NO_Q

_MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
VARIANTS = (V_BASE, V_NO_Q, V_CW, V_CCW)  # the route variants of the static norms


def bfs(lay: Layout, start, forbid=None, ends=None, ring_step=None) -> np.ndarray:
    """int [H, W] moves from `start` to every cell (UNREACHABLE where none) on the
    rules' graph; `forbid` cells are never entered, `ends` cells (and doors) only
    as a route's last cell; `ring_step` (int [H, W, 2], the cw or ccw steps)
    allows ring-to-ring moves only along it."""
    door = lay.kind == C.DOOR
    forbid = np.zeros_like(door) if forbid is None else forbid
    stop = door | (np.zeros_like(door) if ends is None else ends)
    dist = np.full((C.H, C.W), UNREACHABLE, np.int32)
    start = tuple(int(v) for v in start)
    dist[start] = 0
    todo = deque([start])
    while todo:
        x = todo.popleft()
        for dr, dc in _MOVES:
            y = (x[0] + dr, x[1] + dc)
            if not (0 <= y[0] < C.H and 0 <= y[1] < C.W) or dist[y] < UNREACHABLE or forbid[y]:
                continue
            if not (lay.walkable[y] or door[y]):
                continue
            if ring_step is not None and lay.ring[x] and lay.ring[y] and (dr, dc) != tuple(ring_step[x]):
                continue
            dist[y] = dist[x] + 1
            if not stop[y]:
                todo.append(y)
    return dist


def variant_search(lay: Layout, variant: int) -> dict:
    """`bfs` keyword arguments of a static route variant (docs/world.md §8.1 table)."""
    if variant == V_NO_Q:
        return dict(forbid=lay.zone_q)
    if variant in (V_CW, V_CCW):
        return dict(ring_step=lay.cw if variant == V_CW else lay.ccw)
    if variant == V_BASE:
        return {}
    raise ValueError(f"route variant {variant} has no world-graph form; valid: {VARIANTS}")


class WorldRoutes:
    """Cached `bfs` from a layout's cells: `d(goal, start, variant)` as the planner
    tables' `Geo.d`, plus free searches with forbidden cells."""

    def __init__(self, lay: Layout):
        self.lay = lay
        self._cache = {}

    def dist_from(self, start, variant: int = V_BASE) -> np.ndarray:
        key = (tuple(int(v) for v in start), variant)
        if key not in self._cache:
            self._cache[key] = bfs(self.lay, key[0], **variant_search(self.lay, variant))
        return self._cache[key]

    def d(self, goal, start, variant: int = V_BASE) -> int:
        return int(self.dist_from(start, variant)[tuple(goal)])

    def exit_lengths(self, start, forbid=None) -> list[int]:
        """Moves from `start` to each door (chairs crossable, `forbid` cells avoided)."""
        if forbid is None:
            dist = self.dist_from(start)
        else:
            key = (tuple(int(v) for v in start), forbid.tobytes())
            if key not in self._cache:
                self._cache[key] = bfs(self.lay, key[0], forbid=forbid)
            dist = self._cache[key]
        return [int(dist[tuple(d)]) for d in self.lay.doors]


@functools.cache
def world_routes(name: str) -> WorldRoutes:
    from normjax.layouts import load_layout

    return WorldRoutes(load_layout(name))


__all__ = ["VARIANTS", "WorldRoutes", "bfs", "variant_search", "world_routes"]
