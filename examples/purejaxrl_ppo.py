"""PPO in the PureJaxRL style on a NormGym id: the whole training is one compiled scan.

    python -m examples.purejaxrl_ppo --seeds 8 --total-steps 500000 --out ppo.json
    python examples/purejaxrl_ppo.py --help

`make_train(config)` returns `train(key)`; every seed's training runs as
`jax.jit(jax.vmap(train))(keys)`: rollouts of `num_envs` environments (normjax's gymnax
face, `normjax.make(id, return_params=True)`, under gymnax's `LogWrapper`), generalised
advantage estimates, and clipped-objective updates over shuffled minibatches, all inside
`jax.lax.scan`.  The actor-critic is a flax NNX module used functionally (`nnx.split` /
`nnx.merge`) so its parameters are a pytree that `vmap` and optax handle.  Needs the
[gymnax] extra (`pip install -e ".[gymnax]"`).

The curve is the mean return of the episodes that ended in each rollout; the final
return of a seed is that mean over its last `final_window` rollouts.
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
class PPOConfig:
    env_id: str
    reward_condition: str = "dense"  # sparse_penalty (the id's default), no_penalty or dense
    total_steps: int = 500_000  # environment steps per seed
    num_envs: int = 16
    num_steps: int = 64  # rollout length per environment
    update_epochs: int = 4
    num_minibatches: int = 4
    lr: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    final_window: int = 10  # rollouts averaged for a seed's final return

    @property
    def num_updates(self) -> int:
        return max(1, self.total_steps // (self.num_envs * self.num_steps))


class ActorCritic(nnx.Module):
    """Separate 64-64 tanh torsos for the policy logits and the value."""

    def __init__(self, obs_size: int, hidden: int, rngs: nnx.Rngs):
        self.pi1 = nnx.Linear(obs_size, hidden, rngs=rngs)
        self.pi2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.pi_out = nnx.Linear(hidden, C.N_ACTIONS, kernel_init=nnx.initializers.orthogonal(0.01), rngs=rngs)
        self.v1 = nnx.Linear(obs_size, hidden, rngs=rngs)
        self.v2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.v_out = nnx.Linear(hidden, 1, kernel_init=nnx.initializers.orthogonal(1.0), rngs=rngs)

    def __call__(self, obs):
        pi = jnp.tanh(self.pi2(jnp.tanh(self.pi1(obs))))
        v = jnp.tanh(self.v2(jnp.tanh(self.v1(obs))))
        return self.pi_out(pi), self.v_out(v)[..., 0]


def make_train(config: PPOConfig):
    """`train(key) -> (params, metrics)` for one seed, pure and jittable."""
    LogWrapper = require("gymnax.wrappers.purerl", "gymnax", "examples.purejaxrl_ppo").LogWrapper
    env, env_params = normjax.make(config.env_id, reward_condition=config.reward_condition, return_params=True)
    env = LogWrapper(env)
    obs_size = env.observation_space(env_params).shape[0]
    n_batch = config.num_envs * config.num_steps
    minibatch = n_batch // config.num_minibatches
    # The network's structure is static; only its parameters travel through the scans.
    graphdef, _ = nnx.split(ActorCritic(obs_size, config.hidden, nnx.Rngs(0)))
    schedule = optax.linear_schedule(config.lr, 0.0, config.num_updates * config.update_epochs * config.num_minibatches)
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule, eps=1e-5))

    def apply(params, obs):
        return nnx.merge(graphdef, params)(obs)

    def train(key):
        key, k_net, k_reset = jax.random.split(key, 3)
        _, params = nnx.split(ActorCritic(obs_size, config.hidden, nnx.Rngs(k_net)))
        opt_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, config.num_envs), env_params)

        def env_step(carry, _):
            params, env_state, obs, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            logits, value = apply(params, obs)
            action = jax.random.categorical(k_act, logits)
            log_prob = jax.nn.log_softmax(logits)[jnp.arange(config.num_envs), action]
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(k_step, config.num_envs), env_state, action, env_params
            )
            # Bootstrap through truncation from the last observation; stop only at termination.
            _, final_value = apply(params, info["final_observation"])
            reward = reward + config.gamma * final_value * (truncated & ~terminated)
            done = terminated | truncated
            step = (
                obs,
                action,
                log_prob,
                value,
                reward,
                done,
                info["returned_episode_returns"],
                info["returned_episode"],
            )
            return (params, env_state, next_obs, key), step

        def gae(values, rewards, dones, last_value):
            def back(carry, t):
                advantage, next_value = carry
                value, reward, done = t
                delta = reward + config.gamma * next_value * (1 - done) - value
                advantage = delta + config.gamma * config.gae_lambda * (1 - done) * advantage
                return (advantage, value), advantage

            _, adv = jax.lax.scan(
                back, (jnp.zeros_like(last_value), last_value), (values, rewards, dones), reverse=True
            )
            return adv, adv + values

        def loss_fn(params, batch):
            obs, action, old_log_prob, old_value, advantage, target = batch
            logits, value = apply(params, obs)
            log_probs = jax.nn.log_softmax(logits)
            log_prob = jnp.take_along_axis(log_probs, action[:, None], axis=1)[:, 0]
            clipped_value = old_value + jnp.clip(value - old_value, -config.clip_eps, config.clip_eps)
            value_loss = 0.5 * jnp.maximum((value - target) ** 2, (clipped_value - target) ** 2).mean()
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
            ratio = jnp.exp(log_prob - old_log_prob)
            clipped = jnp.clip(ratio, 1 - config.clip_eps, 1 + config.clip_eps)
            policy_loss = -jnp.minimum(ratio * advantage, clipped * advantage).mean()
            entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
            return policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy

        def update_minibatch(carry, batch):
            params, opt_state = carry
            grads = jax.grad(loss_fn)(params, batch)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), None

        def update_epoch(carry, _):
            params, opt_state, batch, key = carry
            key, k_perm = jax.random.split(key)
            order = jax.random.permutation(k_perm, n_batch)
            shuffled = jax.tree.map(lambda x: x.reshape((n_batch,) + x.shape[2:])[order], batch)
            minibatches = jax.tree.map(lambda x: x.reshape((config.num_minibatches, minibatch) + x.shape[1:]), shuffled)
            (params, opt_state), _ = jax.lax.scan(update_minibatch, (params, opt_state), minibatches)
            return (params, opt_state, batch, key), None

        def update(carry, _):
            params, opt_state, env_state, obs, key = carry
            (params, env_state, obs, key), traj = jax.lax.scan(
                env_step, (params, env_state, obs, key), None, config.num_steps
            )
            t_obs, action, log_prob, value, reward, done, ep_return, ep_done = traj
            _, last_value = apply(params, obs)
            advantage, target = gae(value, reward, done.astype(jnp.float32), last_value)
            batch = (t_obs, action, log_prob, value, advantage, target)
            (params, opt_state, _, key), _ = jax.lax.scan(
                update_epoch, (params, opt_state, batch, key), None, config.update_epochs
            )
            metrics = {"return_sum": (ep_return * ep_done).sum(), "episodes": ep_done.sum()}
            return (params, opt_state, env_state, obs, key), metrics

        (params, *_), metrics = jax.lax.scan(update, (params, opt_state, env_state, obs, key), None, config.num_updates)
        return params, metrics

    return train


def run(config: PPOConfig, seeds: int) -> dict:
    """Train `seeds` runs in one program; the curve, final returns and times as a dict."""
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    started = time.perf_counter()
    compiled = jax.jit(jax.vmap(make_train(config))).lower(keys).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_s = time.perf_counter() - started
    return summarise("purejaxrl_ppo", config, metrics, config.num_envs * config.num_steps, compile_s, run_s)


def summarise(name, config, metrics, steps_per_row, compile_s, run_s) -> dict:
    """Per-seed curve of mean episodic return per row of metrics (NaN where none ended)."""
    sums, counts = np.asarray(metrics["return_sum"]), np.asarray(metrics["episodes"])
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = sums / counts
    w = config.final_window
    final = sums[:, -w:].sum(1) / np.maximum(counts[:, -w:].sum(1), 1)
    return {
        "example": name,
        "env_id": config.env_id,
        "config": dataclasses.asdict(config),
        "steps": (np.arange(1, sums.shape[1] + 1) * steps_per_row).tolist(),
        "curve": [[None if np.isnan(x) else float(x) for x in row] for row in curve],
        "final_return": final.tolist(),
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

    defaults = PPOConfig(env_id=DEFAULT_ENV_ID)
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
