"""The library of 50 norms as metadata (docs/world.md §7; paper Table A2, Table A4, section 11.1).

Each norm is a `NormSpec`: its id (0..49, docs/world.md §7 order), its paper name, its
family, the paper's one-line description (Table A2, "Permissible behavior"),
its formal permissibility condition as text (docs/world.md §7 wording), whether it is in
the paper's held-out split (Table A4 as listed in docs/world.md §7: `normjax.norms.held_out`),
and its unseen layout (docs/world.md §1.5, 9): an explicit entry per norm name in
`normjax.norms.unseen_layouts` (docs/world.md §1 leaves the assignment open).

The permissibility predicates themselves live in `normjax.norms.predicates`;
the row order of their `[50, K]` masks is the id order defined here.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from normjax.norms.held_out import HELD_OUT_NAMES
from normjax.norms.unseen_layouts import assign

FAMILIES = ("access", "procedure", "coordination", "allocation")
ACCESS, PROCEDURE, COORDINATION, ALLOCATION = range(4)

N_NORMS = 50
NO_NORM = -1

# Id ranges (half-open) of the families and of the blocks inside them (docs/world.md §7).
ACCESS_IDS = range(0, 12)
PROCEDURE_IDS = range(12, 23)
COORDINATION_IDS = range(23, 39)
ALLOCATION_IDS = range(39, 50)
FAMILY_IDS = (ACCESS_IDS, PROCEDURE_IDS, COORDINATION_IDS, ALLOCATION_IDS)

FORBIDDEN_ZONE_Q = 0
ALL_EXIT_IDS = range(1, 4)  # all_exit_left / bottom / right
DOOR_FORBIDDEN_IDS = range(4, 7)  # left / bottom / right door forbidden
SEAT_REGION_IDS = range(7, 12)  # seats-only and no-seats norms
CIRCULATION_IDS = range(12, 14)  # clockwise, counterclockwise
TURN_IDS = range(14, 19)  # even / odd / no_turns_k_mod_3
RHYTHM_IDS = range(19, 22)  # move1_wait1 .. move3_wait1
VISIT_ZONE_Q_FIRST = 22
QUEUE_IDS = range(23, 39)  # queue path p <-> norm 23 + p
ZONE_R_IDS = range(39, 42)  # capacity 1, capacity 2, single group
GROUP_DOOR_IDS = range(42, 45)
GROUP_SEATING_IDS = range(45, 48)
SEAT_ORDER_IDS = range(48, 50)  # l2r, r2l


@dataclasses.dataclass(frozen=True)
class NormSpec:
    """Metadata of one norm (docs/world.md §7)."""

    id: int
    name: str
    family: str  # one of FAMILIES
    description: str  # the paper's one-line description (Table A2)
    condition: str  # formal permissibility condition, docs/world.md §7 wording
    held_out: bool  # in the paper's held-out split (Table A4)
    unseen_layout: str  # the norm's unseen test layout (docs/world.md §1, 9)

    @property
    def family_id(self) -> int:
        return FAMILIES.index(self.family)


_QUEUE_RULE = (
    "; a move x -> x' = pi(k) is permissible iff (x = pi(k+1) and no other agent "
    "stands on pi(k)) or (x not on pi and k = tail), tail = 1 + largest index of a "
    "path cell held by another agent (the head when pi is empty, none when full); "
    "moves that leave pi or never touch it are free"
)
_DOOR_RULE = "x' in D implies x' = d(c_i) with d = {} for (orange, green, blue)"
_SEAT_RULE = "x' in C implies region(x') = rho(c_i) with rho = {} for (orange, green, blue)"
_ORDER_RULE = (
    "x' in C implies x' is the first free chair in sigma ({}; column by column, "
    "top to bottom within a column); free = no agent, the mover included, on it "
    "before the step"
)
_R_PREFIX = "for a move from outside R into R: x' in R implies "

# (name, family, description, condition), in docs/world.md §7 id order.
_TABLE = (
    # Access
    ("forbidden_zone_q", "access", "No agent may enter the marked zone Q.", "x' not in Q"),
    ("all_exit_left", "access", "Every agent must leave through the left door.", "x' in D implies x' = dA"),
    ("all_exit_bottom", "access", "Every agent must leave through the bottom door.", "x' in D implies x' = dB"),
    ("all_exit_right", "access", "Every agent must leave through the right door.", "x' in D implies x' = dC"),
    ("left_door_forbidden", "access", "No agent may leave through the left door.", "x' != dA"),
    ("bottom_door_forbidden", "access", "No agent may leave through the bottom door.", "x' != dB"),
    ("right_door_forbidden", "access", "No agent may leave through the right door.", "x' != dC"),
    (
        "bottom_left_seats_only",
        "access",
        "Agents may sit only in the bottom-left seating region.",
        "x' in C implies x' in BL",
    ),
    (
        "top_left_seats_only",
        "access",
        "Agents may sit only in the top-left seating region.",
        "x' in C implies x' in TL",
    ),
    (
        "bottom_right_seats_only",
        "access",
        "Agents may sit only in the bottom-right seating region.",
        "x' in C implies x' in BR",
    ),
    (
        "no_bottom_left_seats",
        "access",
        "No agent may occupy a chair in the bottom-left region.",
        "x' in C implies x' not in BL",
    ),
    (
        "no_bottom_right_seats",
        "access",
        "No agent may occupy a chair in the bottom-right region.",
        "x' in C implies x' not in BR",
    ),
    # Procedure
    (
        "clockwise_circulation",
        "procedure",
        "All movement along the outer walkable ring must proceed clockwise.",
        "a move from a ring cell x to a ring cell x' is permissible iff x' = x + cw(x); other moves are free",
    ),
    (
        "counterclockwise_circulation",
        "procedure",
        "All movement along the outer walkable ring must proceed counterclockwise.",
        "a move from a ring cell x to a ring cell x' is permissible iff x' = x + ccw(x); other moves are free",
    ),
    ("even_turns_only", "procedure", "Agents may move only on even-numbered turns.", "t even or a = WAIT"),
    ("odd_turns_only", "procedure", "Agents may move only on odd-numbered turns.", "t odd or a = WAIT"),
    ("no_turns_0_mod_3", "procedure", "No agent may move on turns divisible by three.", "t mod 3 != 0 or a = WAIT"),
    (
        "no_turns_1_mod_3",
        "procedure",
        "No agent may move on turns congruent to 1 modulo 3.",
        "t mod 3 != 1 or a = WAIT",
    ),
    (
        "no_turns_2_mod_3",
        "procedure",
        "No agent may move on turns congruent to 2 modulo 3.",
        "t mod 3 != 2 or a = WAIT",
    ),
    ("move1_wait1", "procedure", "No agent may move on two consecutive turns.", "m_{t-1} = 0 or a = WAIT"),
    ("move2_wait1", "procedure", "No agent may move on three consecutive turns.", "m_{t-1} m_{t-2} = 0 or a = WAIT"),
    (
        "move3_wait1",
        "procedure",
        "No agent may move on four consecutive turns.",
        "m_{t-1} m_{t-2} m_{t-3} = 0 or a = WAIT",
    ),
    (
        "visit_zone_q_first",
        "procedure",
        "An agent may sit only after previously visiting the marked zone Q.",
        "x' in C implies the agent stood in Q at some step up to now (current cell included)",
    ),
    # Coordination
    (
        "bend_right_1",
        "coordination",
        "One step right, then straight away from the counter.",
        "pi: right 1, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "bend_right_2",
        "coordination",
        "Two steps right, then straight away from the counter.",
        "pi: right 2, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "bend_left_1",
        "coordination",
        "One step left, then straight away from the counter.",
        "pi: left 1, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "bend_left_2",
        "coordination",
        "Two steps left, then straight away from the counter.",
        "pi: left 2, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "zigzag_right_1",
        "coordination",
        "Alternating single steps right and left, with one step away between them.",
        "pi: (right 1, away 1, left 1, away 1)* (L = 6)" + _QUEUE_RULE,
    ),
    (
        "zigzag_right_2",
        "coordination",
        "Alternating two-step horizontal segments, beginning to the right.",
        "pi: (right 2, away 1, left 2, away 1)* (L = 6)" + _QUEUE_RULE,
    ),
    (
        "zigzag_left_1",
        "coordination",
        "Alternating single steps left and right, with one step away between them.",
        "pi: (left 1, away 1, right 1, away 1)* (L = 6)" + _QUEUE_RULE,
    ),
    (
        "zigzag_left_2",
        "coordination",
        "Alternating two-step horizontal segments, beginning to the left.",
        "pi: (left 2, away 1, right 2, away 1)* (L = 6)" + _QUEUE_RULE,
    ),
    (
        "staircase_right",
        "coordination",
        "Two staircase steps to the right, then straight away from the counter.",
        "pi: (right 1, away 1) twice, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "staircase_left",
        "coordination",
        "Two staircase steps to the left, then straight away from the counter.",
        "pi: (left 1, away 1) twice, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "l_shape_right",
        "coordination",
        "Two steps away, two steps right, then straight away.",
        "pi: away 2, right 2, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "l_shape_left",
        "coordination",
        "Two steps away, two steps left, then straight away.",
        "pi: away 2, left 2, then away (L = 6)" + _QUEUE_RULE,
    ),
    (
        "square_right",
        "coordination",
        "A closed loop of seven cells beginning with a right turn.",
        "pi: right 1, away 2, left 2, toward 1 (L = 7)" + _QUEUE_RULE,
    ),
    (
        "square_left",
        "coordination",
        "A closed loop of seven cells beginning with a left turn.",
        "pi: left 1, away 2, right 2, toward 1 (L = 7)" + _QUEUE_RULE,
    ),
    (
        "edge_queue_left",
        "coordination",
        "The queue begins to the left of the counter and follows the wall.",
        "pi: left 3 along the wall row (L = 4)" + _QUEUE_RULE,
    ),
    (
        "edge_queue_right",
        "coordination",
        "The queue begins to the right of the counter and follows the wall.",
        "pi: right 3 along the wall row (L = 4)" + _QUEUE_RULE,
    ),
    # Allocation
    ("zone_r_capacity_1", "allocation", "At most one agent may occupy zone R.", _R_PREFIX + "no other agent is in R"),
    (
        "zone_r_capacity_2",
        "allocation",
        "At most two agents may occupy zone R.",
        _R_PREFIX + "at most one other agent is in R",
    ),
    (
        "single_group_zone_r",
        "allocation",
        "Agents occupying R at the same time must belong to the same social group.",
        _R_PREFIX + "every other agent in R has the mover's group",
    ),
    (
        "group_doors_abc",
        "allocation",
        "Orange exits left, green exits bottom, and blue exits right.",
        _DOOR_RULE.format("(dA, dB, dC)"),
    ),
    (
        "group_doors_bca",
        "allocation",
        "Orange exits bottom, green exits right, and blue exits left.",
        _DOOR_RULE.format("(dB, dC, dA)"),
    ),
    (
        "group_doors_cab",
        "allocation",
        "Orange exits right, green exits left, and blue exits bottom.",
        _DOOR_RULE.format("(dC, dA, dB)"),
    ),
    (
        "group_seating_rot1",
        "allocation",
        "Orange sits top-left, green bottom-left, and blue bottom-right.",
        _SEAT_RULE.format("(TL, BL, BR)"),
    ),
    (
        "group_seating_rot2",
        "allocation",
        "Orange sits bottom-left, green bottom-right, and blue top-left.",
        _SEAT_RULE.format("(BL, BR, TL)"),
    ),
    (
        "group_seating_rot3",
        "allocation",
        "Orange sits bottom-right, green top-left, and blue bottom-left.",
        _SEAT_RULE.format("(BR, TL, BL)"),
    ),
    (
        "seats_in_order_l2r",
        "allocation",
        "Seats are filled column by column from left to right and top to bottom.",
        _ORDER_RULE.format("left to right"),
    ),
    (
        "seats_in_order_r2l",
        "allocation",
        "Seats are filled column by column from right to left and top to bottom.",
        _ORDER_RULE.format("right to left"),
    ),
)

_UNSEEN = assign([row[0] for row in _TABLE])  # ValueError naming the norm on a missing or bad entry
NORMS: tuple[NormSpec, ...] = tuple(
    NormSpec(
        id=i,
        name=name,
        family=family,
        description=description,
        condition=condition,
        held_out=name in HELD_OUT_NAMES,
        unseen_layout=_UNSEEN[i],
    )
    for i, (name, family, description, condition) in enumerate(_TABLE)
)
NORM_NAMES: tuple[str, ...] = tuple(n.name for n in NORMS)
_BY_NAME = {n.name: n for n in NORMS}

# Family index (0..3) of every norm, as a numpy table and as a device array that
# a jitted function may index with a traced norm id.
FAMILY_OF = np.array([n.family_id for n in NORMS], dtype=np.int32)
family_of = jnp.asarray(FAMILY_OF)


def _check_table() -> None:
    """Import-time consistency of the table with the id ranges above."""
    assert len(NORMS) == N_NORMS and len(_BY_NAME) == N_NORMS
    assert HELD_OUT_NAMES <= set(_BY_NAME)
    for fam, ids in enumerate(FAMILY_IDS):
        assert all(NORMS[i].family == FAMILIES[fam] for i in ids)
    assert sum(len(ids) for ids in FAMILY_IDS) == N_NORMS


_check_table()


def _unknown(value) -> ValueError:
    return ValueError(
        f"unknown norm {value!r}; valid norm ids are 0..{N_NORMS - 1} and valid names are: " + ", ".join(NORM_NAMES)
    )


def get_norm(name_or_id) -> NormSpec:
    """The NormSpec of a norm given by name or id; ValueError listing names otherwise."""
    if isinstance(name_or_id, str):
        if name_or_id in _BY_NAME:
            return _BY_NAME[name_or_id]
        raise _unknown(name_or_id)
    if isinstance(name_or_id, (int, np.integer)) and not isinstance(name_or_id, bool):
        if 0 <= int(name_or_id) < N_NORMS:
            return NORMS[int(name_or_id)]
    raise _unknown(name_or_id)


def norm_id(name_or_none) -> int:
    """Integer norm id for WorldParams: -1 for None, "none" or -1 (no norm)."""
    if name_or_none is None or (isinstance(name_or_none, str) and name_or_none == "none"):
        return NO_NORM
    if (
        isinstance(name_or_none, (int, np.integer))
        and not isinstance(name_or_none, bool)
        and int(name_or_none) == NO_NORM
    ):
        return NO_NORM
    return get_norm(name_or_none).id
