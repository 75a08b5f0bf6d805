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
Cost under `vmap`: a few [K, 165] gathers and [K, 5] arithmetic per step, plus
the per-action norm mask; no search runs inside the step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.layouts.geometry import flat_index as _flat
from normjax.layouts.routes import corridor_tables, route_rows, route_tables
from normjax.layouts.tables import world_tables
from normjax.norms import context, episode_row, judge, single_queue_view
from normjax.norms.table import norm_row
from normjax.world.hashrand import hash_uniform, seed_from_key
from normjax.world.moves import DELTAS, cell_value, effective_actions, in_grid
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL, ROLE_AWARE, WorldParams, WorldState

COLLISION_COST = 3.0
WAIT_BIAS = 0.5
INF = 1e6
HABIT_NONE, HABIT_SAME_EXIT_DOOR, HABIT_MOVE1_WAIT1 = 0, 1, 2


def choose_goals(seed, lt, ctx, state: WorldState, norm_id, aware, variant, dist_from):
    """Flat goal cell per agent [K] for its current leg (step 1 above)."""
    ag = state.agents
    k = ag.active.shape[0]
    cells = jnp.arange(C.N_CELLS)
    x = _flat(ag.pos)
    # Cells held by another active agent [K, 165]: the occupancy count minus
    # the agent itself (a [K, 165] table, not a pairwise [K, K, 165] one).
    own = ag.active[:, None] & (x[:, None] == cells[None, :])
    occ_other = (own.sum(0, dtype=jnp.int32)[None, :] - own) > 0
    chair = lt.chair.reshape(-1)[None, :]
    zone_r = lt.zone_r.reshape(-1)[None, :]
    zone_q = lt.zone_q.reshape(-1)[None, :]
    region = lt.region.reshape(-1)
    reg_ok = norm_row(norm_id, "allowed_regions")[ag.group]  # [K, 3]
    chair_region_ok = jnp.where(region[None, :] >= 0, reg_ok[:, jnp.maximum(region, 0)], False)
    # seats in order: only the first free chair of sigma is permissible.
    order = norm_row(norm_id, "seat_order")  # -1 unless a seats-in-order norm
    first = ctx.first_free[jnp.maximum(order, 0)]
    first_ok = (order < 0) | (cells == _flat(first))[None, :] & (first[0] >= 0)
    chair_aware = chair_region_ok & first_ok
    free_chair = chair & ~occ_other & jnp.where(aware[:, None], chair_aware, True)

    goal_onehot = cells[None, :] == _flat(ag.goal_cell)[:, None]
    leg0 = jnp.select(
        [ag.goal_kind[:, None] == GOAL_ANY_CHAIR, ag.goal_kind[:, None] == GOAL_ANY_R],
        [free_chair, zone_r & ~occ_other],
        goal_onehot,
    )
    # visit_zone_q_first: a norm-aware agent bound for a chair visits Q first.
    to_chair = (ag.goal_kind == GOAL_ANY_CHAIR) | lt.chair.reshape(-1)[_flat(jnp.maximum(ag.goal_cell, 0))]
    need_q = aware & norm_row(norm_id, "visit_q_first") & ~ctx.ever_q & to_chair
    leg0 = jnp.where(need_q[:, None], zone_q & ~occ_other, leg0)

    door_flat = _flat(lt.doors)  # [3]
    allowed = jnp.where(aware[:, None], norm_row(norm_id, "allowed_doors")[ag.group], True)  # [K, 3]
    entry_ok = jnp.take_along_axis(allowed, ag.entry_door[:, None], 1)[:, 0]
    same = (ag.habit == HABIT_SAME_EXIT_DOOR) & entry_ok
    allowed = jnp.where(same[:, None], jnp.arange(3)[None, :] == ag.entry_door[:, None], allowed)
    spec = jnp.arange(3)[None, :] == ag.exit_door[:, None]
    doors_ok = jnp.where((ag.exit_door == ANY_DOOR)[:, None], allowed, spec)  # [K, 3]
    leg1 = (doors_ok[:, :, None] & (door_flat[None, :, None] == cells[None, None, :])).any(1)

    cand = jnp.where((ag.leg == 0)[:, None], leg0, leg1)
    noise = 0.01 * hash_uniform(seed, (k, C.N_CELLS), salt=1)
    score = jnp.where(cand, dist_from.astype(jnp.float32) + noise, INF)
    goal = jnp.argmin(score, axis=1)

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


def episode_norm_per_action(lt1, ctx, state: WorldState, norm_id):
    """[K, 5] per-action permissibility under the episode's norm only.

    Same predicates as `permissible_per_action`, but the queue block is
    evaluated for the episode's one queue path instead of all 16 (the queue
    block dominates the cost of the full [50, K, 5] mask under vmap); the
    other 34 rows are cheap and kept.  Row layout: 0-22 as the norm ids, 23 =
    the episode's queue norm, 24-34 = norms 39-49.
    """
    ag = state.agents
    k = ag.active.shape[0]

    def one(a):
        action = effective_actions(lt1.kind, ag.pos, jnp.full((k,), a, jnp.int32))
        return judge(lt1, ctx, state.t, ag.pos, ag.active, action, ag.group, ag.moves)

    rows = jax.vmap(one, out_axes=2)(jnp.arange(C.N_ACTIONS, dtype=jnp.int32))  # [35, K, 5]
    return rows[episode_row(norm_id)]


def plan_actions(key, state: WorldState, params: WorldParams, aware):
    """Actions [K] of the norm-aware (aware=True) / norm-blind planner per slot."""
    lt = world_tables().at(params.layout_id)
    # Gather single entries from the stacked tables: slicing one layout's
    # [V, 165, 165] block would copy it per environment under vmap.
    lid = params.layout_id
    routes = route_tables()  # [L, V, 165 (target), 165 (from)] uint8
    corridors = corridor_tables()  # [L, V, 165]
    ag = state.agents
    k = ag.active.shape[0]
    norm_id = params.norm_id
    seed = seed_from_key(key)  # one threefry draw; tie-breaks are hashed from it
    variant = jnp.where(aware, norm_row(norm_id, "route_variant"), 0)
    x = _flat(ag.pos)
    # Distances from each agent's cell to every cell: one contiguous row per
    # agent of the transposed table (a row gather, not 165 scattered entries).
    dist_from = route_rows()[lid, variant, x].astype(jnp.int32)  # [K, 165]
    lt1 = single_queue_view(lt, norm_id)
    ctx = context(lt1, ag.pos, ag.active, ag.group, ag.visited_q)
    goal = choose_goals(seed, lt, ctx, state, norm_id, aware, variant, dist_from)

    # Costs of the five actions.
    acts = jnp.arange(C.N_ACTIONS)
    nxt = ag.pos[:, None, :] + DELTAS[None, :, :]  # [K, 5, 2]
    eff = effective_actions(lt.kind, ag.pos[:, None, :], acts[None, :])  # [K, 5]
    y = jnp.where(in_grid(nxt), _flat(nxt), x[:, None])
    d_y = routes[lid, variant[:, None], goal[:, None], y].astype(jnp.float32)
    enter_ok = corridors[lid, variant[:, None], y] | (y == goal[:, None])
    moving = (eff == acts[None, :]) & (acts[None, :] != C.WAIT)
    reach = d_y < C.UNREACHABLE
    base = jnp.where(moving & enter_ok & reach, d_y, INF)
    d_x = routes[lid, variant, goal, x].astype(jnp.float32)
    base = base.at[:, C.WAIT].set(jnp.where(d_x < C.UNREACHABLE, d_x, 300.0) + WAIT_BIAS)

    # Norm-aware: infinite cost for whatever the norm forbids now.
    mask = episode_norm_per_action(lt1, ctx, state, norm_id)  # [K, 5]
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
    door_next = cell_value(lt.kind, nxt, fill=C.WALL) == C.DOOR
    pred = jnp.where(door_next[jnp.arange(k), greedy], -1, pred)  # exiting: leaves the grid
    # Yield only to agents predicted to stay, or of higher random priority this
    # step: symmetric yielding would deadlock two agents that want one cell.
    prio = jnp.argsort(hash_uniform(seed, (k,), salt=2))
    stays = pred == x
    # Nobody yields to an agent that stands still because its goal is
    # unreachable now (e.g. a queue tail with no off-path neighbour): it would
    # never move, and an agent whose only way out is its cell would wait
    # forever.  Moving in pushes it aside instead (docs/world.md §4 rule 3).
    stuck = ag.active & (d_x >= C.UNREACHABLE)
    yield_to = (jnp.arange(k)[:, None] != jnp.arange(k)[None, :]) & ~stuck[None, :] & (
        stays[None, :] | (prio[None, :] > prio[:, None])
    )
    hit = ((y[:, :, None] == pred[None, None, :]) & yield_to[:, None, :]).any(-1)  # [K, 5]
    cost = base + COLLISION_COST * (hit & moving)

    cost = jnp.where(ok, cost, INF)
    cost = cost + 1e-3 * hash_uniform(seed, cost.shape, salt=3)
    return jnp.argmin(cost, axis=1).astype(jnp.int32)
