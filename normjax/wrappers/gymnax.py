"""The gymnax face: a NormGym env that gymnax's own wrappers and training loops accept.

    from normjax.wrappers.gymnax import make
    env, params = make("NormGym-cafe-none-train-v0")        # the gymnax / XLand idiom
    env, params = normjax.make("NormGym-cafe-none-train-v0", return_params=True)  # the same
    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

`GymnaxEnv(env)` has gymnax's interface (gymnax 1.0.1): `reset(key, params)`,
`step(key, state, action, params)` returning (obs, state, reward, terminated,
truncated, info) with info a dict, `default_params`, `name` (the environment id),
`num_actions`, `action_space(params)` (`Discrete(5)`) and `observation_space(params)`
(a `Box` with the true per-entry bounds of `normjax.wrappers.bounds`), so
`gymnax.wrappers.purerl.LogWrapper(GymnaxEnv(...))` works under `jit(vmap(...))`.

Auto-reset, as gymnax's `Environment.step`: the step that ends an episode
(terminated or truncated) returns the NEW episode's first observation and state with
the finished step's reward and flags; `info["final_observation"]` is the observation
the episode ended on (gymnax's name; normjax's own `AutoResetWrapper` calls it
"final_obs", Gymnasium's name).  Keys as `AutoResetWrapper`: the step uses `key`
unchanged, the reset `reset_key(key)`, and only ended environments run the reset
under `vmap`.  Info also holds "terminated", "truncated", "discount" (0 when
terminated) and "step", the per-slot `StepInfo`.

gymnax itself is needed only for the spaces (`action_space`, `observation_space`,
imported on first use, with an ImportError naming the [gymnax] extra); reset and
step are normjax's own JAX code.

Actions: an integer dtype is required (checked while tracing); an action outside
0..4 is taken as WAIT (`normjax.wrappers.actions.as_valid_action`), since a traced
value cannot raise.
"""

from __future__ import annotations

import jax.numpy as jnp

from normjax import constants as C
from normjax.registration import env_id
from normjax.registration import make as _make_env
from normjax.wrappers._optional import require
from normjax.wrappers.actions import as_valid_action
from normjax.wrappers.bounds import observation_bounds
from normjax.wrappers.core import AutoResetWrapper, Wrapper, info_dict


def _spaces():
    """gymnax's spaces module, imported when a space is asked for: building and stepping
    a `GymnaxEnv` (what `normjax.make(id, return_params=True)` returns) needs only JAX."""
    return require("gymnax.environments.spaces", "gymnax", "normjax.wrappers.gymnax")


class GymnaxEnv(Wrapper):
    """A `NormGymEnv` (or a normjax wrapper stack without auto-reset) with gymnax's interface."""

    def __init__(self, env):
        if isinstance(env, AutoResetWrapper):
            raise TypeError("GymnaxEnv resets episodes itself; pass the env without AutoResetWrapper")
        super().__init__(AutoResetWrapper(env))

    @property
    def name(self) -> str:
        env = self.unwrapped
        return env_id(env.layout, env.norm, env.phase)

    @property
    def num_actions(self) -> int:
        return C.N_ACTIONS

    def action_space(self, params=None):
        return _spaces().Discrete(C.N_ACTIONS)

    def observation_space(self, params=None):
        low, high = observation_bounds(self.unwrapped.capacity)
        return _spaces().Box(jnp.asarray(low), jnp.asarray(high), low.shape, jnp.float32)

    def reset(self, key, params=None):
        return self._env.reset(key, self.default_params if params is None else params)

    def step(self, key, state, action, params=None):
        params = self.default_params if params is None else params
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, as_valid_action(action), params)
        info = info_dict(info)
        info["final_observation"] = info.pop("final_obs")
        info.update(
            terminated=terminated, truncated=truncated, discount=jnp.where(terminated, 0.0, 1.0).astype(jnp.float32)
        )
        return obs, state, reward, terminated, truncated, info


def make(*args, **kwargs):
    """`(GymnaxEnv, params)` from an id (or fields), as `normjax.make` builds the env
    (`normjax.make(..., return_params=True)` returns this)."""
    env = GymnaxEnv(_make_env(*args, **kwargs))
    return env, env.default_params


__all__ = ["GymnaxEnv", "make"]
