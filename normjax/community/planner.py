"""Scripted agents: batched shortest-path planning with one-step prediction.

Implements docs/world.md §8 (paper 9.4, Algorithm 1) for all K slots at once:

1. Goal choice.  The current leg's goal is a specified cell or door, or a free
   choice (any chair, any R cell, any door): the nearest acceptable one, and
   for a norm-aware agent the nearest *permissible* one (allowed door / seat
   region / group door or region, the first free seat in sigma).  Norm-aware
   agents under visit_zone_q_first head for Q before sitting; under a queue
   norm they head for the queue's tail, then step forward along the path.
2. Prediction.  Every agent's next cell is predicted as its greedy step on the
   static distance table (no collision cost).  An agent yields to the predicted
   cells of agents that stay put and of agents with a higher random priority
   this step, so two agents contesting one cell never wait for each other
   forever.
3. Action.  Each of the five actions costs the table distance from the cell it
   leads to (WAIT: from the current cell, plus 0.5 so progress beats waiting
   and waiting beats a sideways step), plus `COLLISION_COST` when another
   agent is predicted to end on that cell.  A norm-aware agent gives infinite
   cost to every action its norm forbids now (the per-action mask, docs/world.md §7):
   timing, rhythm, capacity, queue order and seat order make it wait.  Random
   tie-breaking comes from the key.  A norm-blind agent uses the base graph
   and no mask.

The static parts of norms are in the move graphs of `normjax.layouts.routes`
(forbidden cells removed, ring edges directed, queue path cells kept clear).
Cost under `vmap`: gathers of a few dozen goal candidates per agent, [K, 5]
arithmetic, and the per-action norm mask; no search runs inside the step.
"""

from __future__ import annotations

import jax.numpy as jnp

from normjax import constants as C
from normjax import salts
from normjax.constants import HABIT_MOVE1_WAIT1, HABIT_NONE, HABIT_SAME_EXIT_DOOR, ROLE_AWARE  # noqa: F401 (re-exported)
from normjax.ground.hashrand import hash_at, hash_uniform, seed_from_key
from normjax.ground.moves import DELTAS, in_grid, keep_open, kind_of, target_codes
from normjax.ground.ranking import argmin_small, argsort_small
from normjax.layouts.geometry import flat_index as _flat
from normjax.layouts.routes import (
    CASE_CHAIR,
    CASE_DOOR,
    CASE_Q,
    CASE_R,
    candidate_count,
    corridor_tables,
    goal_candidate_tables,
    planner_width,
    route_rows,
)
from normjax.layouts.tables import world_tables
from normjax.norms.table import norm_row
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL, WorldParams, WorldState
from normjax.world.step import state_norm

COLLISION_COST = 3.0
WAIT_BIAS = 0.5
INF = 1e6


def _option_of(options, index):
    """options [K, 3] bool, index [N] in -1..2 -> [K, N]: options[i, index[n]],
    False for -1.  Per-candidate lookups as three selects: under vmap a gather
    by a batched column index costs more, and so does a one-hot [K, N, 3]
    reduction (its minor axis of 3 is not vectorised; measured about 12% of
    the full step for the door lookup alone)."""
    out = jnp.zeros(options.shape[:1] + index.shape, bool)
    for option in range(options.shape[1]):
        out = jnp.where((index == option)[None, :], options[:, option, None], out)
    return out


def _row_of(table, case):
    """table [R, W], case [K] -> [K, W]: row `case` of the table per agent (row
    0 for a case outside 1..R-1).  Selects, not a gather by a batched index."""
    out = jnp.broadcast_to(table[0], case.shape + table.shape[1:])
    for row in range(1, table.shape[0]):
        out = jnp.where((case == row)[:, None], table[row][None, :], out)
    return out


def choose_goals(seed, lt, ctx, state: WorldState, norm_id, aware, dist):
    """Flat goal cell per agent [K] for its current leg (step 1 above).

    Each agent is in one case: leg 1 -> a door; visit Q first -> Q; else its
    goal kind (any chair, any R cell, or its own specified cell).  It scores
    only its case's row of the layout's goal candidates (`host_goal_candidates`)
    and its own cell, not all 165 cells.  `dist(cells [K, N]) -> [K, N]` gives
    each agent's moves to the cells.  The result equals an argmin over all 165
    cells of (distance + tie-break noise) with non-candidates at INF: the same
    noise values (`hash_at` of the same flat indices), the lowest flat index
    among equal scores, and cell 0 when an agent has no candidate at all.  On
    the single-layout path (`lt.static_index`) the rows are cut to that
    layout's longest list, not the longest of all layouts (both rounded up by
    `planner_width`).
    """
    ag = state.agents
    k = ag.active.shape[0]
    cand = goal_candidate_tables()
    longest = candidate_count(lt.static_index if lt.static_index >= 0 else None)
    width = planner_width(longest)  # columns: the case's row, padding, the own cell last
    table = cand["cell"][lt.index, :, :width]  # [N_CASES, W]
    region = cand["region"][lt.index, :width]  # [W] seat regions of the chair row
    own_col = jnp.arange(width) == width - 1
    x = _flat(ag.pos)
    goal_flat = _flat(ag.goal_cell)

    to_chair = (ag.goal_kind == GOAL_ANY_CHAIR) | lt.chair.reshape(-1)[_flat(jnp.maximum(ag.goal_cell, 0))]
    need_q = aware & norm_row(norm_id, "visit_q_first") & ~ctx.ever_q & to_chair
    leg0 = ag.leg == 0
    own_case = leg0 & ~need_q & (ag.goal_kind != GOAL_ANY_CHAIR) & (ag.goal_kind != GOAL_ANY_R)
    case = jnp.where(
        ~leg0, CASE_DOOR, jnp.where(need_q, CASE_Q, jnp.where(ag.goal_kind == GOAL_ANY_CHAIR, CASE_CHAIR, CASE_R))
    )  # own_case: only the own cell is valid
    cells = jnp.where(own_col[None, :], goal_flat[:, None], _row_of(table, case))  # [K, W]

    # Chairs, R and Q cells held by another active agent: counts per table
    # entry (summed over agents), less the agent's own.
    held = (ag.active[:, None, None] & (x[:, None, None] == table[None, :CASE_DOOR, :])).sum(0, dtype=jnp.int32)
    free = (_row_of(held, case) - (ag.active[:, None] & (x[:, None] == cells))) == 0

    # Chairs: a norm-aware agent only takes permissible ones (seat region, the
    # first free seat in sigma under the seats-in-order norms).
    reg_ok = norm_row(norm_id, "allowed_regions")[ag.group]  # [K, 3]
    chair_region_ok = _option_of(reg_ok, region)  # [K, W]
    order = norm_row(norm_id, "seat_order")  # -1 unless a seats-in-order norm
    first = ctx.first_free[jnp.maximum(order, 0)]
    first_ok = (order < 0) | (cells == _flat(first)) & (first[0] >= 0)
    chair_ok = jnp.where(aware[:, None], chair_region_ok & first_ok, True)

    # Doors an agent may leave by (its norm's doors for its group, a habit, a
    # specified door); door j is entry j of the door row.
    allowed = jnp.where(aware[:, None], norm_row(norm_id, "allowed_doors")[ag.group], True)  # [K, 3]
    entry_ok = jnp.take_along_axis(allowed, ag.entry_door[:, None], 1)[:, 0]
    same = (ag.habit == HABIT_SAME_EXIT_DOOR) & entry_ok
    allowed = jnp.where(same[:, None], jnp.arange(3)[None, :] == ag.entry_door[:, None], allowed)
    spec = jnp.arange(3)[None, :] == ag.exit_door[:, None]
    doors_ok = jnp.where((ag.exit_door == ANY_DOOR)[:, None], allowed, spec)  # [K, 3]
    door_ok = _option_of(doors_ok, jnp.where(jnp.arange(width) < 3, jnp.arange(width), -1))  # [K, W]

    listed = (
        (cells >= 0)
        & ~own_case[:, None]
        & jnp.where(
            (case == CASE_DOOR)[:, None], door_ok, free & jnp.where((case == CASE_CHAIR)[:, None], chair_ok, True)
        )
    )
    # The agent's own specified cell is its only candidate in the remaining case.
    own_ok = own_case & (goal_flat >= 0) & (goal_flat < C.N_CELLS)
    valid = jnp.where(own_col[None, :], own_ok[:, None], listed)
    safe = jnp.clip(cells, 0, C.N_CELLS - 1)
    noise = 0.01 * hash_at(seed, jnp.arange(k)[:, None] * C.N_CELLS + safe, salt=salts.PLANNER_GOAL_NOISE)
    score = jnp.where(valid, dist(safe).astype(jnp.float32) + noise, INF)
    best = score.min(axis=1, keepdims=True)
    tie = valid & (score == best)
    goal = jnp.where(best[:, 0] < INF, jnp.where(tie, safe, C.N_CELLS).min(axis=1), 0)

    # Queue norms: join at the tail, then step toward the head along the path.
    queue = norm_row(norm_id, "queue_path")  # -1 unless a queue norm
    j = jnp.maximum(queue, 0)
    is_queue = queue >= 0
    path = _flat(lt.queue_paths[j])  # [7]
    length = lt.queue_len[j]
    k_on = ctx.queue_src[0]  # [K] path index of the current cell or -1 (ctx has one path)
    tail = jnp.minimum(ctx.queue_tail[0], length - 1)
    q_goal = jnp.where(k_on > 0, path[jnp.maximum(k_on - 1, 0)], jnp.where(k_on == 0, path[0], path[tail]))
    to_service = (ag.leg == 0) & (ag.goal_kind == GOAL_CELL) & (_flat(ag.goal_cell) == path[0])
    use_queue = aware & is_queue & to_service
    return jnp.where(use_queue, q_goal, goal).astype(jnp.int32)


def plan_actions(key, state: WorldState, params: WorldParams, aware, view=None):
    """Actions [K] of the norm-aware (aware=True) / norm-blind planner per slot.

    `view`: the episode's norm on `state` (`normjax.world.step.state_norm`), when
    the caller has it already (`env_step` shares it with the world step).
    """
    cost, seed = action_costs(key, state, params, aware, view)
    cost = cost + 1e-3 * hash_uniform(seed, cost.shape, salt=salts.PLANNER_MOVE_NOISE)
    return argmin_small(cost)  # == jnp.argmin(cost, axis=1), vectorised


def action_costs(key, state: WorldState, params: WorldParams, aware, view=None):
    """(cost [K, 5] of each action before the random tie-break, the step's hash seed).

    `plan_actions` takes the argmin of `cost` plus a tie-break below 1e-3, so
    the actions at the minimum cost are the planner's tie set (equally fast);
    an action at `INF` is forbidden by the norm (aware slots), leaves the
    routes or is blocked, and `COLLISION_COST` is added for a move onto a
    cell another agent is predicted to end on (`normjax.finetune`).
    """
    lt = world_tables().at(params.layout)
    # Gather single entries from the stacked tables: slicing one layout's
    # [V, 165, 165] block would copy it per environment under vmap.
    lid = params.layout
    rows = route_rows()  # [L, V, 165 (from), 165 (target)] uint8
    corridors = corridor_tables()  # [L, V, 165]
    ag = state.agents
    k = ag.active.shape[0]
    norm_id = params.norm_id
    seed = seed_from_key(key)  # one threefry draw; tie-breaks are hashed from it
    variant = jnp.where(aware, norm_row(norm_id, "route_variant"), 0)
    x = _flat(ag.pos)
    view = state_norm(state, params) if view is None else view
    ctx = view.ctx
    goal = choose_goals(
        seed, lt, ctx, state, norm_id, aware, lambda cells: rows[lid, variant[:, None], x[:, None], cells]
    )

    # Costs of the five actions.
    acts = jnp.arange(C.N_ACTIONS)
    nxt = ag.pos[:, None, :] + DELTAS[None, :, :]  # [K, 5, 2]
    target_kind = kind_of(target_codes(lt.code, ag.pos))  # [K, 5]
    eff = keep_open(target_kind, acts[None, :])
    y = jnp.where(in_grid(nxt), _flat(nxt), x[:, None])
    d_y = rows[lid, variant[:, None], y, goal[:, None]].astype(jnp.float32)
    enter_ok = corridors[lid, variant[:, None], y] | (y == goal[:, None])
    moving = (eff == acts[None, :]) & (acts[None, :] != C.WAIT)
    reach = d_y < C.UNREACHABLE
    base = jnp.where(moving & enter_ok & reach, d_y, INF)
    d_x = rows[lid, variant, x, goal].astype(jnp.float32)
    base = base.at[:, C.WAIT].set(jnp.where(d_x < C.UNREACHABLE, d_x, 300.0) + WAIT_BIAS)

    # Norm-aware: infinite cost for whatever the norm forbids now.
    mask = view.permitted  # [K, 5]
    ok = jnp.where(aware[:, None] & (norm_id >= 0), mask, True)
    # Habit move1_wait1: rest after every move (WAIT is always permissible).
    rest = (ag.habit == HABIT_MOVE1_WAIT1) & ag.moves[:, 0]
    resting = rest[:, None] & (acts[None, :] != C.WAIT)
    ok = ok & ~resting

    # One-step prediction of the others' next cells (greedy, no collision
    # cost).  Short, timed waits are predicted: an agent known to follow the
    # norm (norm-aware background agents, and the agents planned here as
    # norm-aware) that must wait this turn under a turn-parity or rhythm norm
    # (14-21), or rests by habit, is predicted to stay.  Predicting its
    # unmasked step made neighbours move into a resting agent's cell and push
    # it away, which under rhythm norms could repeat forever at a one-cell
    # door approach.  Open-ended waits (queue order, capacity, seat order)
    # stay unpredicted on purpose: yielding to an agent that waits for the
    # queue to move, e.g. on the only exit of the head cell, would deadlock.
    # The newcomer's policy is unknown to the community: predicted unmasked.
    follows = (ag.role == ROLE_AWARE) | aware
    timed = norm_row(norm_id, "timed")
    pred_ok = jnp.where(follows[:, None] & timed, mask, True) & ~resting
    greedy = jnp.argmin(jnp.where(pred_ok, base, INF), axis=1)
    pred = jnp.where(ag.active, jnp.take_along_axis(y, greedy[:, None], 1)[:, 0], -1)
    door_next = target_kind == C.DOOR
    pred = jnp.where(door_next[jnp.arange(k), greedy], -1, pred)  # exiting: leaves the grid
    # Yield only to agents predicted to stay, or of higher random priority this
    # step: symmetric yielding would deadlock two agents that want one cell.
    prio = argsort_small(hash_uniform(seed, (k,), salt=salts.PLANNER_PRIORITY))
    stays = pred == x
    # Nobody yields to an agent that stands still because its goal is
    # unreachable now (e.g. a queue tail with no off-path neighbour): it would
    # never move, and an agent whose only way out is its cell would wait
    # forever.  Moving in pushes it aside instead (docs/world.md §4 rule 3).
    stuck = ag.active & (d_x >= C.UNREACHABLE)
    yield_to = (
        (jnp.arange(k)[:, None] != jnp.arange(k)[None, :])
        & ~stuck[None, :]
        & (stays[None, :] | (prio[None, :] > prio[:, None]))
    )
    # hit [K, 5]: another agent this one yields to is predicted there.  Agent j
    # is bit j: the yields as one int per agent, the agents predicted on each
    # target cell as one int per action, unrolled over j (no [K, 5, K]
    # reduction over its minor axis, and `yield_to` is not recomputed per action).
    bit = jnp.left_shift(jnp.int32(1), jnp.arange(k, dtype=jnp.int32))
    yield_bits = jnp.where(yield_to, bit[None, :], 0).sum(axis=1, dtype=jnp.int32)  # [K]
    there = jnp.zeros(y.shape, jnp.int32)
    for j in range(k):
        there = there | jnp.where(y == pred[j], bit[j], 0)
    hit = (there & yield_bits[:, None]) != 0
    cost = base + COLLISION_COST * (hit & moving)

    return jnp.where(ok, cost, INF), seed
