"""Norms as data: one row per norm of everything the world outside the predicates
needs to know about it (docs/world.md §5, §7-9).

`NORM_TABLE` is a struct of numpy arrays indexed by ``norm_id + 1`` (row 0 is
"no norm"), derived once from the registry's id blocks and the predicates' block
tables.  The task sampler, the planner's move graphs and goal choice, and the
test-scenario builder read it instead of testing numeric norm ids, so a norm's
behaviour outside its predicate is one row here.  `norm_rows()` gives the same
arrays as jax constants for jitted code.

Fields (shape [51, ...]):
  family          family index (registry.FAMILIES), -1 for no norm
  task_type       TASK_* below: which task an agent gets (goal-type table, §5)
  route_variant   the planner's static move graph (V_* of normjax.layouts.routes, §8)
  allowed_doors   bool [3 groups, 3 doors]: doors a norm lets each group exit by
  allowed_regions bool [3 groups, 3 regions]: seat regions each group may use
  timed           turn-parity or rhythm norm: followers' waits are predictable
  queue_path      index of the norm's queue path (0..15), -1 otherwise
  seat_order      0 = l2r, 1 = r2l for the seats-in-order norms, -1 otherwise
  visit_q_first   a chair may be entered only after visiting Q
  scenario        SCENARIO_* below: how a test episode is constructed (§9)
  r_holders       agents a zone-R scenario keeps in R (0 elsewhere)
  r_holder_other_group  the zone-R holders belong to another group than the newcomer
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.layouts.routes import V_BASE, V_CCW, V_CW, V_NO_Q, V_QUEUE0
from normjax.norms import predicates as P
from normjax.norms import registry as reg

# Task types: the rows of the goal-type table (docs/world.md §5).
TASK_DEST = 0  # specified destination cell, specified door
TASK_QUEUE = 1  # the counter (service cell), specified door
TASK_Q_CHAIR = 2  # a specified chair (visit Q first), specified door
TASK_R_ZONE = 3  # any cell inside R, specified door
TASK_DOOR_CHOICE = 4  # specified destination (a chair), any door
TASK_SEAT = 5  # any chair, specified door


# Test-scenario constructions (docs/world.md §9), one per norm block.
(
    SCENARIO_NONE,
    SCENARIO_ROUTE_GAP,  # forbidden Q, circulation: every blind shortest route violates
    SCENARIO_TIMED,  # turn parity, rhythm: a destination 6..10 moves away
    SCENARIO_VISIT_Q,  # a chair whose shortest route skips Q
    SCENARIO_DOOR,  # free exit door: the nearest door is not allowed
    SCENARIO_SEAT_REGION,  # free seat: the nearest chair is in a disallowed region
    SCENARIO_SEAT_ORDER,  # free seat: the nearest chair is not first in sigma
    SCENARIO_QUEUE,  # a queue at the counter that a blind route cuts into
    SCENARIO_ZONE_R,  # agents held in R until the newcomer reaches R
) = range(9)

ROWS = reg.N_NORMS + 1  # row 0 = no norm


@dataclasses.dataclass(frozen=True, eq=False)
class NormTable:
    """Per-norm data, numpy arrays indexed by norm_id + 1."""

    family: np.ndarray
    task_type: np.ndarray
    route_variant: np.ndarray
    allowed_doors: np.ndarray
    allowed_regions: np.ndarray
    timed: np.ndarray
    queue_path: np.ndarray
    seat_order: np.ndarray
    visit_q_first: np.ndarray
    scenario: np.ndarray
    r_holders: np.ndarray
    r_holder_other_group: np.ndarray

    def row(self, norm_id: int) -> dict:
        """The row of one norm id (-1 = no norm) as plain Python values."""
        i = int(norm_id) + 1
        return {f.name: getattr(self, f.name)[i] for f in dataclasses.fields(self)}


def _build() -> NormTable:
    n = ROWS
    full = lambda v, dt=np.int32, shape=(): np.full((n,) + shape, v, dt)
    t = dict(
        family=full(-1),
        task_type=full(TASK_DEST),
        route_variant=full(V_BASE),
        allowed_doors=full(True, bool, (C.N_GROUPS, C.N_DOORS)),
        allowed_regions=full(True, bool, (C.N_GROUPS, 3)),
        timed=full(False, bool),
        queue_path=full(-1),
        seat_order=full(-1),
        visit_q_first=full(False, bool),
        scenario=full(SCENARIO_NONE),
        r_holders=full(0),
        r_holder_other_group=full(False, bool),
    )

    def put(ids, **fields):
        for i in ids:
            for k, v in fields.items():
                t[k][i + 1] = v

    for spec in reg.NORMS:
        t["family"][spec.id + 1] = spec.family_id

    put([reg.FORBIDDEN_ZONE_Q], route_variant=V_NO_Q, scenario=SCENARIO_ROUTE_GAP)
    for i, door in zip(reg.ALL_EXIT_IDS, P.ALL_EXIT_DOOR):
        put([i], allowed_doors=np.arange(C.N_DOORS)[None, :] == door)
    for i, door in zip(reg.DOOR_FORBIDDEN_IDS, P.FORBIDDEN_DOOR):
        put([i], allowed_doors=np.arange(C.N_DOORS)[None, :] != door)
    put(list(reg.ALL_EXIT_IDS) + list(reg.DOOR_FORBIDDEN_IDS), task_type=TASK_DOOR_CHOICE, scenario=SCENARIO_DOOR)
    for i, ok in zip(reg.SEAT_REGION_IDS, P.SEAT_REGION_ALLOWED):
        put([i], allowed_regions=ok[None, :], task_type=TASK_SEAT, scenario=SCENARIO_SEAT_REGION)
    put([reg.CIRCULATION_IDS[0]], route_variant=V_CW, scenario=SCENARIO_ROUTE_GAP)
    put([reg.CIRCULATION_IDS[1]], route_variant=V_CCW, scenario=SCENARIO_ROUTE_GAP)
    put(list(reg.TURN_IDS) + list(reg.RHYTHM_IDS), timed=True, scenario=SCENARIO_TIMED)
    put([reg.VISIT_ZONE_Q_FIRST], task_type=TASK_Q_CHAIR, visit_q_first=True, scenario=SCENARIO_VISIT_Q)
    for j, i in enumerate(reg.QUEUE_IDS):
        put([i], task_type=TASK_QUEUE, route_variant=V_QUEUE0 + j, queue_path=j, scenario=SCENARIO_QUEUE)
    for i, others in zip(reg.ZONE_R_IDS, list(P.R_CAPACITY_OTHERS) + [0]):
        # A holder per agent the norm still allows in R, plus one: R is full.
        put([i], task_type=TASK_R_ZONE, scenario=SCENARIO_ZONE_R, r_holders=int(others) + 1)
    put([reg.ZONE_R_IDS[-1]], r_holder_other_group=True)  # single_group_zone_r
    for i, row in zip(reg.GROUP_DOOR_IDS, P.GROUP_DOOR):
        put(
            [i],
            allowed_doors=np.arange(C.N_DOORS)[None, :] == np.asarray(row)[:, None],
            task_type=TASK_DOOR_CHOICE,
            scenario=SCENARIO_DOOR,
        )
    for i, row in zip(reg.GROUP_SEATING_IDS, P.GROUP_REGION):
        put(
            [i],
            allowed_regions=np.arange(3)[None, :] == np.asarray(row)[:, None],
            task_type=TASK_SEAT,
            scenario=SCENARIO_SEAT_REGION,
        )
    for j, i in enumerate(reg.SEAT_ORDER_IDS):
        put([i], seat_order=j, task_type=TASK_SEAT, scenario=SCENARIO_SEAT_ORDER)
    for v in t.values():
        v.setflags(write=False)
    return NormTable(**t)


NORM_TABLE = _build()


@functools.cache
def norm_rows() -> dict[str, jax.Array]:
    """`NORM_TABLE` as jax constants (created outside any trace), by field name."""
    with jax.ensure_compile_time_eval():
        return {f.name: jnp.asarray(getattr(NORM_TABLE, f.name)) for f in dataclasses.fields(NormTable)}


def norm_row(norm_id, field: str) -> jax.Array:
    """One field of the (traced) norm's row: `norm_rows()[field][norm_id + 1]`."""
    return norm_rows()[field][jnp.asarray(norm_id, jnp.int32) + 1]


__all__ = [
    "NORM_TABLE",
    "NormTable",
    "norm_row",
    "norm_rows",
    "TASK_DEST",
    "TASK_QUEUE",
    "TASK_Q_CHAIR",
    "TASK_R_ZONE",
    "TASK_DOOR_CHOICE",
    "TASK_SEAT",
    "SCENARIO_NONE",
    "SCENARIO_ROUTE_GAP",
    "SCENARIO_TIMED",
    "SCENARIO_VISIT_Q",
    "SCENARIO_DOOR",
    "SCENARIO_SEAT_REGION",
    "SCENARIO_SEAT_ORDER",
    "SCENARIO_QUEUE",
    "SCENARIO_ZONE_R",
]
