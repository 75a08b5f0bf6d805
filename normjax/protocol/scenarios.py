"""Test episodes (docs/world.md §9, paper §10.1 and §4.1): the jittable builder,
the holders, and the scenario community.

Every norm has 3 seen test episodes (cafe) and 3 unseen ones (the norm's unseen
layout), each built so that a shortest-path norm-blind newcomer must violate
the norm while the norm-aware planner can finish its task without a violation
within the 100-step horizon.  The geometry is precomputed on the host
(`normjax.protocol.geometry`); `build_test_episode` only gathers from it, so
the layout, norm and group may be traced (one vmapped program for all 300
episodes).

Scripted agents.  A scenario places up to `N_EXTRA` agents in slots 1..3 at
step 0, all "holders" with `habit = HABIT_HOLD` (zone R: agents in R; seat
norms: seated customers; queues: one customer queued behind the free head).
`hold_actions` forces holders to WAIT until the newcomer reaches the release
cells (zone R: R or its boundary; seat norms: a chair) or, in queue scenarios,
until the scenario's release step, and `release_holds`, the community's
after-step hook, then clears the habit for good and they finish their task (the
queued customer, which held its own cell, is then bound for the counter).
While held, their service timer is kept at
0: they stay in leg 0 on their goal, so every planner predicts them to stay
put.  `SCENARIO_COMMUNITY` is the scripted planner plus these holders; with no
holders in an episode it acts exactly like the default community.

The newcomer stands on its entry door's inward cell at step 0.  Everything
else in the community is drawn by `reset_world` (norm-aware background agents
only, tasks of the norm's family, staggered entry); the drawn background
agents are kept off the grid at step 0 (they enter from the scenario's
`bg_from` step on: 1, or in queue scenarios the queued customer's release
step) so the newcomer and the scripted agents stand where the scenario puts
them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.env import Community, community_actions, phase_params
from normjax.layouts.tables import world_tables
from normjax.protocol.geometry import N_EXTRA, NEVER
from normjax.protocol.scenario_tables import host_scenarios, r_boundary
from normjax.protocol.seeds import test_episodes
from normjax.world.state import WorldConfig, WorldParams, WorldState
from normjax.world.step import reset_world

HABIT_HOLD = C.HABIT_HOLD  # scenario-only habit: WAIT in place until released


@functools.cache
def scenario_tables() -> dict[str, jax.Array]:
    with jax.ensure_compile_time_eval():
        t = {k: jnp.asarray(v) for k, v in host_scenarios().items()}
        t["r_boundary"] = jnp.asarray(r_boundary())
        return t


def missing_scenarios(norm_ids=None) -> list[tuple[str, str, int]]:
    """(norm, layout, group) of protocol episodes without a valid construction."""
    t = host_scenarios()
    out = []
    for ep in test_episodes(norm_ids):
        if not t["valid"][ep["layout_id"], ep["norm_id"], ep["group"]]:
            out.append((ep["norm"], ep["layout"], ep["group"]))
    return out


# ---------------------------------------------------------------------------
# Jittable builder


def test_params(layout_id, norm_id, habit=0, habit_share=0.0) -> WorldParams:
    """Test-phase params (100 steps, newcomer not replaced, norm-aware background),
    with the distractor habit code and share of docs/world.md §8.5 (default off)."""
    base = phase_params("test", 0, 0)
    return base.replace(
        layout_id=jnp.asarray(layout_id, jnp.int32),
        norm_id=jnp.asarray(norm_id, jnp.int32),
        habit=jnp.asarray(habit, jnp.int32),
        habit_share=jnp.asarray(habit_share, jnp.float32),
    )


def build_test_episode(
    key, layout_id, norm_id, newcomer_group, config: WorldConfig = WorldConfig(), habit=0, habit_share=0.0
):
    """The docs/world.md §9 test episode -> (WorldState at step 0, WorldParams).

    `layout_id`, `norm_id`, `newcomer_group` and the distractor settings
    (`habit` code, `habit_share`; validate names with
    `normjax.world.habits.check_distractor`) may be traced (vmap over all 300
    episodes); geometry comes from gathers on precomputed tables.
    """
    params = test_params(layout_id, norm_id, habit, habit_share)
    state = reset_world(key, params, config)
    tab = scenario_tables()
    ix = (params.layout_id, params.norm_id, jnp.asarray(newcomer_group, jnp.int32))
    g = lambda name: tab[name][ix]
    lt = world_tables().at(params.layout)
    ag = state.agents
    k = ag.active.shape[0]
    idx = jnp.arange(k)
    grp = jnp.asarray(newcomer_group, jnp.int32)

    # Background agents drawn by reset_world enter from step bg_from on (1, or
    # the queued customer's release step in queue scenarios).
    ag = ag.replace(
        active=jnp.zeros((k,), bool),
        spawn_t=jnp.maximum(ag.spawn_t, g("bg_from")),
    )

    # Scripted agents in slots 1..N_EXTRA.
    x_used = g("x_used")  # [N_EXTRA]
    slot_x = jnp.zeros((k,), bool).at[1 : 1 + N_EXTRA].set(x_used)
    pad = lambda a, fill: jnp.concatenate(
        [jnp.full((1,) + a.shape[1:], fill, a.dtype), a, jnp.full((k - 1 - N_EXTRA,) + a.shape[1:], fill, a.dtype)]
    )
    x_pos = pad(g("x_pos"), 0)
    x_goal_kind = pad(g("x_goal_kind"), 0)
    x_goal_cell = pad(g("x_goal_cell"), -1)
    x_exit = pad(g("x_exit"), 0)
    x_goff = pad(g("x_group_off"), -1)
    x_hold = pad(g("x_hold"), False)
    x_timer = pad(g("x_timer"), 0)
    sel = lambda m, new, old: jnp.where(m.reshape(m.shape + (1,) * (jnp.ndim(old) - 1)), new, old)
    x_group = jnp.where(x_goff >= 0, (grp + x_goff) % C.N_GROUPS, ag.group)
    in_q = lambda p: lt.zone_q[p[:, 0], p[:, 1]]
    ag = ag.replace(
        in_use=ag.in_use | slot_x,
        active=ag.active | slot_x,
        spawn_t=jnp.where(slot_x, 0, ag.spawn_t),
        pos=sel(slot_x, x_pos, ag.pos),
        prev_pos=sel(slot_x, x_pos, ag.prev_pos),
        goal_kind=jnp.where(slot_x, x_goal_kind, ag.goal_kind),
        goal_cell=sel(slot_x, x_goal_cell, ag.goal_cell),
        exit_door=jnp.where(slot_x, x_exit, ag.exit_door),
        group=jnp.where(slot_x, x_group, ag.group),
        # Scripted agents carry no distractor habit; holders hold.
        habit=jnp.where(slot_x, jnp.where(x_hold, HABIT_HOLD, 0), ag.habit),
        visited_q=jnp.where(slot_x, in_q(x_pos), ag.visited_q),
    )

    # The newcomer (slot 0): active at its start cell at step 0.
    start = g("start")
    nc = idx == 0
    ag = ag.replace(
        in_use=ag.in_use | nc,
        active=ag.active | nc,
        spawn_t=jnp.where(nc, 0, ag.spawn_t),
        pos=sel(nc, start[None, :], ag.pos),
        prev_pos=sel(nc, start[None, :], ag.prev_pos),
        entry_door=jnp.where(nc, g("entry"), ag.entry_door),
        goal_kind=jnp.where(nc, g("goal_kind"), ag.goal_kind),
        goal_cell=sel(nc, g("goal_cell")[None, :], ag.goal_cell),
        exit_door=jnp.where(nc, g("exit_door"), ag.exit_door),
        group=jnp.where(nc, grp, ag.group),
        habit=jnp.where(nc, 0, ag.habit),
        visited_q=jnp.where(nc, lt.zone_q[start[0], start[1]], ag.visited_q),
    )
    # Fresh histories for everyone placed at step 0.
    placed = nc | slot_x
    ag = ag.replace(
        leg=jnp.where(placed, 0, ag.leg),
        timer=jnp.where(slot_x, x_timer, jnp.where(placed, 0, ag.timer)),
        goals_done=jnp.where(placed, 0, ag.goals_done),
        moves=jnp.where(placed[:, None], False, ag.moves),
        last_action=jnp.where(placed, C.WAIT, ag.last_action),
        sanctioned=jnp.zeros((k,), bool),
        collided=jnp.zeros((k,), bool),
        displaced=jnp.zeros((k,), bool),
        n_sanctions=jnp.zeros((k,), jnp.int32),
        n_collisions=jnp.zeros((k,), jnp.int32),
        steps=jnp.zeros((k,), jnp.int32),
        ret=jnp.zeros((k,), jnp.float32),
    )
    return state.replace(agents=ag), params


# ---------------------------------------------------------------------------
# Holders


def hold_actions(state: WorldState, actions):
    """Force WAIT for scripted holders (habit HABIT_HOLD) until released."""
    hold = state.agents.active & (state.agents.habit == HABIT_HOLD)
    return jnp.where(hold, C.WAIT, actions)


def release_holds(state: WorldState, params: WorldParams) -> WorldState:
    """Release every holder for good once the newcomer stands on a release cell of
    the scenario (zone R: R or its boundary; seat norms: a chair) or has left, or at
    the scenario's release step (queues)."""
    ag = state.agents
    tab = scenario_tables()
    norm = jnp.maximum(params.norm_id, 0)
    rel = tab["release"][params.layout, norm]
    p = ag.pos[0]
    release_t = tab["release_t"][params.layout, norm, ag.group[0]]
    release = (ag.active[0] & rel[p[0], p[1]]) | ~ag.active[0] | (state.t >= release_t)
    freed = release & (ag.habit == HABIT_HOLD)
    habit = jnp.where(freed, 0, ag.habit)
    # A held agent's service never completes: it stays on its goal in leg 0
    # (so planners predict it to stay) and serves its full time after release.
    timer = jnp.where(habit == HABIT_HOLD, 0, ag.timer)
    # A queued customer (queue scenarios: released at a step) holds its own cell
    # while it waits; once released it is bound for the counter, one step forward.
    to_counter = freed & (release_t < NEVER)
    service = world_tables().at(params.layout).service
    goal_cell = jnp.where(to_counter[:, None], service[None, :], ag.goal_cell)
    return state.replace(agents=ag.replace(habit=habit, timer=timer, goal_cell=goal_cell))


def scenario_community_actions(key, state: WorldState, params: WorldParams, view=None):
    """The scripted community of a test episode: `community_actions` plus holders."""
    return hold_actions(state, community_actions(key, state, params, view))


SCENARIO_COMMUNITY = Community(act=scenario_community_actions, after_step=release_holds)

__all__ = [
    "HABIT_HOLD",
    "SCENARIO_COMMUNITY",
    "build_test_episode",
    "hold_actions",
    "missing_scenarios",
    "release_holds",
    "scenario_community_actions",
    "scenario_tables",
    "test_params",
]
