"""In-graph DQN for NormGym: one population of runs trained under one `jit`.

PureJaxRL style: `make_train(config)` returns pure functions, and training is
a single `lax.scan` carrying the runner state of every run of the population
(norms x reward conditions x seeds), `vmap`ped inside the scan body.  Every
run has its own PRNG key (exploration, replay sampling, initialisation); the
environment episodes of norm i use the paper's seed block 10^6 + 10^5 i
(episode e resets with seed 10^6 + 10^5 i + e), shared across conditions.

One scan iteration ("chunk") = `train_freq` environment steps (the episode API's step),
then one gradient update, so no update is computed and discarded under `vmap`.
docs/world.md §11: Huber TD loss with the physically-masked max in the target, Adam 1e-4,
global-norm clipping 10, replay 100k (`train.replay`), learning starts at 1,000, batch 32,
hard target copies every 10,000 steps, epsilon 1.0 -> 0.05 over the first 30% then flat.
Training episodes are 200 steps with turnover (the newcomer is replaced when it finishes);
the time-limit cut is a truncation, so the TD target keeps bootstrapping (`terminated`
never fires in training).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from normjax import constants as C
from normjax.agents.networks import action_mask, epsilon_greedy, functional, masked_argmax, masked_max
from normjax.env.environment import NormGymEnv
from normjax.env.episode import StepKeys, episode_step, fixed_action, start_episode
from normjax.layouts.tables import layout_id
from normjax.train import replay as rp
from normjax.train.config import DQNConfig
from normjax.train.first_layer import training_net
from normjax.train.sharding import per_device
from normjax.world.observation import obs_size, observe
from normjax.world.state import WorldParams, make_params
from normjax.world.step import terminated, truncated


@struct.dataclass
class RunSpec:
    """Per-run data of the population (leading axis = run)."""

    norm_id: jax.Array
    seed_base: jax.Array  # first episode seed of the run's block
    params: WorldParams


@struct.dataclass
class Metrics:
    """Running sums since the last report, per run."""

    loss: jax.Array
    q_mean: jax.Array
    updates: jax.Array
    reward: jax.Array
    sanctions: jax.Array
    collisions: jax.Array
    goals: jax.Array
    waits: jax.Array
    steps: jax.Array
    episodes: jax.Array
    episode_return: jax.Array  # sum of returns of completed episodes


@struct.dataclass
class Runner:
    q_params: Any  # in the trainer's form (train.first_layer); `_Train.q_dense` gives the network's
    target_params: Any
    opt_state: Any
    frozen: Any  # the parameters training never changes (train.first_layer), or None
    env_state: Any
    obs: jax.Array
    key: jax.Array
    step: jax.Array  # transitions collected so far
    episode: jax.Array  # index of the current episode within the run's seed block
    ep_return: jax.Array
    metrics: Metrics


def population(config: DQNConfig) -> tuple[RunSpec, list[dict]]:
    """The runs of a config: (norm, reward condition, seed) triples, batched."""
    lid = layout_id(config.layout)
    specs, rows = [], []
    for cond in config.reward_conditions:
        for nid in config.norm_ids:
            for s in range(config.seeds_per_norm):
                p = make_params(
                    lid,
                    nid,
                    max_steps=config.episode_steps,
                    reward_condition=cond,
                    static_layout=True,
                    replace_newcomer=True,
                    n_blind=0,
                    distractor=config.distractor,
                    distractor_share=config.distractor_share,
                )
                base = 10**6 + 10**5 * nid + s * 10**4
                specs.append(RunSpec(norm_id=jnp.int32(nid), seed_base=jnp.int32(base), params=p))
                rows.append({"norm_id": nid, "reward_condition": cond, "seed": s, "seed_base": base})
    return jax.tree.map(lambda *x: jnp.stack(x), *specs), rows


def epsilon_at(config: DQNConfig, step):
    frac = jnp.clip(step / (config.eps_fraction * config.total_steps), 0.0, 1.0)
    return config.eps_start + frac * (config.eps_end - config.eps_start)


def td_loss(apply, q_params, target_params, batch, gamma):
    """Huber TD loss; the target's max runs over physically possible actions."""
    q_a = jnp.take_along_axis(apply(q_params, batch["obs"]), batch["action"][:, None], axis=1)[:, 0]
    nxt = masked_max(apply(target_params, batch["next_obs"]), action_mask(batch["next_obs"]))
    target = batch["reward"] + gamma * (1.0 - batch["terminated"]) * nxt
    loss = optax.huber_loss(q_a, jax.lax.stop_gradient(target)).mean()
    return loss, q_a.mean()


def make_train(config: DQNConfig):
    """Returns an object with `init(key, spec)`, `chunk(runner, spec)` and `train(key)`.

    One architecture per trainer; `make_population` combines several.
    """
    if len(config.archs) != 1:
        raise ValueError(f"make_train takes one architecture, got arch={config.arch!r}; use make_population")
    if len(config.capacities) != 1:
        raise ValueError(
            f"make_train takes one capacity, got capacity={config.capacity!r}; "
            "train one population per K (DQNConfig.per_capacity)"
        )
    env = NormGymEnv(capacity=config.capacity)  # its reset; each run's params are passed in
    n_obs = obs_size(config.capacity)
    _, apply = functional(config.arch, n_obs)  # the network's own form: evaluation, probes, final tests
    net = training_net(
        config.arch, config.first_layer, config.layout, n_obs, config.max_grad_norm, config.learning_rate
    )
    tx = net.tx
    spec_all, rows = population(config)

    def env_reset(spec: RunSpec, episode):
        obs, state = env.reset(jax.random.PRNGKey(spec.seed_base + episode), spec.params)
        return state, obs

    def init(key, spec: RunSpec) -> Runner:
        k_net, k_run = jax.random.split(key)
        q_params, frozen = net.init(k_net)
        state, obs = env_reset(spec, jnp.int32(0))
        zero = jnp.float32(0)
        return Runner(
            q_params=q_params,
            target_params=jax.tree.map(jnp.copy, q_params),
            opt_state=tx.init(q_params),
            frozen=frozen,
            env_state=state,
            obs=obs,
            key=k_run,
            step=jnp.int32(0),
            episode=jnp.int32(0),
            ep_return=zero,
            metrics=Metrics(*([zero] * 11)),
        )

    def env_step(runner: Runner, spec: RunSpec):
        key, k_act, k_comm, k_world = jax.random.split(runner.key, 4)
        x = net.compress(runner.obs)  # the replay's form of the observation
        q = net.apply(runner.q_params, runner.frozen, x)
        eps = epsilon_at(config, runner.step)
        action = epsilon_greedy(k_act, q, action_mask(runner.obs), eps).astype(jnp.int32)
        p = spec.params
        # The episode API's step with this run's own keys (recorded runs reproduce); nothing freezes in training.
        episode, info = episode_step(
            StepKeys(k_comm, k_act, k_world), start_episode(runner.env_state), p, fixed_action(action)
        )
        state = episode.state
        next_obs = observe(state, p).flat()
        term = terminated(state, p)
        reward = info.reward[0]
        item = {
            "obs": x,
            "action": action,
            "reward": reward,
            "next_obs": net.compress(next_obs),
            "terminated": term.astype(jnp.float32),
        }
        m = runner.metrics
        m = m.replace(
            reward=m.reward + reward,
            sanctions=m.sanctions + info.sanctioned[0],
            collisions=m.collisions + info.collided[0],
            goals=m.goals + info.goals_completed[0],
            waits=m.waits + (info.action[0] == C.WAIT) * info.active[0],
            steps=m.steps + 1,
        )
        runner = runner.replace(
            env_state=state, obs=next_obs, key=key, step=runner.step + 1, ep_return=runner.ep_return + reward, metrics=m
        )
        return runner, item

    def maybe_reset(runner: Runner, spec: RunSpec) -> Runner:
        """Start the next episode of the seed block after the time limit.

        Checked once per chunk: episodes last a multiple of train_freq steps
        and training episodes never terminate early (the newcomer is replaced),
        so a reset can only be due at a chunk's end; computing it once per
        chunk instead of every step halves the environment cost under vmap.
        """
        p = spec.params
        done = terminated(runner.env_state, p) | truncated(runner.env_state, p)
        new_state, new_obs = env_reset(spec, runner.episode + 1)
        m = runner.metrics
        m = m.replace(
            episodes=m.episodes + done, episode_return=m.episode_return + jnp.where(done, runner.ep_return, 0.0)
        )
        return runner.replace(
            env_state=jax.tree.map(lambda a, b: jnp.where(done, a, b), new_state, runner.env_state),
            obs=jnp.where(done, new_obs, runner.obs),
            episode=runner.episode + done,
            ep_return=jnp.where(done, 0.0, runner.ep_return),
            metrics=m,
        )

    def reset_due(runners: Runner, specs: RunSpec) -> Runner:
        """`maybe_reset` for the population, computed only when some run's episode ended.

        Training episodes all last `episode_steps` and the runs step in
        lockstep, so resets fall on the same chunk, once per episode: a real
        `cond` skips building 50 fresh episodes (as costly as a step) on the
        other chunks.  Where no run is done, `maybe_reset` returns its input.
        """
        done = jax.vmap(lambda r, s: terminated(r.env_state, s.params) | truncated(r.env_state, s.params))(
            runners, specs
        )
        return jax.lax.cond(done.any(), lambda r: jax.vmap(maybe_reset)(r, specs), lambda r: r, runners)

    def update(runner: Runner, batch: dict, learn, copy):
        """One gradient step on a replay minibatch, then the hard target copy.

        `learn` (step >= learning_starts) and `copy` (step a multiple of
        `target_update`; steps are multiples of train_freq) are the same for
        every run of a population, which steps in lockstep: passed unbatched,
        they stay real `cond`s under `vmap`.  As per-run `where`s they read and
        rewrote the parameters, both Adam moments and the target on every
        update: about half of the update's memory traffic.
        """

        def learn_step(runner: Runner) -> Runner:
            (loss, q_mean), grads = jax.value_and_grad(
                lambda qp: td_loss(
                    lambda p, x: net.apply(p, runner.frozen, x), qp, runner.target_params, batch, config.gamma
                ),
                has_aux=True,
            )(runner.q_params)
            updates, opt_state = tx.update(grads, runner.opt_state, runner.q_params)
            m = runner.metrics
            m = m.replace(loss=m.loss + loss, q_mean=m.q_mean + q_mean, updates=m.updates + 1)
            return runner.replace(
                q_params=optax.apply_updates(runner.q_params, updates), opt_state=opt_state, metrics=m
            )

        runner = jax.lax.cond(learn, learn_step, lambda r: r, runner)
        target = jax.lax.cond(copy, lambda r: r.q_params, lambda r: r.target_params, runner)
        return runner.replace(target_params=target)

    def update_population(runners: Runner, batch: dict) -> Runner:
        """`update` of every run, with the population's `learn` and `copy` decided once."""
        step = runners.step[0]  # the runs step in lockstep
        learn = step >= config.learning_starts
        copy = (step % config.target_update) == 0
        return jax.vmap(update, in_axes=(0, 0, None, None))(runners, batch, learn, copy)

    def collect(runner: Runner, spec: RunSpec):
        """`train_freq` environment steps of one run -> (runner, items [train_freq])."""
        return jax.lax.scan(lambda r, _: env_step(r, spec), runner, None, length=config.train_freq)

    def local_chunk(runners: Runner, rb: rp.Replay, specs: RunSpec):
        runners, items = jax.vmap(collect)(runners, specs)
        rb = rp.add_block(rb, **items)
        keys = jax.vmap(lambda k: jax.random.split(k))(runners.key)
        batch = rp.sample(rb, keys[:, 1], config.batch_size)
        runners = update_population(runners.replace(key=keys[:, 0]), batch)
        return reset_due(runners, specs), rb

    def chunk(runners: Runner, rb: rp.Replay, specs: RunSpec, mesh=None):
        """Population chunk: `train_freq` env steps per run, store, one update each.

        `mesh`: the 1-D mesh the runs are sharded over (`train.run.population_mesh`),
        or None.  With a mesh each device runs the chunk of its own runs
        (`shard_map`): the runs are independent, so the devices exchange nothing,
        and the step's rare work is packed among each device's runs
        (`normjax.ground.rare`).  Left to the compiler, a sharded batch must
        compute that work for every run (`WorldParams.packing` False, which halved the
        acting rate on two CPU devices).  The results are the same.
        """
        return per_device(local_chunk, mesh)(runners, rb, specs)

    def run_chunks(carry, specs: RunSpec, n_chunks: int, callback: Callable | None = None, mesh=None):
        """Scan `n_chunks` population chunks; carry = (runners, replay); `mesh`: see `chunk`."""

        def body(c, _):
            c = chunk(*c, specs, mesh)
            if callback is not None:
                jax.debug.callback(callback, c[0].step[0], ordered=False)
            return c, None

        carry, _ = jax.lax.scan(body, carry, None, length=n_chunks)
        return carry

    def init_population(key, specs: RunSpec = spec_all):
        """(runners, replay) of the population; every run gets its own key."""
        n = specs.norm_id.shape[0]
        runners = jax.vmap(init)(jax.random.split(key, n), specs)
        return runners, rp.init(n, config.buffer_size, len(net.columns), jnp.dtype(config.replay_dtype))

    def train(key):
        """The whole run in one program (no validation or checkpoints)."""
        return run_chunks(init_population(key), spec_all, config.total_steps // config.train_freq)

    def greedy_policy(q_params):
        def policy(obs, key):
            return masked_argmax(apply(q_params, obs), action_mask(obs))

        return policy

    def q_dense(runners: Runner):
        """The population's online parameters in the network's form (`agents.networks`)."""
        return jax.vmap(net.dense)(runners.q_params, runners.frozen)

    def target_dense(runners: Runner):
        return jax.vmap(net.dense)(runners.target_params, runners.frozen)

    return _Train(
        config=config,
        net=net,
        init=init,
        q_dense=q_dense,
        target_dense=target_dense,
        chunk=chunk,
        env_step=env_step,
        update=update,
        update_population=update_population,
        run_chunks=run_chunks,
        init_population=init_population,
        train=train,
        apply=apply,
        specs=spec_all,
        rows=rows,
        greedy_policy=greedy_policy,
        collect=collect,
        maybe_reset=maybe_reset,
        reset_due=reset_due,
        tx=tx,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class _Train:
    """The pure functions of one config (hashed by identity, for caches)."""

    config: DQNConfig
    net: Any  # train.first_layer.TrainingNet
    init: Callable
    q_dense: Callable
    target_dense: Callable
    chunk: Callable
    env_step: Callable
    update: Callable
    update_population: Callable
    run_chunks: Callable
    init_population: Callable
    train: Callable
    apply: Callable
    specs: RunSpec
    rows: list
    greedy_policy: Callable
    collect: Callable
    maybe_reset: Callable
    reset_due: Callable
    tx: Any


@dataclasses.dataclass(frozen=True, eq=False)
class Population:
    """Runs of several architectures trained in one scan (the paper's ablation grid).

    Parameters of DQN-MLP and DQN-CNN differ in shape, so each architecture is
    a member with its own vmapped runners and replay; one scan iteration steps
    every member by one chunk.  Member 0 gets the population key itself and
    member m > 0 `fold_in(key, m)`, so the MLP runs of a mixed population
    start exactly like those of an MLP-only population with the same seed.
    The carry is a tuple with one (runners, replay) pair per member.
    """

    config: DQNConfig
    members: tuple

    def member_rows(self) -> list[tuple]:
        """(member, its rows with the architecture, population index of its first run)."""
        out, offset = [], 0
        for m in self.members:
            out.append((m, [dict(r, arch=m.config.arch) for r in m.rows], offset))
            offset += len(m.rows)
        return out

    @property
    def rows(self) -> list[dict]:
        """One row per run, all members in order, each with its architecture."""
        return [r for _, rows, _ in self.member_rows() for r in rows]

    @property
    def specs(self) -> tuple:
        return tuple(m.specs for m in self.members)

    def init_population(self, key) -> tuple:
        return tuple(
            m.init_population(key if i == 0 else jax.random.fold_in(key, i)) for i, m in enumerate(self.members)
        )

    def run_chunks(
        self, carry: tuple, specs: tuple, n_chunks: int, callback: Callable | None = None, meshes: tuple | None = None
    ) -> tuple:
        """`meshes`: one per member, the mesh its runs are sharded over or None (`_Train.chunk`)."""
        meshes = (None,) * len(self.members) if meshes is None else meshes

        def body(c, _):
            c = tuple(m.chunk(*ci, si, mi) for m, ci, si, mi in zip(self.members, c, specs, meshes))
            if callback is not None:
                jax.debug.callback(callback, c[0][0].step[0], ordered=False)
            return c, None

        return jax.lax.scan(body, carry, None, length=n_chunks)[0]


def make_population(config: DQNConfig) -> Population:
    """One `make_train` member per architecture in `config.arch` (e.g. "mlp,cnn")."""
    return Population(config, tuple(make_train(dataclasses.replace(config, arch=a)) for a in config.archs))
