"""Test data for the norm predicates (docs/world.md §7): geometry helpers, table-driven
cases for all 50 norms and a plain-Python reference (the hand-made layout `TEST_MAP` is
built in `tests/support/norm_layout.py`).

Cases are functions of a layout (numpy view of `LayoutTables`), written in
terms of layout features (a door's inward cell, a chair of a region, the
queue path of a norm, ...), so the same table runs on the hand-made
`TEST_MAP` and on the real layouts.  A few edge cases need geometry only
`TEST_MAP` has (a chair next to Q, the ring corners) and are marked
`test_map_only`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.norms import registry as reg
from tests.support.norm_layout import (  # noqa: F401 (re-exported: the tests use NC.build_test_tables etc.)
    TEST_MAP,
    build_test_tables,
    map_arrays,
    numpy_view,
)

K = 6  # agent slots in every test state
UP, DOWN, LEFT, RIGHT, WAIT = C.UP, C.DOWN, C.LEFT, C.RIGHT, C.WAIT
_DELTA_TO_ACTION = {(-1, 0): UP, (1, 0): DOWN, (0, -1): LEFT, (0, 1): RIGHT}

# ---------------------------------------------------------------------------
# States


@dataclasses.dataclass
class Agent:
    pos: tuple[int, int]
    action: int = WAIT
    group: int = 0
    moves: tuple[bool, bool, bool] = (False, False, False)
    visited_q: bool = False
    active: bool = True


@dataclasses.dataclass
class Scenario:
    """A state and one action per agent; agent 0 is the mover under test."""

    agents: list[Agent]
    t: int = 0

    def arrays(self, k: int = K):
        """(t, pos, active, action, group, moves, visited_q) padded to k slots."""
        pad = [Agent(pos=(0, 0), active=False)] * (k - len(self.agents))
        ags = list(self.agents) + pad
        return (
            jnp.int32(self.t),
            jnp.asarray([a.pos for a in ags], jnp.int32),
            jnp.asarray([a.active for a in ags], bool),
            jnp.asarray([a.action for a in ags], jnp.int32),
            jnp.asarray([a.group for a in ags], jnp.int32),
            jnp.asarray([a.moves for a in ags], bool),
            jnp.asarray([a.visited_q for a in ags], bool),
        )


def cell(a) -> tuple[int, int]:
    return (int(a[0]), int(a[1]))


def step_action(src, dst) -> int:
    """The action moving from src to the 4-adjacent dst."""
    return _DELTA_TO_ACTION[(dst[0] - src[0], dst[1] - src[1])]


def neighbours(c):
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, cc = c[0] + dr, c[1] + dc
        if 0 <= r < C.H and 0 <= cc < C.W:
            yield (r, cc)


def entry(lay, dst, ok: Callable = lambda c: True):
    """A walkable non-chair neighbour of dst satisfying ok (first in U/D/L/R order)."""
    for n in neighbours(dst):
        if lay.walkable[n] and not lay.chair[n] and ok(n):
            return n
    raise LookupError(f"no entry cell next to {dst}")


def move_into(lay, dst, ok: Callable = lambda c: True, **kw) -> Agent:
    """An agent one step from dst, moving into it."""
    src = entry(lay, dst, ok)
    return Agent(pos=src, action=step_action(src, dst), **kw)


def exit_via(lay, door: int, **kw) -> Agent:
    """An agent on a door's inward cell, stepping out through the door."""
    src, dst = cell(lay.door_inward[door]), cell(lay.doors[door])
    return Agent(pos=src, action=step_action(src, dst), **kw)


def plain_move(lay, **kw) -> Agent:
    """A move that touches nothing norms care about: (4, c) -> (5, c) under the
    service column c is plain floor of the queue block, on no queue path and off
    the ring, Q, R, chairs and doors (docs/world.md §1 queue block)."""
    sr, sc = cell(lay.service)
    return Agent(pos=(4, sc), action=DOWN, **kw)


def region_chairs(lay, region):
    return [cell(c) for c in np.argwhere(lay.chair & (lay.region == region))]


def sit(lay, region, **kw) -> Agent:
    """An agent stepping onto the first chair of `region` from a non-Q floor cell."""
    chair = region_chairs(lay, region)[0]
    return move_into(lay, chair, ok=lambda c: not lay.zone_q[c], **kw)


def q_cells(lay):
    return [cell(c) for c in np.argwhere(lay.zone_q)]


def r_cells(lay):
    return [cell(c) for c in np.argwhere(lay.zone_r)]


def r_entry(lay):
    """(mover entering R from outside, the other R cells)."""
    for e in r_cells(lay):
        try:
            mover = move_into(lay, e, ok=lambda c: not lay.zone_r[c])
        except LookupError:
            continue
        return mover, [c for c in r_cells(lay) if c != e]
    raise LookupError("R has no entry from outside")


def r_inside_move(lay):
    """(mover stepping between two R cells, the R cells it does not touch)."""
    for a in r_cells(lay):
        for b in neighbours(a):
            if lay.zone_r[b]:
                rest = [c for c in r_cells(lay) if c not in (a, b)]
                return Agent(pos=a, action=step_action(a, b)), rest
    raise LookupError("R has no two adjacent cells")


def ring_move(lay, table, along: bool) -> Agent:
    """A move between two ring cells, along `table` (cw/ccw) or against it."""
    for x in map(cell, np.argwhere(lay.ring)):
        forward = (x[0] + int(table[x][0]), x[1] + int(table[x][1]))
        for y in neighbours(x):
            if not lay.ring[y] or lay.chair[x] or lay.chair[y]:
                continue
            if (y == forward) == along:
                return Agent(pos=x, action=step_action(x, y))
    raise LookupError("no such ring move")


def ring_leave(lay) -> Agent:
    """A move from a ring cell to a walkable non-ring cell."""
    for x in map(cell, np.argwhere(lay.ring & ~lay.chair)):
        for y in neighbours(x):
            if lay.walkable[y] and not lay.ring[y] and not lay.chair[y]:
                return Agent(pos=x, action=step_action(x, y))
    raise LookupError("no ring exit")


def ring_enter(lay) -> Agent:
    """A move from a walkable non-ring cell onto a ring cell."""
    for y in map(cell, np.argwhere(lay.ring & ~lay.chair)):
        for x in neighbours(y):
            if lay.walkable[x] and not lay.ring[x] and not lay.chair[x]:
                return Agent(pos=x, action=step_action(x, y))
    raise LookupError("no ring entry")


def queue_path(lay, norm: int):
    p = norm - reg.QUEUE_IDS.start
    return [cell(c) for c in lay.queue_paths[p, : lay.queue_len[p]]]


def head_side(lay, path):
    """A walkable cell next to the head that is off the path."""
    return entry(lay, path[0], ok=lambda c: c not in path)


def seat_sigma(lay, s):
    return [cell(c) for c in lay.seat_order[s] if c[0] >= 0]


# ---------------------------------------------------------------------------
# Cases


@dataclasses.dataclass(frozen=True)
class Case:
    norm: str
    label: str
    expect: bool  # permissibility bit of agent 0 under `norm`
    build: Callable  # layout (numpy view) -> Scenario
    test_map_only: bool = False

    @property
    def id(self) -> str:
        return f"{self.norm}-{self.label}-{'ok' if self.expect else 'violation'}"


def _s(*agents, t=0):
    return Scenario(list(agents), t=t)


def _others(cells, group=0):
    return [Agent(pos=c, group=group) for c in cells]


def _access_cases():
    cases = [
        Case(
            "forbidden_zone_q",
            "enter_q",
            False,
            lambda L: _s(move_into(L, q_cells(L)[0], ok=lambda c: not L.zone_q[c])),
        ),
        Case("forbidden_zone_q", "plain_move", True, lambda L: _s(plain_move(L))),
        Case("forbidden_zone_q", "leave_q", True, lambda L: _s(Agent(pos=(3, 2), action=DOWN)), test_map_only=True),
        Case(
            "forbidden_zone_q",
            "move_inside_q",
            False,
            lambda L: _s(Agent(pos=(3, 2), action=RIGHT)),
            test_map_only=True,
        ),
        Case("forbidden_zone_q", "wait_in_q", True, lambda L: _s(Agent(pos=q_cells(L)[0], action=WAIT))),
    ]
    for door, side in enumerate(("left", "bottom", "right")):
        other = (door + 1) % 3
        cases += [
            Case(f"all_exit_{side}", "own_door", True, lambda L, d=door: _s(exit_via(L, d))),
            Case(f"all_exit_{side}", "other_door", False, lambda L, d=other: _s(exit_via(L, d))),
            Case(f"all_exit_{side}", "no_exit", True, lambda L: _s(plain_move(L))),
            Case(f"{side}_door_forbidden", "this_door", False, lambda L, d=door: _s(exit_via(L, d))),
            Case(f"{side}_door_forbidden", "other_door", True, lambda L, d=other: _s(exit_via(L, d))),
        ]
    only = {"bottom_left_seats_only": C.BL, "top_left_seats_only": C.TL, "bottom_right_seats_only": C.BR}
    for name, region in only.items():
        wrong = (region + 1) % 3
        cases += [
            Case(name, "allowed_region", True, lambda L, r=region: _s(sit(L, r))),
            Case(name, "other_region", False, lambda L, r=wrong: _s(sit(L, r))),
        ]
    for name, region in {"no_bottom_left_seats": C.BL, "no_bottom_right_seats": C.BR}.items():
        cases += [
            Case(name, "banned_region", False, lambda L, r=region: _s(sit(L, r))),
            Case(name, "tl_region", True, lambda L: _s(sit(L, C.TL))),
        ]
    return cases


def _procedure_cases():
    cases = []
    for name, table in (("clockwise_circulation", "cw"), ("counterclockwise_circulation", "ccw")):
        cases += [
            Case(name, "along", True, lambda L, tb=table: _s(ring_move(L, getattr(L, tb), True))),
            Case(name, "against", False, lambda L, tb=table: _s(ring_move(L, getattr(L, tb), False))),
            Case(name, "leave_ring", True, lambda L: _s(ring_leave(L))),
            Case(name, "enter_ring", True, lambda L: _s(ring_enter(L))),
        ]
    # Ring corners of TEST_MAP: cw(1, 13) = down, cw(9, 1) = up, cw(1, 1) = right.
    corner = {
        "clockwise_circulation": [
            ((1, 13), DOWN, True),
            ((1, 13), LEFT, False),
            ((9, 1), UP, True),
            ((9, 1), RIGHT, False),
            ((1, 1), RIGHT, True),
            ((1, 1), DOWN, False),
            ((9, 13), LEFT, True),
            ((9, 13), UP, False),
        ],
        "counterclockwise_circulation": [
            ((1, 13), LEFT, True),
            ((1, 13), DOWN, False),
            ((9, 1), RIGHT, True),
            ((9, 1), UP, False),
            ((1, 1), DOWN, True),
            ((9, 13), UP, True),
        ],
    }
    for name, moves in corner.items():
        for pos, act, ok in moves:
            cases.append(
                Case(
                    name,
                    f"corner_{pos[0]}_{pos[1]}_{C.ACTION_NAMES[act]}",
                    ok,
                    lambda L, p=pos, a=act: _s(Agent(pos=p, action=a)),
                    test_map_only=True,
                )
            )
    turns = {
        "even_turns_only": (4, 7),
        "odd_turns_only": (7, 4),
        "no_turns_0_mod_3": (7, 6),
        "no_turns_1_mod_3": (8, 7),
        "no_turns_2_mod_3": (6, 8),
    }
    for name, (t_ok, t_bad) in turns.items():
        cases += [
            Case(name, f"t{t_ok}", True, lambda L, t=t_ok: _s(plain_move(L), t=t)),
            Case(name, f"t{t_bad}", False, lambda L, t=t_bad: _s(plain_move(L), t=t)),
            Case(name, f"wait_t{t_bad}", True, lambda L, t=t_bad: _s(Agent(pos=(4, 7), action=WAIT), t=t)),
        ]
    T, F = True, False
    rhythm = {
        "move1_wait1": [((F, T, T), T), ((T, F, F), F), ((F, F, F), T)],
        "move2_wait1": [((T, F, T), T), ((T, T, F), F), ((F, F, F), T)],
        "move3_wait1": [((T, T, F), T), ((T, T, T), F), ((F, F, F), T)],
    }
    for name, rows in rhythm.items():
        for hist, ok in rows:
            label = "fresh" if not any(hist) else "hist_" + "".join("1" if m else "0" for m in hist)
            cases.append(Case(name, label, ok, lambda L, h=hist: _s(plain_move(L, moves=h))))
    cases += [
        Case("visit_zone_q_first", "sit_unvisited", False, lambda L: _s(sit(L, C.BL))),
        Case("visit_zone_q_first", "sit_visited", True, lambda L: _s(sit(L, C.BL, visited_q=True))),
        Case("visit_zone_q_first", "walk_unvisited", True, lambda L: _s(plain_move(L))),
        # The current cell counts: standing in Q (3, 2) now, stepping onto chair (2, 2).
        Case("visit_zone_q_first", "sit_from_q", True, lambda L: _s(Agent(pos=(3, 2), action=UP)), test_map_only=True),
    ]
    return cases


def _queue_cases(name):
    nid = reg.get_norm(name).id
    path = lambda L: queue_path(L, nid)

    def join_empty(L):  # empty path: the tail is the head
        side = head_side(L, path(L))
        return _s(Agent(pos=side, action=step_action(side, path(L)[0])))

    def cut_in_front(L):  # someone at pi(1): the tail is pi(2), not the head
        side = head_side(L, path(L))
        return _s(Agent(pos=side, action=step_action(side, path(L)[0])), *_others([path(L)[1]]))

    def join_tail(L):  # others on pi(0..j-1), join at pi(j) from off the path
        pth = path(L)
        for j in range(1, len(pth)):
            try:
                side = entry(L, pth[j], ok=lambda c: c not in pth)
            except LookupError:
                continue
            return _s(Agent(pos=side, action=step_action(side, pth[j])), *_others(pth[:j]))
        raise LookupError("no off-path entry")

    def step_forward(L):
        pth = path(L)
        return _s(Agent(pos=pth[2], action=step_action(pth[2], pth[1])), *_others([pth[0]]))

    def step_into_occupied(L):
        pth = path(L)
        return _s(Agent(pos=pth[2], action=step_action(pth[2], pth[1])), *_others(pth[:2]))

    def step_backward(L):
        pth = path(L)
        return _s(Agent(pos=pth[1], action=step_action(pth[1], pth[2])), *_others([pth[0]]))

    def leave_from_head(L):
        pth = path(L)
        side = head_side(L, pth)
        return _s(Agent(pos=pth[0], action=step_action(pth[0], side)), *_others(pth[1:3]))

    def ignore_queue(L):  # a move that never touches the path
        return _s(plain_move(L), *_others(path(L)[:2]))

    return [
        Case(name, "join_empty_at_head", True, join_empty),
        Case(name, "cut_in_front", False, cut_in_front),
        Case(name, "join_at_tail", True, join_tail),
        Case(name, "step_forward", True, step_forward),
        Case(name, "step_into_occupied", False, step_into_occupied),
        Case(name, "step_backward", False, step_backward),
        Case(name, "leave_from_head", True, leave_from_head),
        Case(name, "away_from_queue", True, ignore_queue),
    ]


def _queue_edge_cases():
    """Full path (no tail), the last free cell, skipping along a zigzag."""

    def edge_left(L):
        return queue_path(L, reg.get_norm("edge_queue_left").id)

    def join_last_free(L):  # others on pi(0..2): the tail is the last cell pi(3)
        pth = edge_left(L)
        below = (pth[3][0] + 1, pth[3][1])
        return _s(Agent(pos=below, action=UP), *_others(pth[:3]))

    def full_path(L):
        pth = edge_left(L)
        below = (pth[0][0] + 1, pth[0][1])  # off path, under the head
        return _s(Agent(pos=below, action=UP), *_others(pth))

    def zigzag_skip(L):  # zigzag_right_1: pi(3) is adjacent to the head pi(0)
        pth = queue_path(L, reg.get_norm("zigzag_right_1").id)
        return _s(Agent(pos=pth[3], action=step_action(pth[3], pth[0])))

    def cut_into_gap(L):  # others at pi(0) and pi(2): the gap pi(1) is not the tail
        pth = edge_left(L)
        below = (pth[1][0] + 1, pth[1][1])
        return _s(Agent(pos=below, action=UP), *_others([pth[0], pth[2]]))

    return [
        Case("edge_queue_left", "join_last_free_cell", True, join_last_free),
        Case("edge_queue_left", "join_full_path", False, full_path),
        Case("edge_queue_left", "cut_into_gap", False, cut_into_gap),
        Case("zigzag_right_1", "skip_along_path", False, zigzag_skip),
    ]


def _allocation_cases():
    def enter_r(L, n_others, groups=(0, 0)):
        mover, rest = r_entry(L)
        others = [Agent(pos=c, group=g) for c, g in zip(rest[:n_others], groups)]
        return _s(mover, *others)

    def inside_r(L, n_others):
        mover, rest = r_inside_move(L)
        return _s(mover, *_others(rest[:n_others]))

    cases = [
        Case("zone_r_capacity_1", "empty_r", True, lambda L: enter_r(L, 0)),
        Case("zone_r_capacity_1", "one_other", False, lambda L: enter_r(L, 1)),
        Case("zone_r_capacity_1", "move_inside_r", True, lambda L: inside_r(L, 1)),
        Case("zone_r_capacity_2", "one_other", True, lambda L: enter_r(L, 1)),
        Case("zone_r_capacity_2", "two_others", False, lambda L: enter_r(L, 2)),
        Case("zone_r_capacity_2", "move_inside_r", True, lambda L: inside_r(L, 2)),
        Case("single_group_zone_r", "same_group", True, lambda L: enter_r(L, 2, (0, 0))),
        Case("single_group_zone_r", "mixed_group", False, lambda L: enter_r(L, 2, (0, 2))),
        Case("single_group_zone_r", "empty_r", True, lambda L: enter_r(L, 0)),
    ]
    doors = {"group_doors_abc": (0, 1, 2), "group_doors_bca": (1, 2, 0), "group_doors_cab": (2, 0, 1)}
    for name, door_of in doors.items():
        for g in range(3):
            d = door_of[g]
            cases += [
                Case(name, f"{C.GROUP_NAMES[g]}_own_door", True, lambda L, d=d, g=g: _s(exit_via(L, d, group=g))),
                Case(
                    name,
                    f"{C.GROUP_NAMES[g]}_other_door",
                    False,
                    lambda L, d=(d + 1) % 3, g=g: _s(exit_via(L, d, group=g)),
                ),
            ]
    seating = {
        "group_seating_rot1": (C.TL, C.BL, C.BR),
        "group_seating_rot2": (C.BL, C.BR, C.TL),
        "group_seating_rot3": (C.BR, C.TL, C.BL),
    }
    for name, rho in seating.items():
        for g in range(3):
            cases += [
                Case(name, f"{C.GROUP_NAMES[g]}_own_region", True, lambda L, r=rho[g], g=g: _s(sit(L, r, group=g))),
                Case(
                    name,
                    f"{C.GROUP_NAMES[g]}_other_region",
                    False,
                    lambda L, r=rho[(g + 1) % 3], g=g: _s(sit(L, r, group=g)),
                ),
            ]
    for s, name in enumerate(("seats_in_order_l2r", "seats_in_order_r2l")):

        def first(L, s=s):
            return _s(move_into(L, seat_sigma(L, s)[0]))

        def second(L, s=s):
            return _s(move_into(L, seat_sigma(L, s)[1]))

        def second_after_first_taken(L, s=s):
            sigma = seat_sigma(L, s)
            return _s(move_into(L, sigma[1]), *_others([sigma[0]]))

        def third_after_first_taken(L, s=s):
            sigma = seat_sigma(L, s)
            return _s(move_into(L, sigma[2]), *_others([sigma[0]]))

        cases += [
            Case(name, "first_free", True, first),
            Case(name, "second_while_first_free", False, second),
            Case(name, "second_after_first_taken", True, second_after_first_taken),
            Case(name, "third_after_first_taken", False, third_after_first_taken),
            Case(name, "walk", True, lambda L: _s(plain_move(L))),
        ]
    # The mover's own chair is not free: on TEST_MAP, l2r = (2,2), (7,2), (2,3), ...
    cases += [
        Case(
            "seats_in_order_l2r",
            "mover_on_first_to_third",
            False,
            lambda L: _s(Agent(pos=(2, 2), action=RIGHT)),
            test_map_only=True,
        ),
        Case(
            "seats_in_order_l2r",
            "mover_on_first_second_taken",
            True,
            lambda L: _s(Agent(pos=(2, 2), action=RIGHT), *_others([(7, 2)])),
            test_map_only=True,
        ),
    ]
    return cases


def all_cases() -> list[Case]:
    queue = [c for n in reg.NORM_NAMES[reg.QUEUE_IDS.start : reg.QUEUE_IDS.stop] for c in _queue_cases(n)]
    return _access_cases() + _procedure_cases() + queue + _queue_edge_cases() + _allocation_cases()


CASES = all_cases()


# ---------------------------------------------------------------------------
# Plain-Python reference of docs/world.md §7, norm by norm, for property tests


def effective_action_np(lay, pos, action) -> int:
    """docs/world.md §3 on the host: a move into a blocked cell or off the grid is WAIT."""
    if action == WAIT:
        return WAIT
    dr, dc = C.ACTION_DELTAS[action]
    r, c = pos[0] + int(dr), pos[1] + int(dc)
    if not (0 <= r < C.H and 0 <= c < C.W):
        return WAIT
    return action if lay.kind[r, c] in (C.FLOOR, C.CHAIR, C.DOOR) else WAIT


def _reference_agent(lay, t, i, pos, active, action, group, moves, visited_q):
    x = cell(pos[i])
    dr, dc = C.ACTION_DELTAS[action[i]]
    y = (x[0] + int(dr), x[1] + int(dc))
    others = [j for j in range(len(pos)) if j != i and active[j]]
    other_cells = {cell(pos[j]) for j in others}
    doors = [cell(d) for d in lay.doors]
    door = doors.index(y) if y in doors else None
    chair, region = bool(lay.chair[y]), int(lay.region[y])
    g = int(group[i])
    w = [not lay.zone_q[y]]
    w += [door is None or door == d for d in range(3)]
    w += [door != d for d in range(3)]
    w += [
        not chair or region == C.BL,
        not chair or region == C.TL,
        not chair or region == C.BR,
        not chair or region != C.BL,
        not chair or region != C.BR,
    ]
    both_ring = bool(lay.ring[x]) and bool(lay.ring[y])
    for table in (lay.cw, lay.ccw):
        w.append(not both_ring or y == (x[0] + int(table[x][0]), x[1] + int(table[x][1])))
    w += [t % 2 == 0, t % 2 == 1, t % 3 != 0, t % 3 != 1, t % 3 != 2]
    m = [bool(v) for v in moves[i]]
    w += [not m[0], not (m[0] and m[1]), not (m[0] and m[1] and m[2])]
    w.append(not chair or bool(visited_q[i]) or bool(lay.zone_q[x]))
    for p in range(C.N_QUEUE_PATHS):
        path = [cell(c) for c in lay.queue_paths[p, : lay.queue_len[p]]]
        if y not in path:
            w.append(True)
            continue
        k = path.index(y)
        held = [c in other_cells for c in path]
        tail = max([idx + 1 for idx, h in enumerate(held) if h], default=0)
        if x in path:
            w.append(path.index(x) == k + 1 and not held[k])
        else:
            w.append(k == tail)
    enters_r = bool(lay.zone_r[y]) and not lay.zone_r[x]
    in_r = [j for j in others if lay.zone_r[cell(pos[j])]]
    w += [
        not enters_r or len(in_r) == 0,
        not enters_r or len(in_r) <= 1,
        not enters_r or all(int(group[j]) == g for j in in_r),
    ]
    for door_of in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        w.append(door is None or door == door_of[g])
    for rho in ((C.TL, C.BL, C.BR), (C.BL, C.BR, C.TL), (C.BR, C.TL, C.BL)):
        w.append(not chair or region == rho[g])
    occupied = {cell(pos[j]) for j in range(len(pos)) if active[j]}
    chairs = [cell(c) for c in np.argwhere(lay.chair)]
    for key in (lambda rc: (rc[1], rc[0]), lambda rc: (-rc[1], rc[0])):
        free = [c for c in sorted(chairs, key=key) if c not in occupied]
        w.append(not chair or (bool(free) and y == free[0]))
    assert len(w) == reg.N_NORMS
    return w


def reference_mask(lay, t, pos, active, action, group, moves, visited_q) -> np.ndarray:
    """docs/world.md §7 permissibility [50, K], one agent and one norm at a time."""
    out = np.ones((reg.N_NORMS, len(pos)), dtype=bool)
    for i in range(len(pos)):
        if active[i] and action[i] != WAIT:
            out[:, i] = _reference_agent(lay, t, i, pos, active, action, group, moves, visited_q)
    return out


def hot_cells(lay) -> list[tuple[int, int]]:
    """Walkable cells where norms interact: the front of the queue block, R, Q,
    chairs, door inward cells and their neighbours (to make random states dense)."""
    sr, sc = cell(lay.service)
    seeds = [(r, c) for r in range(1, 5) for c in range(sc - 2, sc + 3)]
    seeds += r_cells(lay) + q_cells(lay) + [cell(c) for c in np.argwhere(lay.chair)]
    seeds += [cell(c) for c in lay.door_inward]
    out = set()
    for s in seeds:
        for c in [s, *neighbours(s)]:
            if lay.walkable[c]:
                out.add(c)
    return sorted(out)
