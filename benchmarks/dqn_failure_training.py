"""The training-side checks of `benchmarks.dqn_failure_causes` (not a script of its own: run
`python -m benchmarks.dqn_failure_causes`).

* `goal_distance`: the newcomer's BFS distance to its current goal, as its observation has it.
* `training_start_distances`: where training tasks start (entrance door, distance to goal 1)
  in training-phase cafe episodes, beside the test episodes' starts.
* `training_phase_exits`: the stored greedy policies (no exploration) playing their own
  training episodes' starts (`NormGymEnv.reset` with each run's training params and its
  episode seeds 10^6 + 10^5 i + e) for the 200-step horizon with turnover, as in training:
  how many of the newcomer's tasks end by leaving during goal 1, where leaving is followed
  by a fresh task instead of the end of the episode.  The steps' keys are not training's.
* `closed_door_tests`: a counterfactual of the final tests: the same episodes and keys
  through the protocol's own `run_episode`, with the stored policies' moves onto a door
  masked while goal 1 is open (the greedy action among the rest): how much task success the
  early exit alone costs these policies.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.agents.networks import action_mask, masked_argmax
from normjax.env import COMMUNITY, NormGymEnv, obs_policy, phase_params
from normjax.env.episode import episode_step, start_episode, state_newcomer
from normjax.ground.moves import DELTAS
from normjax.layouts.tables import layout_id, world_tables
from normjax.protocol.runner import run_episode
from normjax.train import evaluate as ev
from normjax.train.dqn import population
from normjax.world import tasks
from normjax.world.observation import observe
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

TRAINING_EPISODES = 4  # per run: its first training episodes' starts


def goal_distance(state, params):
    """The newcomer's BFS distance to its current goal: the observation's own (`observe`)."""
    lt, ag = world_tables().at(params.layout), state.agents

    def one(x):  # slot 0 as a batch of one
        return x[0][None]

    return tasks.goal_distance(lt, one(ag.leg), one(ag.goal_kind), one(ag.goal_cell), one(ag.exit_door), one(ag.pos))[0]


def training_start_distances(norms: int = 50, per_norm: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """(distance to goal 1, entrance door) of the newcomer's first task in training-phase cafe
    episodes (`reset_world` under `phase_params("train", cafe, norm)`), keys 10^6 + 10^5 i + j."""
    cafe = layout_id("cafe")
    params = [phase_params("train", cafe, i) for i in range(norms)]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *params)
    keys = jnp.stack(
        [jnp.stack([jax.random.PRNGKey(10**6 + 10**5 * i + j) for j in range(per_norm)]) for i in range(norms)]
    )
    cfg = WorldConfig()

    def start(k, p):
        state = reset_world(k, p, cfg)
        return goal_distance(state, p), state.agents.entry_door[0]

    fn = jax.jit(jax.vmap(lambda p, ks: jax.vmap(lambda k: start(k, p))(ks)))
    dist, door = (np.asarray(x).ravel() for x in fn(stacked, keys))
    return dist, np.array([C.DOOR_NAMES[int(d)] for d in door])


_PROGRAMS: dict = {}


def _program(tr):
    key = (tr.config.arch, tr.config.first_layer, tr.config.capacity, tr.config.episode_steps)
    if key not in _PROGRAMS:
        env = NormGymEnv(capacity=tr.config.capacity)
        steps = tr.config.episode_steps

        def episode(q_params, params, seed):
            newcomer = state_newcomer(obs_policy(tr.greedy_policy(q_params)))
            key = jax.random.PRNGKey(seed)
            _, state = env.reset(key, params)

            def body(ep, k):
                after, info = episode_step(k, ep, params, newcomer, COMMUNITY)
                left = info.active[0] & info.exited[0]
                early = left & (ep.state.agents.leg[0] == 0)
                return after, jnp.stack([left, early, info.goals_completed[0] > 0]).astype(jnp.int32)

            keys = jax.random.split(jax.random.fold_in(key, 1), steps)
            _, per_step = jax.lax.scan(body, start_episode(state), keys)
            return per_step.sum(0)  # tasks ended by leaving, of which during goal 1, goals completed

        seeds = jnp.arange(TRAINING_EPISODES)

        def run(q, p, base):
            return jax.vmap(lambda e: episode(q, p, base + e))(seeds)

        _PROGRAMS[key] = jax.jit(jax.vmap(run))
    return _PROGRAMS[key]


def training_phase_exits(pop, q_all) -> dict:
    """Totals over a chunk's runs: tasks ended, ended by leaving during goal 1, goals completed."""
    out = np.zeros(3, np.int64)
    for m, q_params in zip(pop.members, q_all):
        specs, _ = population(m.config)
        out += np.asarray(_program(m)(q_params, specs.params, specs.seed_base)).reshape(-1, 3).sum(0)
    return dict(tasks_ended=int(out[0]), left_in_goal1=int(out[1]), goals=int(out[2]))


def closed_door_policy(tr, q_params):
    """The greedy policy of `tr` with moves onto a door cell masked while the leg is goal 1."""

    def policy(key, state, params):
        obs = observe(state, params).flat()
        doors = world_tables().at(params.layout).doors
        onto_door = ((state.agents.pos[0] + DELTAS)[:, None, :] == doors[None]).all(-1).any(-1)
        mask = action_mask(obs) & ~(onto_door & (state.agents.leg[0] == 0))
        return masked_argmax(tr.apply(q_params, obs), mask)

    return policy


_CLOSED: dict = {}


def closed_door_tests(pop, q_all) -> list[dict]:
    """The chunk's final-test episode rows (`summarize_groups`) under `closed_door_policy`."""
    rows_out = []
    for (m, rows, _), q_params in zip(pop.member_rows(), q_all):
        key = (m.config.arch, m.config.first_layer, m.config.capacity)
        if key not in _CLOSED:
            cfg = WorldConfig(capacity=m.config.capacity)

            def one_run(q, keys, lay, nid, grp, m=m, cfg=cfg):
                pol = closed_door_policy(m, q)
                return jax.vmap(lambda k, la, n, g: run_episode(pol, k, la, n, g, cfg))(keys, lay, nid, grp)

            _CLOSED[key] = jax.jit(jax.vmap(one_run))
        per_run = ev.episodes_for([r["norm_id"] for r in rows])
        arr = lambda f: jnp.asarray([[f(e) for e in eps] for eps in per_run], jnp.int32)
        keys = jnp.stack([jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps]) for eps in per_run])
        raw = _CLOSED[key](
            q_params, keys, arr(lambda e: e["layout_id"]), arr(lambda e: e["norm_id"]), arr(lambda e: e["group"])
        )
        raw = {k: np.asarray(v) for k, v in raw.items()}
        for cond, t in ev.summarize_groups(rows, per_run, raw, "reward_condition").items():
            rows_out += [dict(e, reward_condition=cond) for e in t["episodes"]]
    return rows_out


__all__ = [
    "closed_door_policy",
    "closed_door_tests",
    "goal_distance",
    "training_phase_exits",
    "training_start_distances",
]
