"""Gymnasium adapters: one environment, and a vector of them in one compiled step.

`NormGymGymnasiumEnv` is a `gymnasium.Env` over `NormGymEnv` (the newcomer, slot 0,
is the agent; the scripted community acts inside the step).  `NormGymVectorEnv`
(`normjax.wrappers.gymnasium_vector`) is a `gymnasium.vector.VectorEnv` whose `step`
is ONE jitted, vmapped program.  Importing this module registers every id of
`normjax.registered_envs` with Gymnasium (`gymnasium.make("NormGym-cafe-none-train-v0")`,
`gymnasium.make_vec(..., num_envs=8)`), with `max_episode_steps` the phase's horizon
(200, or 100 for test); registration stores strings only, and nothing is compiled
before an environment is first reset.

Spaces: observations are the flat DQN vector of docs/world.md §10, a float32 `Box`
(553|569|585,) whose per-entry bounds are the true ones (`normjax.wrappers.bounds`:
[0, 1] for most entries, [-1, 1] for cell offsets, [-2, 2] for the newcomer's last
move, which is 2 after a push).  Actions are `Discrete(5)` (UP, DOWN, LEFT, RIGHT,
WAIT), checked by `normjax.wrappers.actions.check_action`; the physical action mask
is the observation's last five entries and is also given as `info["action_mask"]`
(int8, for `action_space.sample(mask=...)`).  Step info: "action_mask", "t" (the
world's step) and the newcomer's "sanctioned", "collided", "goals_completed",
"exited"; on the step that ends an episode also "normjax_episode", the newcomer's
statistics over it ("r" return, "l" length, "sanctions", "goals", "collisions", as
the vector env and `normjax.wrappers.LogWrapper` count them).

Episode length: `max_episode_steps=n` (a constructor keyword, and what
`gymnasium.make_vec(id, max_episode_steps=n)` passes) sets the world's horizon
`params.max_steps`, so truncation and the observation's budget entry agree.
`gymnasium.make(id, max_episode_steps=n)` instead adds Gymnasium's `TimeLimit(n)`
around the registered horizon (Gymnasium does not pass it to the environment).

Key scheme (what makes runs reproducible, and equal to the pure JAX environment):
each environment owns a chain key c.  `reset(seed=s)` sets c = seed_key(s)
(`normjax.wrappers.seed_key`: PRNGKey(s) for s < 2**32) for one environment, and
c_i = split(seed_key(s), num_envs)[i] in the vector (a list of seeds sets
c_i = seed_key(s_i)); `reset()` without a seed continues the chain (the first
time, c comes from `self.np_random`).  Every reset and every step first splits
(c, k) = split(c) and calls `NormGymEnv.reset(k, params)` or
`NormGymEnv.step(k, state, action, params)`.

Pickling rebuilds the jitted functions on unpickle; environments refuse to be
built in a process forked after JAX started (`normjax.wrappers.hostside`), and
Gymnasium's `AsyncVectorEnv` with the 'fork' context fails in the parent, before it
starts a worker (`refuse_async_fork`).
"""

from __future__ import annotations

import functools
import multiprocessing
import sys

import jax
import jax.numpy as jnp
import numpy as np

from normjax.wrappers._optional import require

gymnasium = require("gymnasium", "gym", "normjax.wrappers.gymnasium")

from gymnasium import spaces  # noqa: E402 (after the check that names the missing extra)

from normjax import constants as C  # noqa: E402 (after the check that names the missing extra)
from normjax.env.environment import NormGymEnv  # noqa: E402 (after the check that names the missing extra)
from normjax.registration import parse_env_id, registered_envs  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.actions import check_action  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.bounds import observation_box  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.core import seed_key  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.hostside import (  # noqa: E402 (after the check that names the missing extra)
    ASYNC_HINT,
    RENDER_FPS,
    PicklableJit,
    action_mask,
    refuse_forked_jax,
    resolve_env,
    resolve_params,
)
from normjax.wrappers.human import SINGLE_ENV_RENDER_MODES, RenderedEnv, check_render_mode  # noqa: E402 (after the check that names the missing extra)

# Horizon of each phase (docs/world.md §9.1), as `phase_params` sets `max_steps`.
HORIZON = {"interaction": C.INTERACTION_STEPS, "train": C.INTERACTION_STEPS, "test": C.TEST_STEPS}


def refuse_async_fork(what: str) -> None:
    """In the parent, before Gymnasium's `AsyncVectorEnv` starts its workers: refuse the
    'fork' context with the clear error (a forked worker stops with it, and the caller
    would see only a broken pipe).  `AsyncVectorEnv.__init__` stores its `context`, then
    builds one env in the parent for the spaces; that call finds it on the stack."""
    frame = sys._getframe(1)
    for _ in range(32):  # make_vec -> AsyncVectorEnv.__init__ -> gymnasium.make -> wrappers -> here
        if frame is None:
            return
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "__init__" else None
        if isinstance(owner, gymnasium.vector.AsyncVectorEnv):
            context = getattr(owner, "context", None)
            if multiprocessing.get_context(context).get_start_method() == "fork":
                raise RuntimeError(
                    f"{what} in Gymnasium's AsyncVectorEnv with the 'fork' multiprocessing context "
                    f"(context={context!r}): JAX does not survive fork(), so its workers would fail.  "
                    f"Start them with 'forkserver' or 'spawn', e.g. {ASYNC_HINT}, and keep a "
                    'script\'s work under `if __name__ == "__main__":` (those workers import it)'
                )
            return
        frame = frame.f_back


@functools.cache
def compiled_env(capacity: int):
    """`jax.jit` of `NormGymEnv.reset` and `.step` for capacity K (one per process).

    Layout, norm, phase and rewards are traced params, so every single environment
    of a capacity shares these two programs.
    """
    env = NormGymEnv(capacity=capacity)
    return jax.jit(env.reset), jax.jit(env.step)


class NormGymGymnasiumEnv(RenderedEnv, PicklableJit, gymnasium.Env):
    """One NormGym environment as a `gymnasium.Env` (the newcomer is the agent).

    Build from an id and overrides (`NormGymGymnasiumEnv("NormGym-cafe-none-test-v0",
    capacity=6)`), from keywords alone, or from `env=NormGymEnv(...)`; `params`
    replaces the env's default `WorldParams` (e.g. a shorter horizon), and
    `reset(options={"params": ...})` replaces them from that episode on.
    """

    not_reset_error = gymnasium.error.ResetNeeded
    metadata = {"render_modes": list(SINGLE_ENV_RENDER_MODES), "render_fps": RENDER_FPS}
    _JITTED = ("_reset_fn", "_step_fn")

    def __init__(
        self,
        env_id: str | None = None,
        *,
        env: NormGymEnv | None = None,
        params=None,
        render_mode: str | None = None,
        cell_px: int = 32,
        max_episode_steps: int | None = None,
        **overrides,
    ):
        refuse_forked_jax(type(self).__name__)
        refuse_async_fork(type(self).__name__)
        self.env = resolve_env(env_id, env, overrides)
        self.params = resolve_params(self.env, params, max_episode_steps)
        self.render_mode = check_render_mode(render_mode, SINGLE_ENV_RENDER_MODES)
        self.cell_px = int(cell_px)
        self.observation_space = observation_box(self.env.capacity)
        self.action_space = spaces.Discrete(C.N_ACTIONS)
        self._build_jitted()
        self._chain = None
        self._state = None
        self._done = True
        self._episode = _no_episode()

    def _build_jitted(self):
        self._reset_fn, self._step_fn = compiled_env(self.env.capacity)

    @property
    def state(self):
        """The current `WorldState` (None before the first reset)."""
        return self._state

    def _next_key(self):
        self._chain, key = jax.random.split(self._chain)
        return key

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        if "params" in options:
            self.params = options.pop("params")
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; valid: params")
        if seed is not None:
            self._chain = seed_key(seed)
        elif self._chain is None:
            self._chain = seed_key(self.np_random.integers(2**32))
        obs, self._state = self._reset_fn(self._next_key(), self.params)
        self._done = False
        self._episode = _no_episode()
        obs = np.array(obs)
        return obs, {"action_mask": action_mask(obs), "t": 0}

    def step(self, action):
        if self._done:
            raise gymnasium.error.ResetNeeded("the episode has ended (or was never started); call reset() first")
        action = check_action(action)
        obs, self._state, reward, term, trunc, info = self._step_fn(
            self._next_key(), self._state, jnp.int32(action), self.params
        )
        # One transfer of what the caller gets; the state stays on the device.
        obs, reward, term, trunc, info, t = jax.device_get((obs, reward, term, trunc, info, self._state.t))
        obs = np.array(obs)
        term, trunc = bool(term), bool(trunc)
        self._done = term or trunc
        info = {
            "action_mask": action_mask(obs),
            "t": int(t),
            "sanctioned": bool(info.sanctioned[0]),
            "collided": bool(info.collided[0]),
            "goals_completed": int(info.goals_completed[0]),
            "exited": bool(info.exited[0]),
        }
        ep = self._episode  # counted as normjax.wrappers.LogWrapper does (float32 return, int32 counts)
        ep["r"] = np.float32(ep["r"] + np.float32(reward))
        ep["l"] += np.int32(1)
        ep["sanctions"] += np.int32(info["sanctioned"])
        ep["goals"] += np.int32(info["goals_completed"])
        ep["collisions"] += np.int32(info["collided"])
        if self._done:
            info["normjax_episode"] = dict(ep)
        return obs, float(reward), term, trunc, info


def _no_episode() -> dict:
    z = np.int32(0)
    return {"r": np.float32(0), "l": z, "sanctions": z, "goals": z, "collisions": z}


_ENTRY_POINT = f"{__name__}:NormGymGymnasiumEnv"
_VECTOR_ENTRY_POINT = f"{__name__}:NormGymVectorEnv"


def register_envs() -> None:
    """Register every normjax id with Gymnasium (idempotent; strings only)."""
    registry = gymnasium.envs.registration.registry
    for name in registered_envs:
        if name not in registry:
            gymnasium.register(
                id=name,
                entry_point=_ENTRY_POINT,
                vector_entry_point=_VECTOR_ENTRY_POINT,
                kwargs={"env_id": name},
                max_episode_steps=HORIZON[parse_env_id(name)["phase"]],
            )


register_envs()

from normjax.wrappers.gymnasium_vector import NormGymVectorEnv, compiled_vector  # noqa: E402 (gymnasium_vector imports the names defined above)

__all__ = [
    "HORIZON",
    "NormGymGymnasiumEnv",
    "NormGymVectorEnv",
    "compiled_env",
    "compiled_vector",
    "refuse_async_fork",
    "register_envs",
]
