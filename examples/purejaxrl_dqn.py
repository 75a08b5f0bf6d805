"""DQN in the PureJaxRL style on a NormGym id: environment, replay and updates in one scan.

    python -m examples.purejaxrl_dqn --seeds 8 --total-steps 200000 --out dqn.json
    python examples/purejaxrl_dqn.py --help

`make_train(config)` returns `train(key)`; every seed's training runs as
`jax.jit(jax.vmap(train))(keys)`.  Each scan step moves `num_envs` environments
(normjax's gymnax face under gymnax's `LogWrapper`) with an epsilon-greedy policy, writes
the transitions into a circular replay buffer held in the carry, and every `train_every`
steps takes one Adam step on the Huber TD error of a uniformly sampled batch against a
target network copied every `target_every` steps.  The Q-network is a flax NNX module
used functionally (`nnx.split` / `nnx.merge`).  Needs the [gymnax] extra
(`pip install -e ".[gymnax]"`).

The curve is the mean return of the episodes that ended in each block of `log_every`
scan steps; the final return of a seed is that mean over its last `final_window` blocks.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import normjax
from normjax import constants as C
from normjax.wrappers._optional import require

# No norm: a policy beats always-WAIT only by reaching goals (docs/ecosystem.md, "Examples").
DEFAULT_ENV_ID = "NormGym-cafe-none-train-v0"
DEFAULT_SEEDS = 8


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    env_id: str
    reward_condition: str = "dense"  # sparse_penalty (the id's default), no_penalty or dense
    total_steps: int = 200_000  # environment steps per seed
    num_envs: int = 16
    buffer_size: int = 50_000  # transitions
    batch_size: int = 64
    learning_starts: int = 2_000  # transitions before the first update
    train_every: int = 1  # scan steps (of num_envs transitions) between updates
    target_every: int = 500  # scan steps between target copies
    lr: float = 5e-4
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_fraction: float = 0.3  # of the run over which epsilon falls linearly
    max_grad_norm: float = 10.0
    hidden: int = 64
    log_every: int = 200  # scan steps per point of the curve (one 200-step episode per env)
    final_window: int = 3  # curve points averaged for a seed's final return

    @property
    def num_iterations(self) -> int:
        blocks = max(1, self.total_steps // (self.num_envs * self.log_every))
        return blocks * self.log_every


class QNetwork(nnx.Module):
    """obs -> 64 -> 64 -> one value per action (ReLU)."""

    def __init__(self, obs_size: int, hidden: int, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(obs_size, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, C.N_ACTIONS, rngs=rngs)

    def __call__(self, obs):
        return self.out(nnx.relu(self.l2(nnx.relu(self.l1(obs)))))


def make_train(config: DQNConfig):
    """`train(key) -> (params, metrics)` for one seed, pure and jittable."""
    LogWrapper = require("gymnax.wrappers.purerl", "gymnax", "examples.purejaxrl_dqn").LogWrapper
    env, env_params = normjax.make(config.env_id, reward_condition=config.reward_condition, return_params=True)
    env = LogWrapper(env)
    obs_size = env.observation_space(env_params).shape[0]
    n = config.num_envs
    slots = config.buffer_size // n  # the buffer holds [slots, num_envs] transitions
    graphdef, _ = nnx.split(QNetwork(obs_size, config.hidden, nnx.Rngs(0)))
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))
    eps = optax.linear_schedule(config.eps_start, config.eps_end, int(config.eps_fraction * config.num_iterations))

    def q(params, obs):
        return nnx.merge(graphdef, params)(obs)

    def loss_fn(params, target_params, batch):
        obs, action, reward, next_obs, terminated = batch
        next_q = q(target_params, next_obs).max(-1)
        target = reward + config.gamma * (1.0 - terminated) * next_q
        chosen = jnp.take_along_axis(q(params, obs), action[:, None], axis=1)[:, 0]
        return optax.huber_loss(chosen, jax.lax.stop_gradient(target)).mean()

    def train(key):
        key, k_net, k_reset = jax.random.split(key, 3)
        _, params = nnx.split(QNetwork(obs_size, config.hidden, nnx.Rngs(k_net)))
        opt_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, n), env_params)
        buffer = {
            "obs": jnp.zeros((slots, n, obs_size), jnp.float32),
            "next_obs": jnp.zeros((slots, n, obs_size), jnp.float32),
            "action": jnp.zeros((slots, n), jnp.int32),
            "reward": jnp.zeros((slots, n), jnp.float32),
            "terminated": jnp.zeros((slots, n), jnp.float32),
        }

        def step(carry, i):
            params, target_params, opt_state, env_state, obs, buffer, key = carry
            key, k_explore, k_random, k_step, k_sample = jax.random.split(key, 5)
            greedy = q(params, obs).argmax(-1)
            random_action = jax.random.randint(k_random, (n,), 0, C.N_ACTIONS)
            action = jnp.where(jax.random.uniform(k_explore, (n,)) < eps(i), random_action, greedy)
            next_obs, env_state, reward, terminated, _, info = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(k_step, n), env_state, action, env_params
            )
            # The auto-reset returns the next episode's first observation; store the true last one.
            transition = {
                "obs": obs,
                "next_obs": info["final_observation"],
                "action": action,
                "reward": reward,
                "terminated": terminated.astype(jnp.float32),
            }
            slot = i % slots
            buffer = jax.tree.map(lambda b, x: b.at[slot].set(x), buffer, transition)

            def learn(params, opt_state):
                filled = jnp.minimum(i + 1, slots)
                rows = jax.random.randint(k_sample, (config.batch_size,), 0, filled)
                cols = jax.random.randint(jax.random.fold_in(k_sample, 1), (config.batch_size,), 0, n)
                batch = tuple(buffer[k][rows, cols] for k in ("obs", "action", "reward", "next_obs", "terminated"))
                grads = jax.grad(loss_fn)(params, target_params, batch)
                updates, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            ready = ((i + 1) * n >= config.learning_starts) & (i % config.train_every == 0)
            params, opt_state = jax.lax.cond(ready, learn, lambda p, o: (p, o), params, opt_state)
            target_params = jax.tree.map(
                lambda t, p: jnp.where(i % config.target_every == 0, p, t), target_params, params
            )
            metrics = {"return_sum": (info["returned_episode_returns"] * info["returned_episode"]).sum()}
            metrics["episodes"] = info["returned_episode"].sum()
            return (params, target_params, opt_state, env_state, next_obs, buffer, key), metrics

        carry = (params, params, opt_state, env_state, obs, buffer, key)
        carry, metrics = jax.lax.scan(step, carry, jnp.arange(config.num_iterations))
        # One curve point per block of log_every scan steps.
        metrics = jax.tree.map(lambda x: x.reshape((-1, config.log_every)).sum(1), metrics)
        return carry[0], metrics

    return train


def run(config: DQNConfig, seeds: int) -> dict:
    """Train `seeds` runs in one program; the curve, final returns and times as a dict."""
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    started = time.perf_counter()
    compiled = jax.jit(jax.vmap(make_train(config))).lower(keys).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_s = time.perf_counter() - started
    sums, counts = np.asarray(metrics["return_sum"]), np.asarray(metrics["episodes"])
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = sums / counts
    w = config.final_window
    return {
        "example": "purejaxrl_dqn",
        "env_id": config.env_id,
        "config": dataclasses.asdict(config),
        "steps": (np.arange(1, sums.shape[1] + 1) * config.num_envs * config.log_every).tolist(),
        "curve": [[None if np.isnan(x) else float(x) for x in row] for row in curve],
        "final_return": (sums[:, -w:].sum(1) / np.maximum(counts[:, -w:].sum(1), 1)).tolist(),
        "compile_s": compile_s,
        "run_s": run_s,
    }


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: give a positive integer (1, 2, ...)")
    return value


def _env_id(text: str) -> str:
    from normjax.registration import parse_env_id

    try:
        parse_env_id(text)  # the error names the closest valid ids
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def main(argv=None) -> dict:
    from normjax.world.state import REWARD_CONDITIONS

    defaults = DQNConfig(env_id=DEFAULT_ENV_ID)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", type=_env_id, default=DEFAULT_ENV_ID, help=f"a NormGym id (default {DEFAULT_ENV_ID})")
    p.add_argument("--reward-condition", choices=REWARD_CONDITIONS, default=defaults.reward_condition)
    p.add_argument(
        "--seeds", type=_positive_int, default=DEFAULT_SEEDS, help=f"independent runs (default {DEFAULT_SEEDS})"
    )
    p.add_argument("--total-steps", type=_positive_int, default=defaults.total_steps, help="environment steps per seed")
    p.add_argument("--out", type=Path, help="write the result (curves, times, config) to this JSON file")
    args = p.parse_args(argv)
    config = dataclasses.replace(
        defaults, env_id=args.env_id, reward_condition=args.reward_condition, total_steps=args.total_steps
    )
    result = run(config, args.seeds)
    print(
        f"{result['example']} on {config.env_id} ({config.reward_condition}): final return per seed "
        + ", ".join(f"{x:.1f}" for x in result["final_return"])
        + f"; compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s"
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
