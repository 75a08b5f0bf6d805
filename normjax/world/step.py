"""The pure world step: physics, norms, tasks, rewards, entry and turnover.

`step_world(key, state, actions, params)` advances the world by one step given
a joint action for all K slots (the scripted community and the newcomer's
policy are layered on top in `normjax.env`).  `reset_world(key, params, cfg)`
draws a fresh episode.  Both are pure, jittable and vmappable; the layout and
norm are traced ids, so one compilation serves every layout and norm.

Order inside a step (docs/world.md §2-7):
1. forced WAITs (inactive agents; agents in service at goal 1), effective actions;
2. norm evaluation of every agent's intended transition against the positions
   before the step -> public sanctions;
3. movement, collisions and pushes (`normjax.world.physics`);
4. exits, goal progress, rewards, histories (moves, Q visits): `progress`;
5. turnover: slots of agents that exited are refilled with fresh agents after
   a random delay; pending agents enter on their door's inward cell if free;
   t + 1 (`normjax.world.turnover`).

Service semantics (a decision docs/world.md §5 leaves open): an agent that ends a step
on an acceptable goal-1 cell is "in service"; its next `service_steps` actions
are forced WAITs, and goal 1 completes at the end of the last of them if it was
not pushed off in between (a push restarts the timer).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from normjax import constants as C
from normjax.constants import ROLE_AWARE, ROLE_BLIND, ROLE_NEWCOMER, UNREACHABLE
from normjax.ground.moves import effective_actions
from normjax.ground.rare import run_where
from normjax.layouts.geometry import same_cell
from normjax.layouts.tables import LayoutTables, world_tables
from normjax.norms import EpisodeNorm, action_sanctions, episode_norm, episode_sanctions
from normjax.world import tasks
from normjax.world.physics import MoveResult, resolve_moves
from normjax.world.state import WorldConfig, WorldParams, WorldState, empty_state
from normjax.world.turnover import enter, refill, turnover
from normjax.xla_cpu import computed_once


@struct.dataclass
class StepInfo:
    """What happened in one step, per slot [K] (pre-step positions included)."""

    active: jax.Array  # bool: on the grid at the start of the step
    pos: jax.Array  # int32 [K, 2]: cell at the start of the step
    action: jax.Array  # int32: effective action
    target: jax.Array  # int32 [K, 2]: pos + delta(action) (a door cell when exiting)
    next_pos: jax.Array  # int32 [K, 2]: cell after the step
    reward: jax.Array  # float32
    sanctioned: jax.Array  # bool
    collided: jax.Array  # bool
    displaced: jax.Array  # bool
    exited: jax.Array  # bool
    goals_completed: jax.Array  # int32: goals completed during this step
    entered: jax.Array  # bool: entered the grid at the end of this step
    forced_wait: jax.Array  # bool: action forced to WAIT by the service timer
    uid: jax.Array  # int32: uid of the occupant during the step


def reset_world(key, params: WorldParams, config: WorldConfig = WorldConfig()) -> WorldState:
    """A fresh episode: m agents (m uniform in [min_agents, K]), staggered entry.

    The newcomer (slot 0) enters at step 0; background slot i tries to enter at
    a random step in [0, 2i).  Slots 1..n_blind are norm-blind (docs/world.md §9).
    """
    k = config.capacity
    lt = world_tables().at(params.layout)
    km, ks, kr = jax.random.split(key, 3)
    idx = jnp.arange(k)
    m = jax.random.randint(km, (), jnp.minimum(params.min_agents, k), k + 1)
    state = empty_state(k)
    role = jnp.where(idx == 0, ROLE_NEWCOMER, jnp.where(idx <= params.n_blind, ROLE_BLIND, ROLE_AWARE))
    ag = state.agents.replace(in_use=idx < m, role=role.astype(jnp.int32))
    state = state.replace(agents=ag)
    state = refill(kr, state, ag.in_use, lt, params, jnp.int32(0))
    stagger = jax.random.randint(ks, (k,), 0, jnp.maximum(2 * idx, 1))
    state = state.replace(agents=state.agents.replace(spawn_t=jnp.where(idx == 0, 0, stagger)))
    state, _ = enter(state, lt, jnp.int32(0))
    return state


def state_norm(state: WorldState, params: WorldParams) -> EpisodeNorm:
    """The episode's norm on `state`, per agent and action (`normjax.norms.episode`)."""
    ag = state.agents
    return episode_norm(
        world_tables().at(params.layout),
        params.norm_id,
        state.t,
        ag.pos,
        ag.active,
        ag.group,
        ag.moves,
        ag.visited_q,
        packing=params.packing,
    )


class Resolved(NamedTuple):
    """Stages 1-3 of a step: who acts, what the norm says, where everyone ends."""

    in_service: jax.Array  # bool [K]: started the step in service at goal 1 (forced WAIT)
    eff: jax.Array  # int32 [K]: effective actions
    sanctioned: jax.Array  # bool [K]: public sanctions
    res: MoveResult  # physics' result


def resolve(
    key, state: WorldState, actions, lt: LayoutTables, params: WorldParams, view: EpisodeNorm | None = None
) -> Resolved:
    """Stages 1-3: forced waits and effective actions (docs/world.md §3, 5), the
    norm's judgement against pre-step positions (§7), movement (§4)."""
    ag = state.agents
    start_on_goal = tasks.on_goal1(lt, ag.goal_kind, ag.goal_cell, ag.pos)
    in_service = ag.active & (ag.leg == 0) & start_on_goal
    # The caller's joint action stored once: XLA otherwise fuses its computation
    # (for random actions, two threefry hashes per agent) into the fusion that
    # builds the [K, 2] targets, computing it once per coordinate (measured: the
    # world step under random joint actions 4-6% slower).
    actions = computed_once(jnp.asarray(actions, jnp.int32))
    acts = jnp.where(ag.active & ~in_service, actions, C.WAIT)
    eff = effective_actions(lt.kind, ag.pos, acts)
    if view is None:
        sanctioned = episode_sanctions(
            lt,
            state.t,
            ag.pos,
            ag.active,
            eff,
            ag.group,
            ag.moves,
            ag.visited_q,
            params.norm_id,
            packing=params.packing,
        )
    else:
        sanctioned = action_sanctions(view, eff)
    res = resolve_moves(key, ag.pos, ag.active, eff, lt.kind, ag.role != ROLE_NEWCOMER, params.packing)
    return Resolved(in_service, eff, sanctioned, res)


def progress(state: WorldState, r: Resolved, lt: LayoutTables, params: WorldParams):
    """Stage 4: goals, rewards and histories of a resolved step (docs/world.md §5-7).

    Returns (state with every agent's end-of-step fields, reward [K], goals
    completed [K]).
    """
    ag = state.agents
    in_service, eff, sanctioned, res = r
    k = ag.active.shape[0]
    present = ag.active & ~res.exited
    stayed = in_service & present & same_cell(res.pos, ag.pos)
    timer = jnp.where(stayed, ag.timer + 1, 0)
    goal1_now = stayed & (timer >= params.service_steps)
    timer = jnp.where(goal1_now, 0, timer)
    door_idx = jnp.argmax(same_cell(lt.doors[None, :, :], res.exit_door_cell[:, None, :]), axis=1)
    goal2_now = res.exited & (ag.leg == 1) & tasks.door_ok(ag.exit_door, door_idx)
    completed = goal1_now.astype(jnp.int32) + goal2_now.astype(jnp.int32)
    leg = jnp.where(goal1_now, 1, ag.leg)
    goals_done = ag.goals_done + completed
    # Arrival needs no bookkeeping: the next step starts in service.

    # Rewards (docs/world.md §6).  The shaping term counts only under the dense
    # condition: under vmap only its environments compute the goal distances
    # (`run_where`; elsewhere the term is 0.0, where 0 x shaping was +-0.0:
    # the same reward, as the rest of the sum is never -0.0 for the reward
    # conditions' non-negative goal rewards).
    end_cell = jnp.where(res.exited[:, None], res.exit_door_cell, res.pos)
    shaping = run_where(
        params.dense_reward != 0,
        _shaping,
        _no_shaping,
        lt,
        ag.leg,
        ag.goal_kind,
        ag.goal_cell,
        ag.exit_door,
        ag.pos,
        end_cell,
        eff,
        share=1 / 2,
        packing=params.packing,
    )
    reward = (
        params.goal_reward * completed
        - params.step_cost
        - params.collision_penalty * res.collided
        - params.sanction_penalty * sanctioned
        + params.dense_reward * shaping
    )
    reward = jnp.where(ag.active, reward, 0.0).astype(jnp.float32)

    # Histories: own effective moves and Q visits (docs/world.md §7 procedure norms).
    moved = ag.active & (eff != C.WAIT)
    moves = jnp.concatenate([moved[:, None], ag.moves[:, :2]], axis=1)
    visited_q = ag.visited_q | lt.zone_q[res.pos[:, 0], res.pos[:, 1]] | lt.zone_q[ag.pos[:, 0], ag.pos[:, 1]]

    ret = ag.ret + reward
    steps = ag.steps + ag.active
    n_sanctions = ag.n_sanctions + sanctioned
    n_collisions = ag.n_collisions + res.collided
    newcomer = jnp.arange(k) == 0
    done_bg = res.exited & ~newcomer
    state = state.replace(
        agents=ag.replace(
            active=present,
            pos=jnp.where(ag.active[:, None], res.pos, ag.pos),
            prev_pos=jnp.where(ag.active[:, None], ag.pos, ag.prev_pos),
            leg=leg,
            timer=jnp.where(present, timer, 0),
            goals_done=goals_done,
            moves=moves,
            visited_q=visited_q,
            last_action=jnp.where(ag.active, eff, ag.last_action),
            sanctioned=sanctioned,
            collided=res.collided,
            displaced=res.displaced,
            n_sanctions=n_sanctions,
            n_collisions=n_collisions,
            steps=steps,
            ret=ret,
        ),
        newcomer_done=state.newcomer_done | res.exited[0],
        newcomer_tasks=state.newcomer_tasks + res.exited[0],
        community_finished=state.community_finished + done_bg.sum(),
        community_steps=state.community_steps + jnp.where(done_bg, steps, 0).sum(),
        community_return=state.community_return + jnp.where(done_bg, ret, 0.0).sum(),
    )
    return state, reward, completed


def _shaping(lt, leg, goal_kind, goal_cell, exit_door, pos, end_cell, eff):
    """The dense condition's shaping per agent [K]: +1 for a step closer to the
    current goal, -1 for a step away, 0 for WAIT or an unknown distance."""
    d_before = tasks.goal_distance(lt, leg, goal_kind, goal_cell, exit_door, pos)
    d_after = tasks.goal_distance(lt, leg, goal_kind, goal_cell, exit_door, end_cell)
    known = (d_before < UNREACHABLE) & (d_after < UNREACHABLE) & (eff != C.WAIT)
    return jnp.where(known, jnp.sign(d_before - d_after), 0).astype(jnp.float32)


def _no_shaping(lt, leg, *args):
    return jnp.zeros(leg.shape, jnp.float32)


class Stages(NamedTuple):
    """What each stage of one world step produced (`world_stages`)."""

    resolved: Resolved  # stages 1-3
    progressed: WorldState  # the state after stage 4
    reward: jax.Array  # float32 [K]
    completed: jax.Array  # int32 [K]: goals completed
    state: WorldState  # the state after stage 5 (the next state)
    entered: jax.Array  # bool [K]


def world_stages(key, state: WorldState, actions, params: WorldParams, view: EpisodeNorm | None = None) -> Stages:
    """The world step's pipeline, with each stage's output kept (`step_world`
    returns the next state and a StepInfo built from them; the stage benchmark
    records the inputs of the later stages)."""
    lt = world_tables().at(params.layout)
    k_move, k_refill = jax.random.split(key)
    r = resolve(k_move, state, actions, lt, params, view)  # stages 1-3
    mid, reward, completed = progress(state, r, lt, params)  # stage 4
    new, entered = turnover(k_refill, mid, r.res.exited, lt, params)  # stage 5
    return Stages(r, mid, reward, completed, new, entered)


def step_world(key, state: WorldState, actions, params: WorldParams, view: EpisodeNorm | None = None):
    """One world step for a joint action [K]. Returns (state, StepInfo).

    `view`: `state_norm(state, params)` when the caller computed it already (the
    planner needs it too); the sanctions are then read from it instead of
    evaluating the norm again.
    """
    ag = state.agents
    st = world_stages(key, state, actions, params, view)
    r, reward, completed, state, entered = st.resolved, st.reward, st.completed, st.state, st.entered
    info = StepInfo(
        active=ag.active,
        pos=ag.pos,
        action=r.eff,
        target=r.res.target,
        next_pos=r.res.pos,
        reward=reward,
        sanctioned=r.sanctioned,
        collided=r.res.collided,
        displaced=r.res.displaced,
        exited=r.res.exited,
        goals_completed=completed,
        entered=entered,
        forced_wait=r.in_service,
        uid=ag.uid,
    )
    return state, info


def terminated(state: WorldState, params: WorldParams):
    """Test episodes end when the newcomer finishes its task (docs/world.md §9)."""
    return state.newcomer_done & ~params.replace_newcomer


def truncated(state: WorldState, params: WorldParams):
    """Every episode is cut at its horizon (200 interaction / training, 100 test)."""
    return state.t >= params.max_steps
