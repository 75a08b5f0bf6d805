"""Gymnasium adapters: one environment, and a vector of them in one compiled step.

`NormGymGymnasiumEnv` is a `gymnasium.Env` over `NormGymEnv` (the newcomer, slot 0,
is the agent; the scripted community acts inside the step).  `NormGymVectorEnv` is a
`gymnasium.vector.VectorEnv` whose `step` is ONE jitted, vmapped program
(`LogWrapper(AutoResetWrapper(env))`), so a batch costs one dispatch, not N.
Importing this module registers every id of `normjax.registered_envs` with
Gymnasium (`gymnasium.make("NormGym-cafe-none-train-v0")`,
`gymnasium.make_vec(..., num_envs=8)`); registration stores strings only, and
nothing is compiled before an environment is first reset.

Spaces: observations are the flat DQN vector of docs/world.md §10, a
`Box(-1, 1, (553|569|585,), float32)`: planes, distances, timers, flags and the
budget lie in [0, 1]; offsets are cell differences divided by 11 or 15 (at most
10/11 and 14/15 in size) and the last move is a cell step (-1, 0 or 1).  Actions
are `Discrete(5)` (UP, DOWN, LEFT, RIGHT, WAIT); the physical action mask is the
observation's last five entries and is also given as `info["action_mask"]`.

Key scheme (what makes runs reproducible, and equal to the pure JAX environment):
each environment owns a chain key c.  `reset(seed=s)` sets c = seed_key(s)
(`normjax.wrappers.seed_key`: PRNGKey(s) for s < 2**32) for one environment, and
c_i = split(seed_key(s), num_envs)[i] in the vector (a list of seeds sets
c_i = seed_key(s_i)); `reset()` without a seed continues the chain (the first
time, c comes from `self.np_random`).  Every reset and every step first splits
(c, k) = split(c) and calls `NormGymEnv.reset(k, params)` or
`NormGymEnv.step(k, state, action, params)`.  The vector environment starts a new
episode inside the step that ends one, from `NormGymEnv.reset(reset_key(k))`
(`normjax.wrappers.reset_key`).

Vector auto-reset is Gymnasium's SAME_STEP mode (`metadata["autoreset_mode"]`): the
step that ends an episode returns its reward and flags with the NEW episode's first
observation; `info["final_obs"]` holds the observations the episodes ended on
(rows valid where `info["_final_obs"]`), and `info["episode"]` their statistics
("r" return, "l" length, "sanctions", "goals", "collisions" of the newcomer; rows
valid where `info["_episode"]`, as `RecordEpisodeStatistics` reports them).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax.wrappers._optional import require

gymnasium = require("gymnasium", "gym", "normjax.wrappers.gymnasium")

from gymnasium import spaces  # noqa: E402
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402

from normjax import constants as C  # noqa: E402
from normjax.env.environment import NormGymEnv  # noqa: E402
from normjax.interop.render import render_frame_jit  # noqa: E402
from normjax.registration import make, registered_envs  # noqa: E402
from normjax.wrappers.core import AutoResetWrapper, seed_key, step_info, world_state  # noqa: E402
from normjax.wrappers.stats import LogWrapper  # noqa: E402

RENDER_FPS = 4


@functools.lru_cache(maxsize=None)
def compiled_env(capacity: int):
    """`jax.jit` of `NormGymEnv.reset` and `.step` for capacity K (one per process).

    Layout, norm, phase and rewards are traced params, so every single environment
    of a capacity shares these two programs.
    """
    env = NormGymEnv(capacity=capacity)
    return jax.jit(env.reset), jax.jit(env.step)


def _split_chains(chains):
    pairs = jax.vmap(jax.random.split)(chains)
    return pairs[:, 0], pairs[:, 1]


@functools.lru_cache(maxsize=None)
def compiled_vector(capacity: int, batched_params: bool):
    """The vector environment's reset and step: each one jitted, vmapped program."""
    stack = LogWrapper(AutoResetWrapper(NormGymEnv(capacity=capacity)))
    p_axis = 0 if batched_params else None

    def reset(chains, params):
        chains, keys = _split_chains(chains)
        obs, state = jax.vmap(stack.reset, in_axes=(0, p_axis))(keys, params)
        return chains, obs, state

    def step(chains, state, actions, params):
        chains, keys = _split_chains(chains)
        obs, state, reward, term, trunc, info = jax.vmap(stack.step, in_axes=(0, 0, 0, p_axis))(
            keys, state, actions, params)
        si = step_info(info)
        small = {
            "sanctioned": si.sanctioned[:, 0], "collided": si.collided[:, 0],
            "goals_completed": si.goals_completed[:, 0], "exited": si.exited[:, 0],
            "final_obs": info["final_obs"], "returned_episode": info["returned_episode"],
            "episode": {name: info[f"returned_episode_{stat}"] for name, stat in _EPISODE_KEYS},
        }
        return chains, obs, state, reward, term, trunc, small

    return jax.jit(reset), jax.jit(step)


_EPISODE_KEYS = (("r", "return"), ("l", "length"), ("sanctions", "sanctions"),
                 ("goals", "goals"), ("collisions", "collisions"))


def _resolve_env(env_id, env, overrides) -> NormGymEnv:
    if env is None:
        return make(env_id, **overrides) if env_id is not None else make(**overrides)
    if env_id is not None or overrides:
        raise TypeError("pass either env=NormGymEnv(...) or an id / overrides, not both")
    return env


def _observation_space(env: NormGymEnv) -> spaces.Box:
    return spaces.Box(-1.0, 1.0, (env.obs_size,), np.float32)


def _check_render_mode(render_mode):
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
    return render_mode


def _action_mask(obs: np.ndarray) -> np.ndarray:
    return obs[..., -C.N_ACTIONS:] > 0.5


class NormGymGymnasiumEnv(gymnasium.Env):
    """One NormGym environment as a `gymnasium.Env` (the newcomer is the agent).

    Build from an id and overrides (`NormGymGymnasiumEnv("NormGym-cafe-none-test-v0",
    capacity=6)`), from keywords alone, or from `env=NormGymEnv(...)`; `params`
    replaces the env's default `WorldParams` (e.g. a shorter horizon), and
    `reset(options={"params": ...})` replaces them from that episode on.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}

    def __init__(self, env_id: str | None = None, *, env: NormGymEnv | None = None,
                 params=None, render_mode: str | None = None, cell_px: int = 32, **overrides):
        self.env = _resolve_env(env_id, env, overrides)
        self.params = self.env.default_params if params is None else params
        self.render_mode = _check_render_mode(render_mode)
        self.cell_px = int(cell_px)
        self.observation_space = _observation_space(self.env)
        self.action_space = spaces.Discrete(C.N_ACTIONS)
        self._reset_fn, self._step_fn = compiled_env(self.env.capacity)
        self._chain = None
        self._state = None
        self._done = True

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
        obs = np.array(obs)
        return obs, {"action_mask": _action_mask(obs), "t": 0}

    def step(self, action):
        if self._done:
            raise gymnasium.error.ResetNeeded(
                "the episode has ended (or was never started); call reset() first")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an int in 0..{C.N_ACTIONS - 1}, got {action!r}")
        obs, self._state, reward, term, trunc, info = self._step_fn(
            self._next_key(), self._state, jnp.int32(action), self.params)
        # One transfer of what the caller gets; the state stays on the device.
        obs, reward, term, trunc, info, t = jax.device_get(
            (obs, reward, term, trunc, info, self._state.t))
        obs = np.array(obs)
        term, trunc = bool(term), bool(trunc)
        self._done = term or trunc
        info = {
            "action_mask": _action_mask(obs), "t": int(t),
            "sanctioned": bool(info.sanctioned[0]), "collided": bool(info.collided[0]),
            "goals_completed": int(info.goals_completed[0]), "exited": bool(info.exited[0]),
        }
        return obs, float(reward), term, trunc, info

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if self._state is None:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        return np.asarray(render_frame_jit(self._state, self.params, cell_px=self.cell_px))


class NormGymVectorEnv(VectorEnv):
    """`num_envs` NormGym environments stepped by one jitted, vmapped program.

    Same constructor as `NormGymGymnasiumEnv` plus `num_envs`; `params` may be one
    `WorldParams` for all environments or a batch with leading axis `num_envs`
    (mixing layouts, norms and phases).  Auto-reset: SAME_STEP, see the module
    docstring; so are the key scheme and the info layout.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS,
                "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, env_id: str | None = None, num_envs: int = 8, *,
                 env: NormGymEnv | None = None, params=None, render_mode: str | None = None,
                 cell_px: int = 32, **overrides):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.env = _resolve_env(env_id, env, overrides)
        self.num_envs = int(num_envs)
        self.params = self.env.default_params if params is None else params
        batched = np.ndim(self.params.layout_id) == 1
        if batched and np.shape(self.params.layout_id)[0] != self.num_envs:
            raise ValueError(f"batched params have {np.shape(self.params.layout_id)[0]} rows, "
                             f"num_envs is {self.num_envs}")
        self._batched_params = batched
        self.render_mode = _check_render_mode(render_mode)
        self.cell_px = int(cell_px)
        self.single_observation_space = _observation_space(self.env)
        self.single_action_space = spaces.Discrete(C.N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._reset_fn, self._step_fn = compiled_vector(self.env.capacity, batched)
        self._chains = None
        self._state = None

    @property
    def state(self):
        """The batched `WorldState` (leading axis num_envs; None before reset)."""
        return None if self._state is None else world_state(self._state)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        super().reset(seed=None if seed is None or isinstance(seed, int) else seed[0])
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; this vector env takes none")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} environments")
            self._chains = jnp.stack([seed_key(s) for s in seed])
        elif seed is not None:
            self._chains = jax.random.split(seed_key(seed), self.num_envs)
        elif self._chains is None:
            self._chains = jax.random.split(seed_key(self.np_random.integers(2**32)), self.num_envs)
        self._chains, obs, self._state = self._reset_fn(self._chains, self.params)
        obs = np.array(obs)
        return obs, {"action_mask": _action_mask(obs), "_action_mask": np.ones(self.num_envs, bool)}

    def step(self, actions):
        if self._state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not self.action_space.contains(actions.astype(np.int64)):
            raise ValueError(f"actions must be {self.num_envs} ints in 0..{C.N_ACTIONS - 1}, "
                             f"got {actions!r}")
        self._chains, obs, self._state, reward, term, trunc, info = self._step_fn(
            self._chains, self._state, jnp.asarray(actions, jnp.int32), self.params)
        obs, reward, term, trunc, info = jax.device_get((obs, reward, term, trunc, info))
        obs = np.array(obs)
        done = np.array(info.pop("returned_episode"))
        every = np.ones(self.num_envs, bool)
        infos = {key: np.array(value) for key, value in info.items() if key != "episode"}
        infos.update({f"_{key}": every for key in list(infos) if key != "final_obs"})
        infos["action_mask"], infos["_action_mask"] = _action_mask(obs), every
        infos["_final_obs"] = done.copy()
        infos["episode"] = {key: np.array(v) for key, v in info["episode"].items()}
        infos["_episode"] = done
        return obs, np.array(reward), np.array(term), np.array(trunc), infos

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if self._state is None:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        states = world_state(self._state)
        frames = []
        for i in range(self.num_envs):
            pick = functools.partial(lambda x, i: x[i], i=i)
            params = jax.tree.map(pick, self.params) if self._batched_params else self.params
            frames.append(np.asarray(render_frame_jit(jax.tree.map(pick, states), params,
                                                      cell_px=self.cell_px)))
        return tuple(frames)


_ENTRY_POINT = f"{__name__}:NormGymGymnasiumEnv"
_VECTOR_ENTRY_POINT = f"{__name__}:NormGymVectorEnv"


def register_envs() -> None:
    """Register every normjax id with Gymnasium (idempotent; strings only)."""
    registry = gymnasium.envs.registration.registry
    for name in registered_envs:
        if name not in registry:
            gymnasium.register(id=name, entry_point=_ENTRY_POINT,
                               vector_entry_point=_VECTOR_ENTRY_POINT, kwargs={"env_id": name})


register_envs()

__all__ = ["NormGymGymnasiumEnv", "NormGymVectorEnv", "compiled_env", "compiled_vector",
           "register_envs"]
