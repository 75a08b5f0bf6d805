"""Turnover and entry (docs/world.md §2): the last stage of the world step.

Agents that exited free their slot; `refill` gives such slots fresh pending
agents (new uid, group, task, habit) that enter after a random delay, and
`enter` lets pending agents whose time has come onto their door's inward cell.
`turnover` is the stage as the world step runs it; `reset_world` uses `refill`
and `enter` to draw an episode's first agents.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.ground.draws_at import randint_at
from normjax.ground.rare import run_where
from normjax.layouts.geometry import same_cell
from normjax.layouts.tables import LayoutTables
from normjax.world import tasks
from normjax.world.habits import draw_habits
from normjax.world.state import WorldParams, WorldState

# The agent fields `refill` sets (it reads its new values by these names).
REFILLED = ("spawn_t", "uid", "group", "entry_door", "goal_kind", "goal_cell", "exit_door", "habit")


def refill(key, state: WorldState, slots, lt, params: WorldParams, now, max_slots: int | None = None):
    """Give `slots` (bool [K]) fresh pending agents (new uid, group, task, habit).

    With `max_slots` = m, the tasks and delays are drawn only for the first m
    slots of `slots` (the same values as drawing for all K); the caller
    guarantees that no more than m slots are set.
    Habits (docs/world.md §8.5) hash the key's raw words: no draw below changes.
    """
    drawn = fresh_draws(key, slots, lt, params, None if max_slots is None else range(max_slots))
    return place_draws(key, state, slots, drawn, params, now, max_slots)


def fresh_draws(key, slots, lt, params: WorldParams, ranks: range | None = None):
    """The random part of `refill`: (delay, goal_kind, goal_cell, exit_door,
    entry_door, group), one entry per slot; with `ranks`, one per rank r in
    `ranks` among the set slots (the draws of the slot of rank r, exactly
    those of drawing for all slots)."""
    k = slots.shape[0]
    kt, kd = jax.random.split(key)
    lo, hi = params.turnover_delay[0], params.turnover_delay[1]
    if ranks is None:
        at = jnp.arange(k)
        drawn = tasks.sample_tasks(kt, lt, params.norm_id, k)
        delay = jax.random.randint(kd, (k,), lo, hi + 1)
    else:
        rank = jnp.cumsum(slots) - 1
        # at[j]: the slot of rank ranks[j] (0 where there is none: its draws go unused).
        at = jnp.stack([jnp.sum(jnp.where(slots & (rank == r), jnp.arange(k), 0)) for r in ranks])
        drawn = tasks.sample_tasks(kt, lt, params.norm_id, k, at=at)
        delay = randint_at(kd, at, lo, hi + 1)
    # The newcomer is replaced at once when replacement is on (docs/world.md §9, training).
    return (jnp.where(at == 0, 0, delay),) + tuple(drawn)


def place_draws(key, state: WorldState, slots, drawn, params: WorldParams, now, max_slots: int | None = None):
    """The rest of `refill`: `fresh_draws`' values written into the agents of
    `slots` (every other agent unchanged), uids and habits."""
    ag = state.agents
    rank = jnp.cumsum(slots) - 1

    def spread(v):  # slot i takes draw rank[i] (with max_slots; else draw i)
        if max_slots is None:
            return v
        r = rank.reshape(rank.shape + (1,) * (v.ndim - 1))
        out = v[max_slots - 1]
        for j in range(max_slots - 2, -1, -1):
            out = jnp.where(r == j, v[j], out)
        return out

    delay, goal_kind, goal_cell, exit_door, entry_door, group = (spread(v) for v in drawn)
    sel = lambda new, old: jnp.where(slots.reshape(slots.shape + (1,) * (jnp.ndim(old) - 1)), new, old)
    fresh = dict(
        spawn_t=now + delay,
        uid=state.next_uid + rank,
        group=group,
        entry_door=entry_door,
        goal_kind=goal_kind,
        goal_cell=goal_cell,
        exit_door=exit_door,
        habit=draw_habits(key, slots, ag.role, params),
    )
    assert set(fresh) == set(REFILLED), sorted(set(fresh) ^ set(REFILLED))
    ag = ag.replace(**{f: sel(fresh[f], getattr(ag, f)) for f in REFILLED})
    return state.replace(agents=ag, next_uid=state.next_uid + slots.sum())


def enter(state: WorldState, lt: LayoutTables, now):
    """Pending agents whose time has come enter on their door's inward cell.

    At most one agent per door per step, earliest spawn time first (then lowest
    slot); the inward cell must be free.  Returns (state, entered [K]).
    """
    ag = state.agents
    k = ag.active.shape[0]
    idx = jnp.arange(k)
    ready = ag.in_use & ~ag.active & (ag.spawn_t <= now)
    cell = lt.door_inward[ag.entry_door]  # [K, 2]
    prio = ag.spawn_t * k + idx  # distinct
    # Per door (3, not per pair of agents): is its inward cell held, and the
    # priority of its earliest ready agent; each agent then reads its door's.
    mine = ag.entry_door[:, None] == jnp.arange(C.N_DOORS)[None, :]  # [K, 3]
    held = (ag.active[:, None] & same_cell(ag.pos[:, None, :], lt.door_inward[None, :, :])).any(0)
    earliest = jnp.where(mine & ready[:, None], prio[:, None], jnp.iinfo(jnp.int32).max).min(0)  # [3]
    occupied = (mine & held[None, :]).any(1)
    first = (mine & (prio[:, None] == earliest[None, :])).any(1)
    entered = ready & first & ~occupied
    e1 = entered[:, None]
    in_q = lt.zone_q[cell[:, 0], cell[:, 1]]
    ag = ag.replace(
        active=ag.active | entered,
        pos=jnp.where(e1, cell, ag.pos),
        prev_pos=jnp.where(e1, cell, ag.prev_pos),
        leg=jnp.where(entered, 0, ag.leg),
        timer=jnp.where(entered, 0, ag.timer),
        goals_done=jnp.where(entered, 0, ag.goals_done),
        moves=jnp.where(e1, False, ag.moves),
        visited_q=jnp.where(entered, in_q, ag.visited_q),
        last_action=jnp.where(entered, C.WAIT, ag.last_action),
        sanctioned=ag.sanctioned & ~entered,
        collided=ag.collided & ~entered,
        displaced=ag.displaced & ~entered,
        n_sanctions=jnp.where(entered, 0, ag.n_sanctions),
        n_collisions=jnp.where(entered, 0, ag.n_collisions),
        steps=jnp.where(entered, 0, ag.steps),
        ret=jnp.where(entered, 0.0, ag.ret),
    )
    return state.replace(agents=ag), entered


# Only an agent on a door's inward cell can step onto the door (doors sit in
# walls; docs/world.md §1), so at most N_DOORS agents exit in one step; most
# steps that empty a slot empty one.
FIRST, MORE = range(1), range(1, C.N_DOORS)


def _first_draws(key, slots, lt, params):
    return fresh_draws(key, slots, lt, params, FIRST)


def _more_draws(key, slots, lt, params):
    return fresh_draws(key, slots, lt, params, MORE)


def _no_draws(ranks):
    """The draws' shapes for `ranks` where those slots are not set (never read)."""

    def idle(key, slots, lt, params):
        zero = jnp.zeros((len(ranks),), jnp.int32)
        return zero, zero, jnp.zeros((len(ranks), 2), jnp.int32), zero, zero, zero

    return idle


def turnover(key, state: WorldState, exited, lt: LayoutTables, params: WorldParams):
    """Refill the slots of agents that exited (the newcomer's only when it is
    replaced), let pending agents enter, advance t.  Returns (state, entered [K])."""
    k = exited.shape[0]
    newcomer = jnp.arange(k) == 0
    now = state.t + 1
    slots = exited & (~newcomer | params.replace_newcomer)
    # Most steps no slot empties: under vmap only the environments where one
    # does draw new agents (`run_where`), and only those where two or three
    # do draw for the second and third.  Only the draws are packed; writing
    # them into the agents is a select over [K] for all.
    n = slots.sum()
    first = run_where(
        n >= 1, _first_draws, _no_draws(FIRST), key, slots, lt, params, share=1 / 8, packing=params.packing
    )
    more = run_where(n >= 2, _more_draws, _no_draws(MORE), key, slots, lt, params, share=1 / 32, packing=params.packing)
    drawn = tuple(jnp.concatenate([a, b]) for a, b in zip(first, more))
    state = place_draws(key, state, slots, drawn, params, now, max_slots=C.N_DOORS)
    # A newcomer that is not replaced leaves its slot for good.
    keep = ~(exited & newcomer & ~params.replace_newcomer)
    state = state.replace(agents=state.agents.replace(in_use=state.agents.in_use & keep))
    state = state.replace(newcomer_done=state.newcomer_done & ~(slots[0]))
    state, entered = enter(state, lt, now)
    return state.replace(t=now), entered


__all__ = ["REFILLED", "enter", "refill", "turnover"]
