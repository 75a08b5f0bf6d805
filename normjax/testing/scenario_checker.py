"""An independent check of the test scenarios' promise (docs/world.md §9.3, issue 33).

For a test episode whose norm depends only on cells, doors, seats or ring direction
(the static norms: 0-13, 22, 42-47), a norm-blind newcomer that takes a shortest
route for its task must violate the norm.  This module checks it with its own code:
it reads the text maps itself, states the norms from docs/world.md §7.2 itself and
searches the move graph of the world's rules (§3.1): floor and chairs are walkable
(chairs can be crossed), walls, counter and obstacles are not, and a door is entered
only as the last cell of a route (stepping on it leaves the grid).  Only the
episode's placement (start, goals, seated holders) is taken from the scenario
tables, since that is what is under test.

Route rules per leg (§5):
* leg 0, goal 1: a specified cell, or any chair (then the first chair entered is the
  goal, so chairs are route ends only); no door may be entered;
* leg 1, goal 2: a specified door or any door; chairs are crossable.
Seated holders (§9.3) stand still until the newcomer sits: their chairs are blocked
in leg 0 and the holders are treated as gone in leg 1.  Other agents are absent.

An episode is **discriminative** when no blind shortest route complies, both
* goal by goal: among the blind-nearest goal-1 cells, none is reachable by a
  compliant route of the same length from which a compliant shortest exit exists, and
* for the whole task: the shortest compliant task (goal 1 then goal 2) is strictly
  longer than the shortest task, or impossible.
"""

from __future__ import annotations

import functools
from collections import deque
from pathlib import Path

import numpy as np

import normjax

MAPS = Path(normjax.__file__).resolve().parent / "layouts" / "maps"
INF = 10_000
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
A, B, CC = 0, 1, 2  # door indices
TL, BL, BR = 0, 1, 2  # seat regions
ORANGE, GREEN, BLUE = 0, 1, 2

# docs/world.md §7.2, restated: norm id -> (kind, data).
_DOOR_SETS = {1: {A}, 2: {B}, 3: {CC}, 4: {B, CC}, 5: {A, CC}, 6: {A, B}}
_REGION_SETS = {7: {BL}, 8: {TL}, 9: {BR}, 10: {TL, BR}, 11: {TL, BL}}
_GROUP_DOORS = {42: (A, B, CC), 43: (B, CC, A), 44: (CC, A, B)}  # door of orange, green, blue
_GROUP_SEATS = {45: (TL, BL, BR), 46: (BL, BR, TL), 47: (BR, TL, BL)}
STATIC_NORMS = (*range(0, 14), 22, *range(42, 48))
# docs/world.md §5.1: (goal 1, goal 2) task types.
_ANY_CHAIR_GOAL = {*range(7, 12), 45, 46, 47}
_ANY_DOOR_EXIT = {*range(1, 7), 42, 43, 44}


@functools.cache
def load_map(name: str) -> Room:
    return Room(name, (MAPS / f"{name}.txt").read_text().splitlines())


class Room:
    """One layout read from its text map (docs/world.md §1.1)."""

    def __init__(self, name: str, lines: list[str]):
        self.name = name
        self.g = np.array([list(row) for row in lines])
        h, w = self.g.shape
        self.h, self.w = h, w
        self.walk = np.isin(self.g, list(".hqr"))
        self.chair = self.g == "h"
        self.q = self.g == "q"
        self.doors = [tuple(int(v) for v in np.argwhere(self.g == d)[0]) for d in "ABC"]
        ra, cb = self.doors[A][0], self.doors[B][1]
        rr, cc = np.mgrid[0:h, 0:w]
        self.region = np.full((h, w), -1)
        self.region[(rr < ra) & (cc < cb)] = TL
        self.region[(rr > ra) & (cc < cb)] = BL
        self.region[(rr > ra) & (cc > cb)] = BR
        self.ring = self.walk & ((rr == 1) | (rr == h - 2) | (cc == 1) | (cc == w - 2))

    def door_at(self, cell) -> int:
        return self.doors.index(cell) if cell in self.doors else -1

    def cw(self, r, c):
        if r == 1 and c < self.w - 2:
            return (0, 1)
        if c == self.w - 2 and r < self.h - 2:
            return (1, 0)
        if r == self.h - 2 and c > 1:
            return (0, -1)
        return (-1, 0)

    def ccw(self, r, c):
        if c == 1 and r < self.h - 2:
            return (1, 0)
        if r == self.h - 2 and c < self.w - 2:
            return (0, 1)
        if c == self.w - 2 and r > 1:
            return (-1, 0)
        return (0, -1)


def violates(room: Room, norm: int, group: int, x, y, visited_q: bool) -> bool:
    """Whether the move x -> y breaks a static norm (visited_q: stood in Q before y)."""
    d = room.door_at(y)
    if norm == 0:
        return bool(room.q[y])
    if norm in _DOOR_SETS:
        return d >= 0 and d not in _DOOR_SETS[norm]
    if norm in _GROUP_DOORS:
        return d >= 0 and d != _GROUP_DOORS[norm][group]
    if norm in _REGION_SETS or norm in _GROUP_SEATS:
        ok = _REGION_SETS[norm] if norm in _REGION_SETS else {_GROUP_SEATS[norm][group]}
        return bool(room.chair[y]) and int(room.region[y]) not in ok
    if norm in (12, 13):
        if not (room.ring[x] and d < 0 and room.ring[y]):
            return False
        step = room.cw(*x) if norm == 12 else room.ccw(*x)
        return y != (x[0] + step[0], x[1] + step[1])
    if norm == 22:
        return bool(room.chair[y]) and not visited_q
    raise ValueError(f"norm {norm} is not static; static norms: {STATIC_NORMS}")


def bfs(
    room: Room,
    start,
    norm: int | None,
    group: int,
    leg: int,
    any_chair: bool,
    blocked=frozenset(),
    visited0: bool = False,
) -> dict:
    """Shortest moves from `start` to every cell: {(cell, visited_q): moves}.  `norm`
    None = norm-blind.  Doors and (leg 0 with an any-chair goal) chairs end routes."""
    s0 = (start, visited0 or bool(room.q[start]))
    dist = {s0: 0}
    todo = deque([s0])
    while todo:
        x, v = todo.popleft()
        for dr, dc in MOVES:
            y = (x[0] + dr, x[1] + dc)
            if not (0 <= y[0] < room.h and 0 <= y[1] < room.w) or y in blocked:
                continue
            is_door = room.door_at(y) >= 0
            if not (room.walk[y] or is_door):
                continue
            if norm is not None and violates(room, norm, group, x, y, v):
                continue
            key = (y, v or bool(room.q[y]))
            if key in dist:
                continue
            dist[key] = dist[(x, v)] + 1
            end = is_door or (leg == 0 and any_chair and room.chair[y])
            if not end:
                todo.append(key)
    return dist


def _to(dist: dict, cells, need_q: bool = False) -> dict:
    """{cell: moves} of the cells in `cells` (over both Q flags unless need_q)."""
    out = {}
    for (c, v), d in dist.items():
        if c in cells and (v or not need_q):
            out[c] = min(out.get(c, INF), d)
    return out


def check_episode(layout: str, norm: int, group: int, start, goal_cell, exit_door: int, holders=()) -> dict:
    """Route lengths of one static-norm episode and whether it is discriminative."""
    room = load_map(layout)
    start, holders = tuple(start), frozenset(tuple(h) for h in holders)
    any_chair, any_door = norm in _ANY_CHAIR_GOAL, norm in _ANY_DOOR_EXIT
    if any_chair:
        goals1 = {tuple(int(v) for v in c) for c in np.argwhere(room.chair)} - holders
    else:
        goals1 = {tuple(goal_cell)}
    goals2 = set(room.doors) if any_door else {room.doors[exit_door]}
    need_q = norm == 22  # a compliant seat goal is only reached having stood in Q
    b0 = _to(bfs(room, start, None, group, 0, any_chair, holders), goals1)
    c0 = _to(bfs(room, start, norm, group, 0, any_chair, holders), goals1, need_q)

    def exit_len(g1, compliant: bool) -> int:
        dist = bfs(room, g1, norm if compliant else None, group, 1, False, visited0=compliant and need_q)
        return min(_to(dist, goals2).values(), default=INF)

    blind1 = min(b0.values(), default=INF)
    blind_task = min((d + exit_len(g, False) for g, d in b0.items()), default=INF)
    comp_task = min((d + exit_len(g, True) for g, d in c0.items()), default=INF)
    nearest = [g for g, d in b0.items() if d == blind1]
    # Goal by goal: a blind-nearest goal 1 reached compliantly at the same length,
    # then a compliant exit as short as the blind one from there.
    by_goal = any(c0.get(g, INF) == blind1 and exit_len(g, True) == exit_len(g, False) < INF for g in nearest)
    whole = comp_task <= blind_task < INF
    return dict(
        blind_goal1=blind1,
        compliant_goal1=min(c0.values(), default=INF),
        blind_task=blind_task,
        compliant_task=comp_task if comp_task < INF else None,
        complies_goal_by_goal=bool(by_goal),
        complies_whole_task=bool(whole),
        discriminative=not (by_goal or whole),
    )


def check_protocol(norm_ids=STATIC_NORMS) -> list[dict]:
    """check_episode for every protocol test episode of the given static norms,
    placement read from the scenario tables (what `build_test_episode` gathers)."""
    from normjax.protocol.scenario_tables import host_scenarios
    from normjax.protocol.seeds import test_episodes

    t = host_scenarios()
    rows = []
    for e in test_episodes(list(norm_ids)):
        ix = (e["layout_id"], e["norm_id"], e["group"])
        used = t["x_used"][ix] & t["x_hold"][ix]
        res = check_episode(
            e["layout"],
            e["norm_id"],
            e["group"],
            t["start"][ix].tolist(),
            t["goal_cell"][ix].tolist(),
            int(t["exit_door"][ix]),
            [p.tolist() for p in t["x_pos"][ix][used]],
        )
        rows.append(
            dict(
                norm_id=e["norm_id"],
                norm=e["norm"],
                condition=e["condition"],
                episode=e["episode"],
                layout=e["layout"],
                group=e["group"],
                **res,
            )
        )
    return rows


__all__ = ["STATIC_NORMS", "check_episode", "check_protocol", "load_map", "violates"]
