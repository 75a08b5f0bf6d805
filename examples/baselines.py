"""The lines the examples' learning curves are drawn against: random and always-WAIT.

    python -m examples.baselines [--env-id ID] [--reward-condition dense]

Both policies run on the same id and reward as the examples, through the same gymnax face
under gymnax's `LogWrapper`, so the docs' baseline numbers come from code.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C

DEFAULT_ENV_ID = "NormGym-cafe-none-train-v0"


def baseline_returns(
    env_id: str, reward_condition: str = "dense", seeds: int = 16, num_envs: int = 16, steps: int = 1000
) -> dict:
    """Mean episodic return of a uniformly random policy and of always-WAIT on `env_id`.

    Per seed: `num_envs` environments for `steps` steps each, the mean over the episodes
    that finished.  Returns {"random": [...], "always_wait": [...]} (one number per seed).
    """
    from gymnax.wrappers.purerl import LogWrapper

    import normjax

    env, params = normjax.make(env_id, reward_condition=reward_condition, return_params=True)
    env = LogWrapper(env)

    def run(key, wait):
        key, reset_key = jax.random.split(key)
        _, state = jax.vmap(env.reset, (0, None))(jax.random.split(reset_key, num_envs), params)

        def step(carry, _):
            state, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            random_action = jax.random.randint(k_act, (num_envs,), 0, C.N_ACTIONS)
            action = jnp.where(wait, jnp.full((num_envs,), C.WAIT), random_action)
            _, state, _, _, _, info = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(k_step, num_envs), state, action, params
            )
            return (state, key), (info["returned_episode_returns"], info["returned_episode"])

        _, (ret, done) = jax.lax.scan(step, (state, key), None, steps)
        return (ret * done).sum() / jnp.maximum(done.sum(), 1)

    keys = jax.random.split(jax.random.PRNGKey(12345), seeds)
    both = jax.jit(jax.vmap(jax.vmap(run, (0, None)), (None, 0)))(keys, jnp.array([False, True]))
    return {"random": np.asarray(both[0]).tolist(), "always_wait": np.asarray(both[1]).tolist()}


def main(argv=None) -> dict:
    from normjax.world.state import REWARD_CONDITIONS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default=DEFAULT_ENV_ID)
    p.add_argument("--reward-condition", choices=REWARD_CONDITIONS, default="dense")
    args = p.parse_args(argv)
    result = baseline_returns(args.env_id, args.reward_condition)
    for name, values in result.items():
        print(f"{name}: min {min(values):.1f}, median {np.median(values):.1f}, max {max(values):.1f} (per seed)")
    return result


if __name__ == "__main__":
    main()
