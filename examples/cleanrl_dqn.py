"""DQN in the CleanRL style on a NormGym id: a host Python loop over the Gymnasium vector env.

    python -m examples.cleanrl_dqn --seeds 2 --total-steps 100000 --out cleanrl.json
    python examples/cleanrl_dqn.py --help

One file, one loop per seed, as CleanRL's dqn_jax: `gymnasium.make_vec(id, num_envs)`
(normjax's `NormGymVectorEnv`, one jitted vmapped program per step, Gymnasium's default
NEXT_STEP auto-reset), an epsilon-greedy policy from a jitted flax NNX Q-network, a replay
buffer of NumPy arrays on the host, and a jitted Adam step on the Huber TD error of a
uniformly sampled batch against a target network.  Seeds run one after another in the same
process, so the environment's and the update's programs compile once.  Needs the [gym]
extra (`pip install -e ".[gym]"`).

Under NEXT_STEP the call after an episode ends restarts that environment (its action is
ignored, reward 0): that row is no transition and is not stored.  The curve is the mean
return of the episodes that ended in each block of `log_every` vector steps; the final
return of a seed is the mean over its last `final_episodes` episodes.
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

from normjax import constants as C
from normjax.wrappers._optional import require

# No norm: a policy beats always-WAIT only by reaching goals (docs/ecosystem.md, "Examples").
DEFAULT_ENV_ID = "NormGym-cafe-none-train-v0"
DEFAULT_SEEDS = 2


@dataclasses.dataclass(frozen=True)
class Args:
    env_id: str
    reward_condition: str = "dense"  # sparse_penalty (the id's default), no_penalty or dense
    total_steps: int = 60_000  # environment steps (transitions) per seed
    num_envs: int = 8
    buffer_size: int = 50_000
    batch_size: int = 64
    learning_starts: int = 2_000
    train_every: int = 1  # vector steps between updates
    target_every: int = 500  # vector steps between target copies
    lr: float = 5e-4
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_fraction: float = 0.3
    max_grad_norm: float = 10.0
    hidden: int = 64
    log_every: int = 250  # vector steps per point of the curve
    final_episodes: int = 16  # a seed's final return: the mean over its last episodes


class QNetwork(nnx.Module):
    """obs -> 64 -> 64 -> one value per action (ReLU)."""

    def __init__(self, obs_size: int, hidden: int, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(obs_size, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, C.N_ACTIONS, rngs=rngs)

    def __call__(self, obs):
        return self.out(nnx.relu(self.l2(nnx.relu(self.l1(obs)))))


class ReplayBuffer:
    """A circular buffer of NumPy arrays; uniform sampling with the seed's own generator."""

    def __init__(self, size: int, obs_size: int, rng: np.random.Generator):
        self.obs = np.zeros((size, obs_size), np.float32)
        self.next_obs = np.zeros((size, obs_size), np.float32)
        self.action = np.zeros(size, np.int32)
        self.reward = np.zeros(size, np.float32)
        self.terminated = np.zeros(size, np.float32)
        self.size, self.pos, self.full, self.rng = size, 0, False, rng

    def add(self, obs, next_obs, action, reward, terminated):
        for i in range(len(action)):
            p = self.pos
            self.obs[p], self.next_obs[p], self.action[p] = obs[i], next_obs[i], action[i]
            self.reward[p], self.terminated[p] = reward[i], terminated[i]
            self.pos = (p + 1) % self.size
            self.full = self.full or self.pos == 0

    def sample(self, n: int):
        idx = self.rng.integers(0, self.size if self.full else self.pos, n)
        return self.obs[idx], self.action[idx], self.reward[idx], self.next_obs[idx], self.terminated[idx]


def make_functions(args: Args, obs_size: int):
    """The network's structure, its initialiser and the jitted act and update steps."""
    graphdef, _ = nnx.split(QNetwork(obs_size, args.hidden, nnx.Rngs(0)))
    tx = optax.chain(optax.clip_by_global_norm(args.max_grad_norm), optax.adam(args.lr))

    def q(params, obs):
        return nnx.merge(graphdef, params)(obs)

    def init(seed: int):
        _, params = nnx.split(QNetwork(obs_size, args.hidden, nnx.Rngs(seed)))
        return params, tx.init(params)

    @jax.jit
    def greedy(params, obs):
        return q(params, obs).argmax(-1)

    @jax.jit
    def update(params, target_params, opt_state, obs, action, reward, next_obs, terminated):
        target = reward + args.gamma * (1.0 - terminated) * q(target_params, next_obs).max(-1)

        def loss(params):
            chosen = jnp.take_along_axis(q(params, obs), action[:, None], axis=1)[:, 0]
            return optax.huber_loss(chosen, target).mean()

        grads = jax.grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return init, greedy, update


def train_seed(args: Args, envs, functions, seed: int) -> tuple[list, list, float]:
    """One seed's run: (curve points, episode returns, seconds)."""
    init, greedy, update = functions
    rng = np.random.default_rng(seed)
    params, opt_state = init(seed)
    target_params = params
    rb = ReplayBuffer(args.buffer_size, envs.single_observation_space.shape[0], rng)
    iterations = max(1, args.total_steps // args.num_envs)
    decay = max(1, int(args.eps_fraction * iterations))
    started = time.perf_counter()
    obs, _ = envs.reset(seed=seed)
    restarting = np.zeros(args.num_envs, bool)  # rows whose next call is NEXT_STEP's restart
    curve, returns, block = [], [], []
    for i in range(iterations):
        eps = max(args.eps_end, args.eps_start - (args.eps_start - args.eps_end) * i / decay)
        explore = rng.random(args.num_envs) < eps
        action = np.where(explore, rng.integers(0, C.N_ACTIONS, args.num_envs), np.asarray(greedy(params, obs)))
        next_obs, reward, terminated, truncated, info = envs.step(action)
        keep = ~restarting
        rb.add(obs[keep], next_obs[keep], action[keep], reward[keep], terminated[keep])
        if "normjax_episode" in info:
            ended = info["_normjax_episode"]
            block += info["normjax_episode"]["r"][ended].tolist()
        restarting = terminated | truncated
        obs = next_obs
        if (i + 1) * args.num_envs >= args.learning_starts and i % args.train_every == 0:
            params, opt_state = update(params, target_params, opt_state, *rb.sample(args.batch_size))
        if i % args.target_every == 0:
            target_params = params
        if (i + 1) % args.log_every == 0:
            curve.append(float(np.mean(block)) if block else None)
            returns += block
            block = []
    return curve, returns + block, time.perf_counter() - started


def run(args: Args, seeds: int) -> dict:
    """Train `seeds` runs one after another; the curve, final returns and times as a dict."""
    gymnasium = require("gymnasium", "gym", "examples.cleanrl_dqn")
    require("normjax.wrappers.gymnasium", "gym", "examples.cleanrl_dqn")  # registers the ids
    envs = gymnasium.make_vec(args.env_id, num_envs=args.num_envs, reward_condition=args.reward_condition)
    functions = make_functions(args, envs.single_observation_space.shape[0])
    # Compile the environment's step and the network's programs before the clock starts.
    started = time.perf_counter()
    obs, _ = envs.reset(seed=0)
    envs.step(np.full(args.num_envs, C.WAIT))
    params, opt_state = functions[0](0)
    jax.block_until_ready(functions[1](params, obs))
    b = args.batch_size
    rows = np.resize(obs, (b, obs.shape[1]))
    zeros = np.zeros(b, np.float32)
    jax.block_until_ready(functions[2](params, params, opt_state, rows, np.zeros(b, np.int32), zeros, rows, zeros))
    compile_s = time.perf_counter() - started
    curves, finals, run_s = [], [], 0.0
    for seed in range(seeds):
        curve, returns, seconds = train_seed(args, envs, functions, seed)
        curves.append(curve)
        finals.append(float(np.mean(returns[-args.final_episodes :])) if returns else float("nan"))
        run_s += seconds
    envs.close()
    return {
        "example": "cleanrl_dqn",
        "env_id": args.env_id,
        "config": dataclasses.asdict(args),
        "steps": [(k + 1) * args.log_every * args.num_envs for k in range(len(curves[0]))],
        "curve": curves,
        "final_return": finals,
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

    defaults = Args(env_id=DEFAULT_ENV_ID)
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
