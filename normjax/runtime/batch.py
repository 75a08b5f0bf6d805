"""Batched episodes for the external-agent runner: many episodes, one jitted step.

Every episode of a runner stage is one row of a batch (a vmapped `WorldState`
and `WorldParams`).  The episodes are exactly the protocol's (docs/world.md §9):

* interaction (norm n, base seed s): ``k_reset, k_run = split(PRNGKey(s))``,
  ``reset_world(k_reset, phase_params("interaction", cafe, n))``, then
  ``split(k_run, 200)`` step keys, as `normjax.interop.export.rollout` does
  for ``normjax export --phase interaction --episode 0``;
* test episodes: ``k_build, k_run = split(PRNGKey(seed))``,
  ``build_test_episode(k_build, layout, n, group)``, then
  ``split(k_run, 100)`` step keys, as `normjax.protocol.run_episode`.

Each step is `normjax.env.episode_step` (the protocol's key schedule
``kc, kp, kw = split(k, 3)``, the done-freeze and the wait count) with the
scenario community and the host's action, exactly like `run_episode`: kp is
what a state policy wrapped as an external agent receives (`policy_actions`),
and a test episode's state is frozen once its newcomer has finished.  The interaction phase has no holders, so there the scenario
community acts exactly as the default `COMMUNITY` (docs/world.md §9.3); using
it in both stages keeps one compiled step per batch size.

Batches are padded to a multiple of `PAD` rows (copies of row 0 marked done)
so that runs of nearby sizes share compilations.  The stage start, `observe`,
`advance` and the renderer run through `normjax.runtime.programs.run`: with the
command's cache directory they are loaded whole on a repeated command (their
static arguments are keyword-only, the others positional).

The runner's host needs only a few numbers per episode and step, so `observe`
and `advance` pack them on the device into ONE int32 array per step ([B, F],
columns named by `obs_layout`), instead of transferring the whole state;
`advance` fuses `step` with the next step's `observe` (one dispatch per step).

Distractors (docs/world.md §8.5): `init_stage(..., habit, share)` gives both
stages the habit (the interaction params, or `build_test_episode`'s), passed
to the device as per-episode arrays only when on, so that with them off the
programs are as before.  With them on, `advance` also carries each episode's
`normjax.protocol.imitation.Imitation` count (updated from the state at the
step's start, as `run_episode` does) and the packed rows get a
``habit_steps`` column (`obs_layout(..., imitation=True)`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.env import phase_params
from normjax.env.episode import Episode, episode_step, fixed_action, step_keys
from normjax.ground.moves import effective_actions
from normjax.interop.render import render_frame
from normjax.layouts.tables import world_tables
from normjax.protocol import imitation as _imitation
from normjax.protocol.metrics import collision_involvement, community_totals
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.runtime import programs
from normjax.world import tasks
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

PAD = 32
# Frames per render call: on CPU one frame per call is cheapest per frame (measured
# 13 ms for 1, 75 ms for 4, 314 ms for 16, batch 32, 2-core VM), and independent
# episodes ask for few frames at a time; accelerators take chunks of 16.
RENDER_CHUNK = 16


def render_chunk() -> int:
    return 1 if jax.default_backend() == "cpu" else RENDER_CHUNK


def padded_size(n: int) -> int:
    return max(PAD, -(-n // PAD) * PAD)


def _pad_index(n: int) -> np.ndarray:
    """Row indices of a padded batch of n episodes (extra rows repeat row 0)."""
    return np.concatenate([np.arange(n), np.zeros(padded_size(n) - n, np.int64)])


# Static arguments are keyword-only, so that `programs.run` can pass the others positionally.
@functools.partial(jax.jit, static_argnames=("capacity", "steps"))
def _init_interaction(seeds, norm_ids, habits=None, shares=None, *, capacity, steps):
    cfg = WorldConfig(capacity=capacity)

    def one(seed, nid, habit=None, share=None):
        k_reset, k_run = jax.random.split(jax.random.PRNGKey(seed))
        params = phase_params("interaction", 0, 0).replace(norm_id=nid)
        if habit is not None:  # distractors on (docs/world.md §8.5)
            params = params.replace(habit=habit, habit_share=share)
        return reset_world(k_reset, params, cfg), params, jax.random.split(k_run, steps)

    if habits is None:
        return jax.vmap(one)(seeds, norm_ids)
    return jax.vmap(one)(seeds, norm_ids, habits, shares)


@functools.partial(jax.jit, static_argnames=("capacity", "steps"))
def _init_tests(seeds, layout_ids, norm_ids, groups, habits=None, shares=None, *, capacity, steps):
    cfg = WorldConfig(capacity=capacity)

    def one(seed, lid, nid, grp, *distractor):
        k_build, k_run = jax.random.split(jax.random.PRNGKey(seed))
        state, params = build_test_episode(k_build, lid, nid, grp, cfg, *distractor)
        return state, params, jax.random.split(k_run, steps)

    if habits is None:
        return jax.vmap(one)(seeds, layout_ids, norm_ids, groups)
    return jax.vmap(one)(seeds, layout_ids, norm_ids, groups, habits, shares)


def init_stage(episodes: list[dict], capacity: int, steps: int, habit: int = 0, share: float = 0.0):
    """(states, params, step keys [B, steps, 2], pad mask [B]) of a stage's episodes.

    `episodes` are all interaction episodes or all test episodes (dicts with
    ``condition``, ``seed``, ``norm_id``, ``layout_id``, ``group``).  `habit`
    (code) and `share`: validated distractor settings
    (`normjax.world.habits.check_distractor`); off unless both are set.
    """
    idx = _pad_index(len(episodes))
    col = lambda f: jnp.asarray([f(episodes[i]) for i in idx], jnp.int32)
    seeds = col(lambda e: e["seed"])
    extra = (None, None)
    if habit != 0 and share > 0.0:
        extra = (jnp.full((len(idx),), habit, jnp.int32), jnp.full((len(idx),), share, jnp.float32))
    static = dict(capacity=capacity, steps=steps)
    if episodes[0]["condition"] == "interaction":
        out = programs.run("init_interaction", _init_interaction, seeds, col(lambda e: e["norm_id"]), *extra, **static)
    else:
        out = programs.run(
            "init_tests",
            _init_tests,
            seeds,
            col(lambda e: e["layout_id"]),
            col(lambda e: e["norm_id"]),
            col(lambda e: e["group"]),
            *extra,
            **static,
        )
    pad = np.arange(len(idx)) >= len(episodes)
    return (*out, pad)


def init_imitation(n: int) -> _imitation.Imitation:
    """A fresh over-imitation count for each of n batch rows."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,)), _imitation.init())


def _view_one(key, state, params, intents: bool):
    kc = step_keys(key).community
    lt = world_tables().at(params.layout)
    ag = state.agents
    on_goal = tasks.on_goal1(lt, ag.goal_kind, ag.goal_cell, ag.pos)
    out = {"in_service": ag.active[0] & (ag.leg[0] == 0) & on_goal[0]}
    if intents:
        planned = SCENARIO_COMMUNITY.act(kc, state, params).astype(jnp.int32)
        out["intent"] = effective_actions(lt.kind, ag.pos, planned)
    return out


@functools.partial(jax.jit, static_argnames="intents")
def view(keys, states, params, intents: bool = False):
    """Per episode: whether the newcomer's action is forced (service), and the
    community's intended effective actions [B, K] for this step (with `intents`)."""
    return jax.vmap(lambda k, s, p: _view_one(k, s, p, intents))(keys, states, params)


def _step_one(key, state, done, waits, action, params):
    """The protocol's episode step (`episode_step`) with the host's action; the batch
    carries no collision count (the packed rows report each step's involvement)."""
    ep, info = episode_step(
        key, Episode(state, (), done, waits, jnp.int32(0)), params, fixed_action(action), SCENARIO_COMMUNITY
    )
    return ep.state, ep.done, ep.waits, info


def _step_imitation(key, state, done, waits, action, params, imit):
    """`_step_one` and the over-imitation count of the step (from the state at its start,
    as `run_episode`: the newcomer is off the grid once done, so nothing counts after)."""
    s2, done2, waits2, info = _step_one(key, state, done, waits, action, params)
    return s2, done2, waits2, info, _imitation.update(imit, state, info, params)


@jax.jit
def step(keys, states, done, waits, actions, params):
    """One lockstep step of every episode -> (states, done, waits, StepInfo)."""
    return jax.vmap(_step_one)(keys, states, done, waits, actions, params)


@functools.partial(jax.jit, static_argnames="cell_px")
def _render(states, params, idx, *, cell_px):
    pick = lambda x: x[idx]
    # No habit badges: a frame shows only what the community can see (docs/world.md §8.5).
    return jax.vmap(lambda s, p: render_frame(s, p, cell_px, show_habits=False))(
        jax.tree.map(pick, states), jax.tree.map(pick, params)
    )


def render(states, params, rows, cell_px: int = 32) -> np.ndarray:
    """uint8 frames [len(rows), 11*px, 15*px, 3] of the batch rows `rows` (chunks of `render_chunk()`),
    as a VLM newcomer sees them: no hidden state (distractor habits) drawn."""
    rows = np.asarray(rows, np.int32)
    out, size = [], render_chunk()
    for i in range(0, len(rows), size):
        chunk = rows[i : i + size]
        idx = np.concatenate([chunk, np.full(size - len(chunk), chunk[0], np.int32)])
        out.append(
            np.asarray(programs.run("render", _render, states, params, jnp.asarray(idx), cell_px=cell_px))[: len(chunk)]
        )
    return np.concatenate(out) if out else np.zeros((0, C.H * cell_px, C.W * cell_px, 3), np.uint8)


def obs_layout(capacity: int, imitation: bool = False) -> dict[str, slice]:
    """Columns of the packed host array of `observe` / `advance` (K = capacity slots).

    Per slot k: ``active``, ``pos`` (row, col pairs), ``group``, ``sanctioned``
    (public sanction of the last step), ``intent`` (-1 without intents); the
    newcomer's ``goal_kind``, ``goal_cell``, ``exit_door``, ``leg``, ``goals``,
    ``n_sanctions``, ``n_collisions``, ``path_length``; the episode's ``t``,
    ``in_service``, the community totals of docs/world.md §9.4 (`community_totals`:
    finished, agents, steps, ``community_return`` as float32 bits),
    ``newcomer_tasks``; and what the step did: ``done``, ``waits``, the
    newcomer's ``info_active``, ``forced``, ``executed``, ``info_sanctioned``
    and ``bg_sanctions`` (sanctions of slots 1..K-1 in the step), and ``involved``
    (the newcomer took part in a collision in the step, `collision_involvement`);
    with `imitation` (distractors on) last ``habit_steps``, the newcomer's steps
    so far that followed the episode's habit (`normjax.protocol.imitation`).
    """
    widths = dict(
        active=capacity,
        pos=2 * capacity,
        group=capacity,
        sanctioned=capacity,
        intent=capacity,
        goal_kind=1,
        goal_cell=2,
        exit_door=1,
        leg=1,
        goals=1,
        n_sanctions=1,
        n_collisions=1,
        path_length=1,
        t=1,
        in_service=1,
        community_finished=1,
        community_agents=1,
        community_steps=1,
        community_return=1,
        newcomer_tasks=1,
        done=1,
        waits=1,
        info_active=1,
        forced=1,
        executed=1,
        info_sanctioned=1,
        bg_sanctions=1,
        involved=1,
    )
    if imitation:
        widths["habit_steps"] = 1
    out, at = {}, 0
    for name, w in widths.items():
        out[name] = slice(at, at + w)
        at += w
    return out


def _pack_one(key, state, params, done, waits, info, intents: bool, imit=None):
    """One episode's packed host row (see `obs_layout`); `info` None before the first step."""
    v = _view_one(key, state, params, intents)
    ag = state.agents
    K = ag.active.shape[0]
    i32 = lambda x: jnp.asarray(x, jnp.int32).reshape(-1)
    intent = v["intent"] if intents else jnp.full(K, -1, jnp.int32)
    if info is None:
        zero = jnp.zeros((), jnp.int32)
        step = (zero, zero, jnp.asarray(C.WAIT, jnp.int32), zero, zero, zero)
    else:
        step = (
            info.active[0],
            info.forced_wait[0],
            info.action[0],
            info.sanctioned[0],
            info.sanctioned[1:].sum(),
            collision_involvement(info)[0],
        )
    agents, steps, ret = community_totals(state)
    cols = dict(
        active=ag.active,
        pos=ag.pos,
        group=ag.group,
        sanctioned=ag.sanctioned,
        intent=intent,
        goal_kind=ag.goal_kind[0],
        goal_cell=ag.goal_cell[0],
        exit_door=ag.exit_door[0],
        leg=ag.leg[0],
        goals=ag.goals_done[0],
        n_sanctions=ag.n_sanctions[0],
        n_collisions=ag.n_collisions[0],
        path_length=ag.steps[0],
        t=state.t,
        in_service=v["in_service"],
        community_finished=state.community_finished,
        community_agents=agents,
        community_steps=steps,
        community_return=jax.lax.bitcast_convert_type(ret.astype(jnp.float32), jnp.int32),
        newcomer_tasks=state.newcomer_tasks,
        done=done,
        waits=waits,
    )
    cols.update(zip(("info_active", "forced", "executed", "info_sanctioned", "bg_sanctions", "involved"), step))
    if imit is not None:
        cols["habit_steps"] = imit.follows
    layout = obs_layout(K, imit is not None)
    assert list(cols) == list(layout), "packed columns out of order"
    return jnp.concatenate([i32(c) for c in cols.values()])


@functools.partial(jax.jit, static_argnames="intents")
def observe(keys, states, params, done, waits, imit=None, *, intents: bool = False):
    """The packed host array [B, F] of the states at the start of a step (keys: that step's);
    with `imit` (distractors on) the ``habit_steps`` column too."""
    # imit None is an empty pytree: vmap passes it through.
    return jax.vmap(lambda k, s, p, d, w, m: _pack_one(k, s, p, d, w, None, intents, m))(
        keys, states, params, done, waits, imit
    )


def _held(go, new, old):
    """`new` where the row stepped (`go`), else `old` (a row that waits for its agent)."""
    return jax.tree.map(lambda a, b: jnp.where(go, a, b), new, old)


def _advance_one(key, state, done, waits, action, params, imit, go):
    if imit is None:
        s2, d2, w2, info = _step_one(key, state, done, waits, action, params)
        m2 = None
    else:
        s2, d2, w2, info, m2 = _step_imitation(key, state, done, waits, action, params, imit)
    if go is not None:
        s2, d2, w2, m2 = _held(go, (s2, d2, w2, m2), (state, done, waits, imit))
    return s2, d2, w2, info, m2


@functools.partial(jax.jit, static_argnames="intents")
def advance(keys, next_keys, states, done, waits, actions, params, imit=None, go=None, *, intents: bool = False):
    """`step`, then the packed host array of the result, viewed with the next step's keys.

    -> (states, done, waits, StepInfo, packed [B, F]); the packed row's step
    columns describe this step, the rest the world after it.  With `imit`
    (the batch's `Imitation` counts; distractors on) the count is updated
    too and returned last: (..., packed, imit).  With `go` (bool [B]) only
    those rows step; the others keep their state, done, waits and count (their
    packed rows and infos are meaningless), so episodes advance independently
    through one compiled program of a fixed batch shape.  Each row's keys are
    its own step's, so a row's result never depends on which others stepped.
    """
    states, done, waits, info, imit = jax.vmap(_advance_one)(keys, states, done, waits, actions, params, imit, go)
    packed = jax.vmap(lambda k, s, p, d, w, i, m: _pack_one(k, s, p, d, w, i, intents, m))(
        next_keys, states, params, done, waits, info, imit
    )
    out = (states, done, waits, info, packed)
    return out if imit is None else out + (imit,)


def policy_actions(policy, keys, states, params):
    """A jittable state policy over the batch with the protocol's policy keys -> actions [B]."""
    return _policy_batch(policy)(keys, states, params)


@functools.cache
def _policy_batch(policy):
    return jax.jit(jax.vmap(lambda k, s, p: policy(step_keys(k).policy, s, p)))


__all__ = [
    "PAD",
    "advance",
    "init_imitation",
    "init_stage",
    "obs_layout",
    "observe",
    "padded_size",
    "policy_actions",
    "render",
    "step",
    "view",
]
