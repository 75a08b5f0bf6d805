"""Permissibility predicates of all 50 norms, evaluated at once (docs/world.md §7).

Design note: no 50-way `lax.switch`.  Every norm is a row of a data-driven
family block (door-index, region, modulus, rhythm-depth, capacity and
group tables; the 16 queue paths as one batched `[16, 7, K]` computation), and
the four blocks are concatenated into a `[50, K]` mask.  Cost: all 50 norms are
always evaluated, even when an episode only needs one row -- a few hundred
elementwise ops on `[K]` arrays plus the `[16, 7, K]` queue block and a
`[2, 48, K]` seat-order block, i.e. tens of thousands of scalar ops per step.
A `lax.switch` on the norm id would not save that under `vmap`: with a
batched index it lowers to a `select` over every branch, so it also evaluates
all 50 (as 50 separate small computations, with less fusion).  Only an
unbatched switch runs one branch, and the world is always vmapped over
episodes; a switch also could not give the full mask that planners and
exports need.  `sanctions` then picks the episode's
row with one gather.

Conventions (docs/world.md §7):
- A norm judges the agent's effective action a (docs/world.md §3) as the intended
  transition x -> x' = x + delta(a), against the positions of all active agents
  before the step; "others" are the active agents other than the mover.
- WAIT is permissible under every norm, and so is everything an inactive slot
  does.  Every move changes the agent's cell, so "state conditions apply to
  moves that change the cell" is the same as "apply to moves".
- A move onto a door cell is an exit and is judged with x' = the door cell.

Decisions where docs/world.md §7 leaves room (also in the issue note):
- `permissible` applies `effective_actions` to the given actions again (it is
  idempotent), so a raw blocked move is judged as the WAIT it becomes.
- Queue norms (23-38): a move from one path cell to another that is not one
  step toward the head (backwards, or across a square loop) is impermissible;
  a move whose target is off the path is free, whatever its origin.  The
  join-at-tail clause needs an origin off the path (not on any of its cells),
  so skipping ahead along a zigzag (pi(3) -> pi(0)) is a violation.
- Seat order (48-49): when no chair in sigma is free, entering any chair is
  impermissible (there is no "first free chair" to be).
- Seat regions (7-11, 45-47): a chair outside TL/BL/BR (impossible in a valid
  layout, docs/world.md §1) counts as in no region: "only" norms forbid it, "no" norms
  allow it.
- Zone R (39-41): only moves from outside R into R are judged; agents count as
  in R by their position before the step (the mover is outside R by then).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.ground.moves import cell_value, effective_actions, move_targets
from normjax.layouts.geometry import same_cell
from normjax.layouts.tables import host_tables
from normjax.norms import registry as reg

# ---------------------------------------------------------------------------
# Data tables: one row per norm of a block, in registry id order.

# Norms 1-3 (all_exit_*) and 4-6 (*_door_forbidden): door index 0 = dA, 1 = dB, 2 = dC.
ALL_EXIT_DOOR = np.array([0, 1, 2], dtype=np.int32)
FORBIDDEN_DOOR = np.array([0, 1, 2], dtype=np.int32)

# Norms 7-11: which regions (columns TL, BL, BR) a chair may lie in.
SEAT_REGION_ALLOWED = np.array(
    [
        [False, True, False],  # 7 bottom_left_seats_only
        [True, False, False],  # 8 top_left_seats_only
        [False, False, True],  # 9 bottom_right_seats_only
        [True, False, True],  # 10 no_bottom_left_seats
        [True, True, False],  # 11 no_bottom_right_seats
    ]
)

# Norms 14-18: moving is forbidden when t mod TURN_MODULUS == TURN_FORBIDDEN.
TURN_MODULUS = np.array([2, 2, 3, 3, 3], dtype=np.int32)
TURN_FORBIDDEN = np.array([1, 0, 0, 1, 2], dtype=np.int32)

# Norms 19-21: moving is forbidden after this many consecutive own moves.
RHYTHM_DEPTH = np.array([1, 2, 3], dtype=np.int32)

# Norms 39-40: largest number of other agents allowed in R when entering it.
R_CAPACITY_OTHERS = np.array([0, 1], dtype=np.int32)

# Norms 42-44: door index per (norm, group orange/green/blue).
GROUP_DOOR = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]], dtype=np.int32)

# Norms 45-47: region per (norm, group).
GROUP_REGION = np.array([[C.TL, C.BL, C.BR], [C.BL, C.BR, C.TL], [C.BR, C.TL, C.BL]], dtype=np.int32)

_QUEUE_NONE = -1  # "not on this path" index


class Context(NamedTuple):
    """Action-independent facts about the state, shared by all actions."""

    ever_q: jax.Array  # bool [K]: stood in Q before or now
    on_ring: jax.Array  # bool [K]: current cell on the outer ring
    cw_next: jax.Array  # int32 [K, 2]: x + cw(x)
    ccw_next: jax.Array  # int32 [K, 2]: x + ccw(x)
    queue_src: jax.Array  # int32 [16, K]: path index of the current cell, -1 off path
    queue_held: jax.Array  # bool [16, 7, K]: path cell held by another active agent
    queue_tail: jax.Array  # int32 [16, K]: tail index seen by each agent (== len: full)
    in_r: jax.Array  # bool [K]: active and in R
    r_others: jax.Array  # int32 [K]: other active agents in R
    r_other_group: jax.Array  # bool [K]: another agent of a different group in R
    first_free: jax.Array  # int32 [2, 2]: first free chair per seat order, -1 if none


def _at(grid, cells):
    """grid value at [..., 2] cells that lie on the grid (clipped gather)."""
    r = jnp.clip(cells[..., 0], 0, C.H - 1)
    c = jnp.clip(cells[..., 1], 0, C.W - 1)
    return grid[r, c]


def _path_index(paths, valid, cells):
    """Index of each [K, 2] cell on each of the [P, L, 2] paths, -1 off path -> [P, K]."""
    hit = valid[:, :, None] & same_cell(paths[:, :, None, :], cells[None, None, :, :])
    idx = jnp.argmax(hit, axis=1).astype(jnp.int32)
    return jnp.where(jnp.any(hit, axis=1), idx, _QUEUE_NONE), hit


def queue_context(lt, pos, active):
    """docs/world.md §7 queue state: who holds which path cell, each agent's view of the tail."""
    paths = lt.queue_paths  # [16, 7, 2]
    length = paths.shape[1]
    valid = jnp.arange(length)[None, :] < lt.queue_len[:, None]  # [16, 7]
    src, hit = _path_index(paths, valid, pos)  # hit [16, 7, K]
    hit = hit & active[None, None, :]
    src = jnp.where(active[None, :], src, _QUEUE_NONE)
    held = jnp.sum(hit, axis=2, keepdims=True) - hit > 0  # by someone other than i
    idx = jnp.arange(1, length + 1, dtype=jnp.int32)[None, :, None]
    tail = jnp.max(jnp.where(held, idx, 0), axis=1)  # 1 + last held index, 0 if empty
    return src, held, tail


def seat_order_length(layout: int) -> int:
    """Entries of a layout's seat orders without padding (host tables)."""
    return int((host_tables()["seat_order"][layout][..., 0] >= 0).sum(-1).max())


def first_free_chairs(lt, pos, active):
    """docs/world.md §7 norms 48-49: first chair of each order sigma no active agent stands on."""
    # Read from the stacked tables (`read`): under vmap this runs only for the
    # packed environments of the seats-in-order norms, and `lt.seat_order`
    # would be every environment's slice, copied for all of them.
    order = lt.read("seat_order")  # [2, 48, 2], -1 padded
    if lt.static_index >= 0:  # one known layout: drop the padding beyond its chairs
        order = order[:, : seat_order_length(lt.static_index)]
    valid = order[..., 0] >= 0
    # Compare flat cell indices (one int per cell instead of two coordinates).
    order_flat, pos_flat = order[..., 0] * C.W + order[..., 1], pos[:, 0] * C.W + pos[:, 1]
    occupied = jnp.any((order_flat[:, :, None] == pos_flat[None, None, :]) & active[None, None, :], axis=2)
    free = valid & ~occupied
    first = order[jnp.arange(2), jnp.argmax(free, axis=1)]  # [2, 2]
    return jnp.where(jnp.any(free, axis=1)[:, None], first, -1)


def context(lt, pos, active, group, visited_q) -> Context:
    """Action-independent part of the docs/world.md §7 predicates for one layout."""
    active = active.astype(bool)
    in_r = active & _at(lt.zone_r, pos)
    # Counts in R per group (3), not per pair of agents: the others in R are all
    # but oneself, those of another group all but one's own group's.
    in_group = group[:, None] == jnp.arange(C.N_GROUPS)[None, :]  # [K, 3]
    per_group = jnp.sum(in_group & in_r[:, None], axis=0, dtype=jnp.int32)  # [3]
    n_r = jnp.sum(per_group)
    own_group = jnp.sum(jnp.where(in_group, per_group[None, :], 0), axis=1)
    src, held, tail = queue_context(lt, pos, active)
    return Context(
        ever_q=visited_q.astype(bool) | _at(lt.zone_q, pos),
        on_ring=_at(lt.ring, pos),
        cw_next=pos + _at(lt.cw, pos),
        ccw_next=pos + _at(lt.ccw, pos),
        queue_src=src,
        queue_held=held,
        queue_tail=tail,
        in_r=in_r,
        r_others=n_r - in_r.astype(jnp.int32),
        r_other_group=n_r > own_group,
        first_free=first_free_chairs(lt, pos, active),
    )


class Move(NamedTuple):
    """Facts about each agent's intended target cell x' (one action per agent)."""

    target: jax.Array  # int32 [K, 2]
    door_hit: jax.Array  # bool [K, 3]: x' is dA / dB / dC
    chair: jax.Array  # bool [K]: x' is a chair
    region: jax.Array  # int32 [K]: region of x' (-1 none)


def _move(lt, pos, action) -> Move:
    target = move_targets(pos, action)
    return Move(
        target=target,
        door_hit=same_cell(target[:, None, :], lt.doors[None, :, :]),
        chair=cell_value(lt.chair, target, fill=False),
        region=cell_value(lt.region, target, fill=-1).astype(jnp.int32),
    )


def _region_onehot(region):
    """[K] region -> [K, 3] bool one-hot (all False for -1)."""
    return region[:, None] == jnp.arange(3)[None, :]


def _access_rows(lt, mv: Move):
    """Norms 0-11 (docs/world.md §7 access): conditions on the entered cell -> [12, K]."""
    not_q = ~cell_value(lt.zone_q, mv.target, fill=False)
    any_door = jnp.any(mv.door_hit, axis=1)
    all_exit = ~any_door[None, :] | mv.door_hit.T[ALL_EXIT_DOOR]  # [3, K]
    door_forbidden = ~mv.door_hit.T[FORBIDDEN_DOOR]  # [3, K]
    in_allowed = jnp.any(jnp.asarray(SEAT_REGION_ALLOWED)[:, None, :] & _region_onehot(mv.region)[None], axis=2)
    seats = ~mv.chair[None, :] | in_allowed  # [5, K]
    return jnp.concatenate([not_q[None], all_exit, door_forbidden, seats], axis=0)


def _procedure_rows(lt, ctx: Context, t, mv: Move, moves):
    """Norms 12-22 (docs/world.md §7 procedure): ring direction, turn index, rhythm, Q first -> [11, K]."""
    along_ring = ctx.on_ring & cell_value(lt.ring, mv.target, fill=False)
    cw = ~along_ring | same_cell(mv.target, ctx.cw_next)
    ccw = ~along_ring | same_cell(mv.target, ctx.ccw_next)
    t = jnp.asarray(t, jnp.int32)
    turn_ok = jnp.mod(t, jnp.asarray(TURN_MODULUS)) != jnp.asarray(TURN_FORBIDDEN)  # [5]
    turns = jnp.broadcast_to(turn_ok[:, None], (turn_ok.shape[0], mv.chair.shape[0]))
    # run[:, d - 1]: moved on each of the last d turns.
    run = jnp.cumprod(moves.astype(jnp.int32), axis=1).astype(bool)  # [K, 3]
    rhythm = ~run.T[jnp.asarray(RHYTHM_DEPTH) - 1]  # [3, K]
    visit_q = ~mv.chair | ctx.ever_q
    return jnp.concatenate([cw[None], ccw[None], turns, rhythm, visit_q[None]], axis=0)


def _coordination_rows(lt, ctx: Context, mv: Move):
    """Norms 23-38 (docs/world.md §7 queues), all 16 paths in one batch -> [16, K]."""
    paths = lt.queue_paths
    valid = jnp.arange(paths.shape[1])[None, :] < lt.queue_len[:, None]
    dst, hit = _path_index(paths, valid, mv.target)  # [16, K], [16, 7, K]
    dst_held = jnp.any(hit & ctx.queue_held, axis=1)  # pi(k) held by another agent
    step_forward = (ctx.queue_src == dst + 1) & ~dst_held
    join_tail = (ctx.queue_src == _QUEUE_NONE) & (dst == ctx.queue_tail)
    return (dst == _QUEUE_NONE) | step_forward | join_tail


def _allocation_rows(lt, ctx: Context, mv: Move, group):
    """Norms 39-49 (docs/world.md §7 allocation): zone R, group doors and seats, seat order -> [11, K]."""
    enters_r = cell_value(lt.zone_r, mv.target, fill=False) & ~ctx.in_r
    capacity = ~enters_r[None, :] | (ctx.r_others[None, :] <= jnp.asarray(R_CAPACITY_OTHERS)[:, None])  # [2, K]
    single_group = ~enters_r | ~ctx.r_other_group
    any_door = jnp.any(mv.door_hit, axis=1)
    door_of = jnp.asarray(GROUP_DOOR)[:, group]  # [3, K]
    own_door = jnp.any((door_of[:, :, None] == jnp.arange(3)) & mv.door_hit[None], axis=2)
    doors = ~any_door[None, :] | own_door
    seats = ~mv.chair[None, :] | (mv.region[None, :] == jnp.asarray(GROUP_REGION)[:, group])
    in_order = ~mv.chair[None, :] | same_cell(mv.target[None, :, :], ctx.first_free[:, None, :])
    return jnp.concatenate([capacity, single_group[None], doors, seats, in_order], axis=0)


def judge(lt, ctx: Context, t, pos, active, action, group, moves):
    """[50, K] permissibility of effective actions given a precomputed context."""
    mv = _move(lt, pos, action)
    rows = jnp.concatenate(
        [
            _access_rows(lt, mv),
            _procedure_rows(lt, ctx, t, mv, moves),
            _coordination_rows(lt, ctx, mv),
            _allocation_rows(lt, ctx, mv, group),
        ],
        axis=0,
    )
    judged = active.astype(bool) & (action != C.WAIT)
    return rows | ~judged[None, :]


def permissible(lt, t, pos, active, action, group, moves, visited_q):
    """docs/world.md §7 permissibility bit w of every norm for every agent -> bool [50, K].

    lt: one layout's LayoutTables; t: int32 global step; pos int32 [K, 2];
    active bool [K]; action int32 [K] effective actions (re-applied here, so a
    raw blocked move counts as WAIT); group int32 [K]; moves bool [K, 3] own
    moves on turns t-1, t-2, t-3; visited_q bool [K] (Q before this step).
    """
    action = effective_actions(lt.kind, pos, action)
    ctx = context(lt, pos, active, group, visited_q)
    return judge(lt, ctx, t, pos, active, action, group, moves)


def permissible_per_action(lt, t, pos, active, group, moves, visited_q):
    """docs/world.md §7 per-action masks for planning -> bool [50, K, 5].

    Entry [n, i, a] is what norm n would say of agent i taking action a (after
    `effective_actions`, so blocked moves are permissible WAITs).  The
    state-dependent context is computed once and shared by the five actions.
    """
    ctx = context(lt, pos, active, group, visited_q)
    k = pos.shape[0]

    def one(a):
        action = effective_actions(lt.kind, pos, jnp.full((k,), a, jnp.int32))
        return judge(lt, ctx, t, pos, active, action, group, moves)

    return jax.vmap(one, out_axes=2)(jnp.arange(C.N_ACTIONS, dtype=jnp.int32))


def queue_path_of(norm_id):
    """The queue path a norm id reads (its own for the queue norms 23-38; a
    clipped, unused one for the others)."""
    return jnp.clip(jnp.asarray(norm_id) - reg.QUEUE_IDS[0], 0, C.N_QUEUE_PATHS - 1)


def single_queue_view(lt, norm_id):
    """Tables holding only the episode's queue path, as a block of one path.

    With it, `context` and `judge` evaluate the queue block for one path
    instead of 16 (the queue block dominates the cost of the full mask) and
    return 35 rows: 0-22 as the norm ids, 23 the episode's queue norm, 24-34
    norms 39-49.  `episode_row` maps a norm id to that row.
    """
    j = queue_path_of(norm_id)
    return lt.replace(queue_paths=lt.queue_paths[j][None], queue_len=lt.queue_len[j][None])


def episode_row(norm_id):
    """Row of `norm_id` in the 35-row mask of a `single_queue_view`."""
    first, last = reg.QUEUE_IDS[0], reg.QUEUE_IDS[-1]
    nid = jnp.asarray(norm_id, jnp.int32)
    row = jnp.where(nid < first, nid, jnp.where(nid <= last, first, nid - (last - first)))
    return jnp.clip(row, 0, 34)


def sanctions(norm_id, mask):
    """Public sanctions omega = 1 - w of the episode's norm -> bool mask.shape[1:].

    norm_id: int32 (may be traced), -1 = no norm (nothing is sanctioned);
    mask: [50, K] from `permissible` (or [50, K, 5] from `permissible_per_action`).
    """
    nid = jnp.asarray(norm_id, jnp.int32)
    row = mask[jnp.clip(nid, 0, reg.N_NORMS - 1)]
    return (nid >= 0) & ~row


def _check_blocks() -> None:
    """The block row counts must match the registry's id ranges."""
    sizes = (
        1 + len(ALL_EXIT_DOOR) + len(FORBIDDEN_DOOR) + len(SEAT_REGION_ALLOWED),
        2 + len(TURN_MODULUS) + len(RHYTHM_DEPTH) + 1,
        C.N_QUEUE_PATHS,
        len(R_CAPACITY_OTHERS) + 1 + len(GROUP_DOOR) + len(GROUP_REGION) + 2,
    )
    assert sizes == tuple(len(ids) for ids in reg.FAMILY_IDS), sizes


_check_blocks()
