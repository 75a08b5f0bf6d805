"""Test-scenario geometry, computed once on the host (docs/world.md §9).

For every (layout, norm, newcomer group) a geometry record — the newcomer's
entry door and start cell (always that door's inward cell), its task, up to
`N_EXTRA` scripted agents and the step background agents enter from — is
computed from the planner's own distance tables (`normjax.layouts.routes`;
graph variant 0 is what the norm-blind planner walks on), then stacked into
arrays that the jittable scenario builder only gathers from (`scenario_tables`).

One candidate function per scenario kind of the norm table
(`normjax.norms.table.SCENARIO_*`) returns up to three ranked geometries; the
newcomer of group g gets the (g mod n)-th of the n found.  The "a blind
newcomer must violate" property is certified by a distance gap: the blind
planner's shortest route length d0 against the shortest route with the
violating moves removed d1 (gap = d1 - d0 > 0 means every blind shortest route
violates); for free choices, the gap between the nearest permissible and the
nearest impermissible object.  The `gap` table holds it (1 where the violation
is dynamic: turn/rhythm, queue and zone-R scenarios).  Static-norm candidates are
also checked on the rules' own move graph (`world_graph`: chairs crossable) and,
for any-chair goals, for the whole task (seat then exit); candidates failing it
are used only where none passes, flagged in the `non_discriminative` table.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from normjax import constants as C
from normjax.constants import UNREACHABLE
from normjax.layouts import Layout
from normjax.layouts.routes import V_BASE
from normjax.layouts.tables import destination_cells
from normjax.norms import table as nt
from normjax.protocol.world_graph import WorldRoutes, world_routes
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL

N_EXTRA = 3  # scripted agents a scenario may place (slots 1..3)
# Queue scenarios: the queued customer is held this many steps past the newcomer's route
# length to the counter, room for detours and yielding on the way (docs/world.md §9.3).
QUEUE_RELEASE_STEPS = 6
NEVER = 1 << 30  # a release step that never comes (holders released by cells only)


def _cell(x) -> tuple[int, int]:
    return tuple(int(v) for v in x)


@dataclasses.dataclass(frozen=True)
class Geo:
    """One layout's cells and its planner distance tables T [variant, target, from]."""

    lay: Layout
    T: np.ndarray

    @functools.cached_property
    def doors(self):
        return [_cell(x) for x in self.lay.doors]

    @functools.cached_property
    def inward(self):
        return [_cell(x) for x in self.lay.door_inward]

    @functools.cached_property
    def dests(self):
        return [_cell(x) for x in destination_cells(self.lay)]

    @functools.cached_property
    def chairs(self):
        return [_cell(x) for x in self.lay.chairs]

    def d(self, goal, start, variant=V_BASE) -> int:
        """Moves from `start` to `goal` on a planner graph variant."""
        return int(self.T[variant, goal[0] * C.W + goal[1], start[0] * C.W + start[1]])

    def nearest_door(self, cell, variant=V_BASE) -> int:
        return int(np.argmin([self.d(self.doors[i], cell, variant) for i in range(3)]))

    @functools.cached_property
    def w(self) -> WorldRoutes:
        """Route lengths on the world's move graph (chairs crossable, world_graph)."""
        return world_routes(self.lay.name)


def _rank(cands, key):
    """Up to 3 best candidates (distinct by their tag) sorted by key."""
    out, seen = [], set()
    for c in sorted(cands, key=key):
        if c["tag"] in seen:
            continue
        seen.add(c["tag"])
        out.append(c)
        if len(out) == 3:
            break
    return out


def _record(start, entry, goal_kind, goal_cell, exit_door, gap, extras=(), strict=True):
    """`strict`: the blind shortest routes violate on the world's move graph too,
    goal by goal and for the whole task (else the episode is flagged
    `non_discriminative`)."""
    return dict(
        start=start,
        entry=entry,
        goal_kind=goal_kind,
        goal_cell=goal_cell,
        exit_door=exit_door,
        gap=gap,
        extras=list(extras),
        tag=(start, goal_cell),
        strict=strict,
    )


def _by_gap(c):
    return (not c["strict"], -min(c["gap"], 3), c["d"])


def route_gap(g: Geo, row: dict, group: int) -> list[dict]:
    """Forbidden Q, circulation: start at a door, a destination that every blind
    shortest route reaches only by violating (gap between the norm's graph and
    the base graph); exit door = nearest on the norm's graph."""
    variant = int(row["route_variant"])
    cands = []
    for s_i, s in enumerate(g.inward):
        if g.lay.zone_q[s]:
            continue
        for goal in g.dests:
            a, b = g.d(goal, s), g.d(goal, s, variant)
            if a >= UNREACHABLE or b >= UNREACHABLE or b <= a:
                continue
            ex = g.nearest_door(goal, variant)
            # Goal 1 decides: a compliant exit is never shorter than a blind one.
            strict = g.w.d(goal, s, variant) > g.w.d(goal, s)
            cands.append(dict(_record(s, s_i, GOAL_CELL, goal, ex, b - a, strict=strict), d=a))
    return _rank(cands, _by_gap)


def timed(g: Geo, row: dict, group: int) -> list[dict]:
    """Turn-parity and rhythm norms: a destination 6..10 moves from the door (a blind
    agent moving on consecutive turns violates); one geometry per start door."""
    cands = []
    for s_i, s in enumerate(g.inward):
        for goal in g.dests:
            a = g.d(goal, s)
            if 6 <= a <= 10:
                cands.append(dict(_record(s, s_i, GOAL_CELL, goal, g.nearest_door(goal), 1), d=a, s_i=s_i))
    out = []
    for s_i in range(3):
        cs = sorted([c for c in cands if c["s_i"] == s_i], key=lambda c: (abs(c["d"] - 8), c["goal_cell"]))
        if cs:
            out.append(cs[0])
    return out


def visit_q(g: Geo, row: dict, group: int) -> list[dict]:
    """Visit Q first: a specified chair whose shortest route skips Q."""
    q_cells = [_cell(x) for x in np.argwhere(g.lay.zone_q)]
    cands = []
    for s_i, s in enumerate(g.inward):
        if g.lay.zone_q[s]:
            continue
        for ch in g.chairs:
            a = g.d(ch, s)
            via = min(g.d(q, s) + g.d(ch, q) for q in q_cells)
            if a >= UNREACHABLE or via <= a:
                continue
            # Rules' graph: no chair before Q (the planner graph), any route after.
            strict = min(g.d(q, s) + g.w.d(ch, q) for q in q_cells) > g.w.d(ch, s)
            cands.append(dict(_record(s, s_i, GOAL_CELL, ch, g.nearest_door(ch), via - a, strict=strict), d=a))
    return _rank(cands, _by_gap)


def door_choice(g: Geo, row: dict, group: int) -> list[dict]:
    """Free exit door (all-exit, door-forbidden, group doors): goal 1 is a chair whose
    strictly nearest door is not allowed; the newcomer enters at the door nearest it."""
    allowed = {i for i in range(3) if row["allowed_doors"][group, i]}
    cands = []
    for ch in g.chairs:
        dd = [g.d(g.doors[i], ch) for i in range(3)]
        good = min(dd[i] for i in allowed)
        bad = min(dd[i] for i in range(3) if i not in allowed)
        if good >= UNREACHABLE or bad >= good:
            continue
        dw = g.w.exit_lengths(ch)  # leaving the chair across other chairs
        strict = min(dw[i] for i in range(3) if i not in allowed) < min(dw[i] for i in allowed)
        s_i = int(np.argmin([g.d(ch, s) for s in g.inward]))
        cands.append(
            dict(
                _record(g.inward[s_i], s_i, GOAL_CELL, ch, ANY_DOOR, good - bad, strict=strict),
                d=g.d(ch, g.inward[s_i]),
            )
        )
    return _rank(cands, _by_gap)


def _door_starts(g: Geo, candidate):
    """Seat-norm candidates, one per door: `candidate(inward_cell, door)` -> record or None."""
    return [c for c in (candidate(s, s_i) for s_i, s in enumerate(g.inward)) if c is not None]


def _seat_exit(g: Geo, dch, ok_chair, seated, preferred: int) -> tuple[int, bool]:
    """(exit door, strict) of an any-chair scenario: an exit for which the best
    whole task (a free seat, then the exit, chairs crossable on the way out)
    through an allowed chair, never entering a disallowed one, is strictly longer
    than through any chair; `preferred` when it qualifies, else the largest gap."""
    bad_cells = np.zeros((C.H, C.W), bool)
    for ch, ok in zip(g.chairs, ok_chair):
        bad_cells[ch] = not ok
    seats = [(ch, d, ok) for ch, d, ok in zip(g.chairs, dch, ok_chair) if ch not in seated and d < UNREACHABLE]
    blind = [min(d + g.w.exit_lengths(ch)[e] for ch, d, _ in seats) for e in range(3)]
    comp = [min([d + g.w.exit_lengths(ch, bad_cells)[e] for ch, d, ok in seats if ok] or [10_000]) for e in range(3)]
    gaps = [c - b for c, b in zip(comp, blind)]
    if gaps[preferred] > 0 or max(gaps) <= 0:
        return preferred, gaps[preferred] > 0
    return max(range(3), key=lambda e: (gaps[e], -e)), True


def seat_region(g: Geo, row: dict, group: int) -> list[dict]:
    """Free seat under seat-region and group-seating norms: the newcomer enters at a door
    whose strictly nearest chair lies in a disallowed region.  Where no door has one,
    seated customers (held, of the newcomer's group) take the allowed chairs at least as
    near as the nearest disallowed one from the door nearest a disallowed chair."""
    ok_reg = row["allowed_regions"][group]
    region = g.lay.region
    ok_chair = [bool(region[ch] >= 0 and ok_reg[region[ch]]) for ch in g.chairs]

    def candidate(s, s_i, sit=False):
        dch = [g.d(ch, s) for ch in g.chairs]
        bad = min([d for d, o in zip(dch, ok_chair) if not o] or [10_000])
        seated = [ch for ch, d, o in zip(g.chairs, dch, ok_chair) if sit and o and d <= bad]
        free = [(d, ch) for ch, d, o in zip(g.chairs, dch, ok_chair) if o and ch not in seated]
        if bad >= UNREACHABLE or not free or len(seated) > N_EXTRA:
            return None
        good, target = min(free)
        if bad >= good:
            return None
        extras = [
            dict(pos=ch, goal_kind=GOAL_CELL, goal_cell=ch, exit_door=g.nearest_door(ch), group_off=0, hold=True)
            for ch in seated
        ]
        exit_door, strict = _seat_exit(g, dch, ok_chair, seated, g.nearest_door(target))
        return dict(_record(s, s_i, GOAL_ANY_CHAIR, (-1, -1), exit_door, good - bad, extras, strict), d=bad, tag=s)

    found = _door_starts(g, candidate)
    if not found:
        found = _door_starts(g, lambda s, s_i: candidate(s, s_i, sit=True))
        return sorted(found, key=lambda c: (not c["strict"], c["d"], len(c["extras"]), c["start"]))[:3]
    return _rank(found, _by_gap)


def seat_order(g: Geo, row: dict, group: int) -> list[dict]:
    """Seats in order: every chair nearest to the start has rank >= 3 in sigma (three
    chairs must fill before it could be the first free one)."""
    order = [_cell(x) for x in g.lay.seat_order[int(row["seat_order"])] if x[0] >= 0]
    rank = {ch: i for i, ch in enumerate(order)}

    def candidate(s, s_i):
        dch = {ch: g.d(ch, s) for ch in g.chairs}
        near = min(dch.values())
        early = min(d for ch, d in dch.items() if rank[ch] < 3)
        if near >= UNREACHABLE or early <= near:
            return None  # some chair among the first three of sigma is as near
        return dict(_record(s, s_i, GOAL_ANY_CHAIR, (-1, -1), g.nearest_door(order[0]), early - near), d=near, tag=s)

    return _rank(_door_starts(g, candidate), _by_gap)


def queue(g: Geo, row: dict, group: int) -> list[dict]:
    """Queues: the counter's head pi(1) is free, and a customer stands queued on pi(2),
    held there (it WAITs, predicted to stay) until step a + `QUEUE_RELEASE_STEPS`,
    where a is the newcomer's route length to the counter.  The tail is pi(3), so any
    newcomer that goes to the free counter cuts in, however carefully it avoids other
    agents (`blind_polite`); the oracle joins at pi(3) and steps forward once the
    customer, released, has been served on pi(2) (its goal) and left.  Background
    agents enter once it is released (`bg_from`): none can join the queue before
    the newcomer has reached it."""
    lay, j = g.lay, int(row["queue_path"])
    path = [_cell(x) for x in lay.queue_paths[j][: lay.queue_len[j]]]
    service = _cell(lay.service)
    variant = int(row["route_variant"])
    ex = g.nearest_door(service, variant)
    queued = dict(
        pos=path[1],
        goal_kind=GOAL_CELL,
        goal_cell=path[1],
        exit_door=g.nearest_door(path[1], variant),
        group_off=-1,
        hold=True,
    )
    cands = []
    for s_i, s in enumerate(g.inward):
        a = g.d(service, s)
        if a >= UNREACHABLE or s in path:
            continue
        release_t = a + QUEUE_RELEASE_STEPS
        cands.append(
            dict(
                _record(s, s_i, GOAL_CELL, service, ex, 1, [queued]),
                d=a,
                release_t=release_t,
                bg_from=release_t,
            )
        )
    return _rank(cands, lambda c: (c["d"], c["entry"]))


def zone_r(g: Geo, row: dict, group: int) -> list[dict]:
    """Zone-R capacity and single group: the newcomer enters at the door nearest R;
    holders (of another group under single_group_zone_r) fill R on its far cells."""
    r_cells = [_cell(x) for x in np.argwhere(g.lay.zone_r)]
    s_i = int(np.argmin([min(g.d(r, s) for r in r_cells) for s in g.inward]))
    s = g.inward[s_i]
    far = sorted(r_cells, key=lambda r: (-g.d(r, s), r))
    group_off = 1 if row["r_holder_other_group"] else -1
    extras = [
        dict(
            pos=cell,
            goal_kind=GOAL_ANY_R,
            goal_cell=(-1, -1),
            exit_door=g.nearest_door(cell),
            group_off=group_off,
            hold=True,
        )
        for cell in far[: int(row["r_holders"])]
    ]
    near_r = min(r_cells, key=lambda r: g.d(r, s))
    return [_record(s, s_i, GOAL_ANY_R, (-1, -1), g.nearest_door(near_r), 1, extras)]


CANDIDATES = {
    nt.SCENARIO_ROUTE_GAP: route_gap,
    nt.SCENARIO_TIMED: timed,
    nt.SCENARIO_VISIT_Q: visit_q,
    nt.SCENARIO_DOOR: door_choice,
    nt.SCENARIO_SEAT_REGION: seat_region,
    nt.SCENARIO_SEAT_ORDER: seat_order,
    nt.SCENARIO_QUEUE: queue,
    nt.SCENARIO_ZONE_R: zone_r,
}


def candidates(g: Geo, norm: int, group: int) -> list[dict]:
    """Ranked scenario geometries for one (layout, norm, newcomer group)."""
    row = nt.NORM_TABLE.row(norm)
    if int(row["scenario"]) not in CANDIDATES:
        raise ValueError(f"no scenario for norm {norm}")
    return CANDIDATES[int(row["scenario"])](g, row, group)


__all__ = ["CANDIDATES", "N_EXTRA", "NEVER", "QUEUE_RELEASE_STEPS", "Geo", "candidates"]
