"""Pure-JAX wrapper base and auto-reset (gymnax / XLand-MiniGrid style).

A wrapper has the interface of `NormGymEnv`: `reset(key, params) -> (obs, state)`
and `step(key, state, action, params) -> (obs, state, reward, terminated,
truncated, info)`, pure, jittable and vmappable; everything else (`default_params`,
`capacity`, `num_actions`, `obs_size`, ...) is forwarded to the wrapped env.

Info convention: the base env returns a `StepInfo`; a wrapper that adds entries
returns a dict holding the `StepInfo` under "step" (`info_dict`), so wrappers
compose in any order and `step_info(info)` always finds the per-slot record.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import salts
from normjax.ground.rare import run_where
from normjax.world.step import StepInfo

# Salt of the auto-reset key: `jax.random.fold_in(step_key, RESET_SALT)`.  The step
# key itself goes to the wrapped step untouched, so an auto-reset environment steps
# exactly like the bare one until an episode ends (tests/wrappers/test_gymnasium.py replays the
# vector env with the bare env), and the reset draws from a key derived by hashing,
# not one of the step's own splits.
RESET_SALT = salts.AUTO_RESET  # normjax.salts


def reset_key(key):
    """The key an auto-reset uses after a step taken with `key`."""
    return jax.random.fold_in(key, RESET_SALT)


def seed_key(seed: int):
    """The PRNG key of an integer seed (Gymnasium / PettingZoo `reset(seed=...)`).

    `PRNGKey(seed)` for seeds below 2**32; JAX (without x64) keeps only the low 32
    bits of a seed, so the higher bits are folded in, keeping large seeds distinct.
    """
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seeds are non-negative integers, got {seed}")
    key = jax.random.PRNGKey(seed & 0xFFFF_FFFF)
    high = seed >> 32
    while high:
        key = jax.random.fold_in(key, high & 0xFFFF_FFFF)
        high >>= 32
    return key


def info_dict(info) -> dict:
    """A fresh dict view of a step's info (a bare `StepInfo` goes under "step")."""
    return dict(info) if isinstance(info, dict) else {"step": info}


def step_info(info) -> StepInfo:
    """The per-slot `StepInfo` of a step, whatever wrappers added around it."""
    return info if isinstance(info, StepInfo) else info["step"]


def world_state(state):
    """The `WorldState` inside a (possibly wrapped) environment state."""
    while hasattr(state, "env_state"):
        state = state.env_state
    return state


def where_tree(cond, on_true, on_false):
    """Leafwise `jnp.where(cond, a, b)` over two pytrees of one structure."""
    return jax.tree.map(lambda a, b: jnp.where(cond, a, b), on_true, on_false)


class Wrapper:
    """Forwards `reset`, `step` and every attribute to the wrapped environment."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        if name.startswith("__") or name == "_env":  # copy / pickle probe before __init__
            raise AttributeError(name)
        return getattr(self._env, name)

    @property
    def unwrapped(self):
        """The innermost `NormGymEnv`."""
        env = self._env
        return env.unwrapped if isinstance(env, Wrapper) else env

    def reset(self, key, params=None):
        return self._env.reset(key, params)

    def step(self, key, state, action, params=None):
        return self._env.step(key, state, action, params)

    def observation(self, state, params=None):
        """The newcomer's structured `Observation` of a wrapped state."""
        return self.unwrapped.observation(world_state(state), params)

    def __repr__(self):
        return f"{type(self).__name__}({self._env!r})"


class AutoResetWrapper(Wrapper):
    """Start a new episode inside the step that ends one (terminated or truncated).

    Returned on such a step: the new episode's first observation and state, the
    finished step's reward, `terminated` and `truncated` (so learners still see the
    end), and in the info "final_obs", the observation the finished episode ended
    on.  Other steps return the wrapped step's values and "final_obs" equal to the
    observation.  The reset runs only for the environments whose episode ended
    (`normjax.ground.rare.run_where`: under `vmap` they are packed and reset
    together, the others pass their observation and state through).

    Keys: the wrapped step gets `key` unchanged; the reset gets `reset_key(key)`.
    Put `LogWrapper` outside this wrapper to keep finished-episode statistics in the
    state (inside, the auto-reset also resets them; the info still has them).
    """

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        done = terminated | truncated
        fresh = lambda k, p, o, s: self._env.reset(reset_key(k), p)
        same = lambda k, p, o, s: (o, s)
        packing = True if params is None else params.packing  # the world step's setting (WorldParams)
        next_obs, next_state = run_where(done, fresh, same, key, params, obs, state, packing=packing)
        info = info_dict(info)
        info["final_obs"] = obs
        return next_obs, next_state, reward, terminated, truncated, info


__all__ = [
    "AutoResetWrapper",
    "RESET_SALT",
    "Wrapper",
    "info_dict",
    "reset_key",
    "seed_key",
    "step_info",
    "where_tree",
    "world_state",
]
