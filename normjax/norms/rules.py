"""The episode's norm as data: a static table of permitted moves plus one dynamic rule.

Most norms judge a move by where it goes and where it starts only: forbidden
Q, the exit-door and seat-region norms, the circulation norms, group doors and
group seats (docs/world.md §7).  For those, whether action a of an agent of
group g standing on cell x is permitted depends on (layout, norm, g, x, a)
alone, so `static_permits()` stores it for every layout: 5 bits (one per
action) per (layout, norm, group, cell), 12 x 50 x 3 x 165 bytes.  The table is
built once in numpy and tested equal to the predicates themselves
(`permissible` with an agent on every cell).

Every other norm adds one condition on the state (`DYNAMIC_RULE`): the turn
index, the agent's own move rhythm, Q visited before a chair, the episode's
queue path, the number or groups of agents in R, the first free chair of a
seat order.  `episode_permits` evaluates the static bits and that one
condition for the K agents and 5 actions, instead of all 35 rows of the
`single_queue_view` mask and a selection of one row.  It returns exactly
that row (property-tested against `permissible_per_action`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.ground.moves import DELTAS, cell_value, in_grid, keep_open, kind_of, target_codes
from normjax.layouts.geometry import flat_index, same_cell
from normjax.layouts.tables import CODE_ZONE_R, host_tables
from normjax.norms import predicates as P
from normjax.norms import registry as reg

# Dynamic rules, one per norm (rule, argument).
(
    RULE_NONE,  # static only
    RULE_TURN,  # argument: row of P.TURN_MODULUS / P.TURN_FORBIDDEN
    RULE_RHYTHM,  # argument: consecutive own moves after which moving is forbidden
    RULE_VISIT_Q,  # a chair only after Q
    RULE_QUEUE,  # the episode's queue path (`single_queue_view` holds it as path 0)
    RULE_R_CAPACITY,  # argument: other agents allowed in R when entering it
    RULE_R_SINGLE_GROUP,  # no agent of another group in R when entering it
    RULE_SEAT_ORDER,  # argument: seat order (0 l2r, 1 r2l)
) = range(8)


def _dynamic_rules() -> np.ndarray:
    rule = np.zeros((reg.N_NORMS, 2), np.int32)
    for j, i in enumerate(reg.TURN_IDS):
        rule[i] = RULE_TURN, j
    for i, depth in zip(reg.RHYTHM_IDS, P.RHYTHM_DEPTH):
        rule[i] = RULE_RHYTHM, depth
    rule[reg.VISIT_ZONE_Q_FIRST] = RULE_VISIT_Q, 0
    for i in reg.QUEUE_IDS:
        rule[i] = RULE_QUEUE, 0
    for i, others in zip(reg.ZONE_R_IDS, P.R_CAPACITY_OTHERS):
        rule[i] = RULE_R_CAPACITY, others
    rule[reg.ZONE_R_IDS[-1]] = RULE_R_SINGLE_GROUP, 0
    for j, i in enumerate(reg.SEAT_ORDER_IDS):
        rule[i] = RULE_SEAT_ORDER, j
    rule.setflags(write=False)
    return rule


DYNAMIC_RULE = _dynamic_rules()  # int32 [50, 2]: (rule, argument) per norm


def _static_rows(ht: dict) -> np.ndarray:
    """bool [layouts, 50 norms, 3 groups, 165 cells, 5 actions]: the static rows of
    docs/world.md §7 in numpy (equal to `permissible`'s rows, tested), True for the
    dynamic-only norms and for blocked moves (they become a permissible WAIT)."""
    n_layouts = ht["kind"].shape[0]
    x = np.stack(np.unravel_index(np.arange(C.N_CELLS), (C.H, C.W)), axis=1)  # [165, 2]
    y = x[:, None, :] + np.asarray(C.ACTION_DELTAS)[None, :, :]  # [165, 5, 2]
    inside = (y[..., 0] >= 0) & (y[..., 0] < C.H) & (y[..., 1] >= 0) & (y[..., 1] < C.W)
    yr, yc = np.clip(y[..., 0], 0, C.H - 1), np.clip(y[..., 1], 0, C.W - 1)
    out = np.ones((n_layouts, reg.N_NORMS, C.N_GROUPS, C.N_CELLS, C.N_ACTIONS), bool)
    groups = np.arange(C.N_GROUPS)
    for lid in range(n_layouts):
        at = lambda name, fill: np.where(inside, ht[name][lid][yr, yc], fill)
        kind = at("kind", C.WALL)
        moving = ((kind == C.FLOOR) | (kind == C.CHAIR) | (kind == C.DOOR)) & (np.arange(C.N_ACTIONS) != C.WAIT)
        door_hit = np.all(y[:, :, None, :] == ht["doors"][lid][None, None], axis=-1)  # [165, 5, 3]
        any_door = door_hit.any(-1)
        chair, region = at("chair", False), at("region", -1)
        rows = {reg.FORBIDDEN_ZONE_Q: ~at("zone_q", False)}
        for i, d in zip(reg.ALL_EXIT_IDS, P.ALL_EXIT_DOOR):
            rows[i] = ~any_door | door_hit[..., d]
        for i, d in zip(reg.DOOR_FORBIDDEN_IDS, P.FORBIDDEN_DOOR):
            rows[i] = ~door_hit[..., d]
        for i, allowed in zip(reg.SEAT_REGION_IDS, P.SEAT_REGION_ALLOWED):
            rows[i] = ~chair | np.isin(region, np.flatnonzero(allowed))
        along_ring = ht["ring"][lid].reshape(-1)[:, None] & at("ring", False)
        for i, step in zip(reg.CIRCULATION_IDS, ("cw", "ccw")):
            nxt = x + ht[step][lid].reshape(-1, 2)
            rows[i] = ~along_ring | np.all(y == nxt[:, None, :], axis=-1)
        for i, n in rows.items():
            out[lid, i] = (n | ~moving)[None]
        for i, doors in zip(reg.GROUP_DOOR_IDS, P.GROUP_DOOR):
            own = np.moveaxis(door_hit[..., doors[groups]], -1, 0)  # [3 groups, 165, 5]
            out[lid, i] = ~any_door[None] | own | ~moving[None]
        for i, regions in zip(reg.GROUP_SEATING_IDS, P.GROUP_REGION):
            out[lid, i] = ~chair[None] | (region[None] == regions[groups][:, None, None]) | ~moving[None]
    return out


@functools.cache
def static_permits() -> jax.Array:
    """uint8 [layouts, 50 norms, 3 groups, 165 cells]: bit a set = action a is permitted
    by the norm's static part (all set for the dynamic-only norms).  Built in numpy
    (milliseconds) and cached; in jit it is a constant."""
    rows = _static_rows(host_tables())
    bits = (rows.astype(np.uint8) << np.arange(C.N_ACTIONS, dtype=np.uint8)).sum(-1, dtype=np.uint8)
    with jax.ensure_compile_time_eval():
        return jnp.asarray(bits)


def path_position(path, length, cells):
    """Index of each flat cell on a queue path (flat [L] cells, the first
    `length` valid), -1 off the path; the first index where a cell repeats.
    As L selects over `cells`' shape (no gather by a batched index)."""
    pos = jnp.full(jnp.shape(cells), -1, jnp.int32)
    for i in reversed(range(path.shape[0])):  # the first match is written last
        pos = jnp.where((i < length) & (cells == path[i]), i, pos)
    return pos


def queue_order(lt, target, queue_held, queue_src, queue_tail):
    """bool [K, A]: each target keeps the order of the episode's queue path: one
    step toward the head, or joining at the tail (or off the path)."""
    # dst: the target's index on the path (`lt` holds the episode's path as
    # path 0), -1 off it.
    cells = jnp.where(in_grid(target), flat_index(target), -1)
    dst = path_position(flat_index(lt.queue_paths[0]), lt.queue_len[0], cells)  # [K, A]
    held = queue_held[0]  # [7, K]: path cell held by another agent than i
    dst_held = jnp.zeros(dst.shape, bool)
    for cell_k in range(held.shape[0]):  # held[dst, i] as selects (no [K, A, 7] reduction)
        dst_held = jnp.where(dst == cell_k, held[cell_k][:, None], dst_held)
    src, tail = queue_src[0][:, None], queue_tail[0][:, None]
    return (dst == -1) | ((src == dst + 1) & ~dst_held) | ((src == -1) & (dst == tail))


def judged_targets(pos, actions=None):
    """The actions `episode_permits` judges, int32 [K, A] (all five, or the
    given [K] actions as A = 1), and their target cells [K, A, 2]."""
    k = pos.shape[0]
    if actions is None:
        acts = jnp.broadcast_to(jnp.arange(C.N_ACTIONS, dtype=jnp.int32)[None, :], (k, C.N_ACTIONS))
    else:
        acts = jnp.asarray(actions, jnp.int32)[:, None]
    return acts, pos[:, None, :] + DELTAS[acts]


def episode_permits(lt, ctx: P.Context, norm_id, t, pos, active, group, moves, queue_ok, actions=None) -> jax.Array:
    """bool [K, 5]: what the episode's norm says of each agent taking each action;
    with `actions` [K], bool [K, 1] for those actions only.

    `lt` is one layout's `single_queue_view` (its `layout_index` set) and `ctx` its
    `context`; `queue_ok` [K, A] is `queue_order` of the same actions (read
    only under a queue norm: the caller computes it with the queue state, in
    one `run_where`).  Equal to row `episode_row(norm_id)` of `judge` per
    action (norm -1 reads norm 0, as that selection does).
    """
    k = pos.shape[0]
    acts, target = judged_targets(pos, actions)  # only judged entries matter
    # Kind and zone flags from one gather (for all five actions the planner's own).
    code = target_codes(lt.code, pos) if actions is None else cell_value(lt.code, target, fill=0)
    width = acts.shape[1]
    target_kind = kind_of(code)  # [K, A]
    eff = keep_open(target_kind, acts)
    judged = active.astype(bool)[:, None] & (eff != C.WAIT)

    nid = jnp.clip(jnp.asarray(norm_id, jnp.int32), 0, reg.N_NORMS - 1)
    cell = jnp.clip(flat_index(pos), 0, C.N_CELLS - 1)
    bits = static_permits()[lt.index, nid, group, cell]  # [K] uint8, bit a = action a
    static_ok = ((bits[:, None] >> acts.astype(jnp.uint8)) & 1).astype(bool)

    rule, arg = jnp.asarray(DYNAMIC_RULE)[nid, 0], jnp.asarray(DYNAMIC_RULE)[nid, 1]
    chair = target_kind == C.CHAIR
    t = jnp.asarray(t, jnp.int32)
    turn = jnp.mod(t, jnp.asarray(P.TURN_MODULUS)[arg]) != jnp.asarray(P.TURN_FORBIDDEN)[arg]
    # Rhythm: moved on each of the last `arg` turns (the norm's depth, at most
    # the history's length), as ands of the history bits (a cumprod and a
    # column gather cost a reduce-window and a gather under vmap).
    mv = moves.astype(bool)
    run = mv[:, 0]
    for back in range(1, mv.shape[1]):  # history column `back`: the turn t-1-back
        run = run & ((arg <= back) | mv[:, back])
    rhythm = ~run
    visit_q = ~chair | ctx.ever_q[:, None]

    enters_r = ((code & CODE_ZONE_R) != 0) & ~ctx.in_r[:, None]
    r_capacity = ~enters_r | (ctx.r_others <= arg)[:, None]
    r_group = ~enters_r | ~ctx.r_other_group[:, None]
    first = ctx.first_free[jnp.clip(arg, 0, 1)]
    in_order = ~chair | same_cell(target, first[None, None, :])

    dynamic = jnp.select(
        [
            rule == RULE_TURN,
            rule == RULE_RHYTHM,
            rule == RULE_VISIT_Q,
            rule == RULE_QUEUE,
            rule == RULE_R_CAPACITY,
            rule == RULE_R_SINGLE_GROUP,
            rule == RULE_SEAT_ORDER,
        ],
        [
            jnp.broadcast_to(turn, (k, width)),
            jnp.broadcast_to(rhythm[:, None], (k, width)),
            visit_q,
            queue_ok,
            r_capacity,
            r_group,
            in_order,
        ],
        True,
    )
    return (static_ok & dynamic) | ~judged


__all__ = ["DYNAMIC_RULE", "episode_permits", "judged_targets", "path_position", "queue_order", "static_permits"]
