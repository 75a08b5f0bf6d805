"""`NormGymVectorEnv`: `num_envs` NormGym environments stepped by one jitted, vmapped program.

Auto-reset modes (Gymnasium's `AutoresetMode`, the constructor's `autoreset_mode`):

* NEXT_STEP (default, as Gymnasium's own vector envs): the step that ends an
  episode returns its last observation, reward and flags; the next `step` call
  starts a new episode in that environment (its action is ignored) and returns
  the first observation with reward 0 and both flags False.
* SAME_STEP: the step that ends an episode returns its reward and flags with the
  NEW episode's first observation.  As `SyncVectorEnv` over the single env, only a
  step on which some episode ended has `info["final_obs"]` (an object array: the
  observation the episode ended on, None in the other rows) and `info["final_info"]`
  (that step's info, episode statistics included), each with its mask
  ("_final_obs", "_final_info"); the top-level keys of an ended row are those of the
  new episode's reset.  The new episode starts from `NormGymEnv.reset(reset_key(k))`
  (`normjax.wrappers.reset_key`).
* DISABLED: nothing restarts by itself; `reset(options={"reset_mask": mask})`
  restarts the environments where `mask` holds (the others keep their state and
  observation), and stepping an environment whose episode ended is an error.

Keys as in `normjax.wrappers.gymnasium`: every call that advances an environment
splits (c, k) = split(c) and runs `NormGymEnv.reset(k)` or `.step(k, ...)`; a
NEXT_STEP restart is a reset with that step call's k.

Info: Gymnasium's vector layout, key for key and array for array what
`SyncVectorEnv` builds from the single env's infos (tests/wrappers/test_gymnasium.py
compares them): a key is present only if some row has it, with its "_<key>" mask and
zeros in the other rows.  Per environment "action_mask" (int8) and "t" (the world's
step), "sanctioned", "collided", "goals_completed", "exited" (the newcomer's, slot 0)
where a step ran, and on the step that ends an episode the newcomer's statistics
under "normjax_episode" ("r" return, "l" length, "sanctions", "goals", "collisions",
each with its mask), so Gymnasium's `RecordEpisodeStatistics` (which owns "episode")
can wrap this env.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import error, logger
from gymnasium.spaces import Discrete
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from normjax import constants as C
from normjax.env.environment import NormGymEnv
from normjax.ground.rare import run_where
from normjax.interop.render import render_frame_jit
from normjax.wrappers.actions import check_actions
from normjax.wrappers.bounds import observation_box
from normjax.wrappers.core import reset_key, seed_key, step_info, world_state
from normjax.wrappers.hostside import (
    RENDER_FPS,
    PicklableJit,
    action_mask,
    refuse_forked_jax,
    resolve_env,
    resolve_params,
)
from normjax.wrappers.human import check_render_mode
from normjax.wrappers.stats import LogWrapper

EPISODE_KEY = "normjax_episode"
_EPISODE_KEYS = (
    ("r", "return"),
    ("l", "length"),
    ("sanctions", "sanctions"),
    ("goals", "goals"),
    ("collisions", "collisions"),
)
_STEP_KEYS = ("sanctioned", "collided", "goals_completed", "exited")


def _rows(mask, a, b):
    """`a` where `mask` [N] else `b`, leaf by leaf (rows on axis 0)."""
    return jax.tree.map(lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y), a, b)


def _add_info(infos: dict, key: str, values, rows: np.ndarray) -> None:
    """Gymnasium's vector info layout (`VectorEnv._add_info`): `key` only if some row has
    it, its values in those rows and zeros elsewhere, and the mask `_key`; a dict of
    values nests, each of its keys with a mask of its own."""
    if not rows.any():
        return
    if isinstance(values, dict):
        infos[key] = {}
        for name, v in values.items():
            _add_info(infos[key], name, v, rows)
    else:
        values = np.asarray(values)
        infos[key] = np.where(rows.reshape(rows.shape + (1,) * (values.ndim - 1)), values, np.zeros((), values.dtype))
    infos[f"_{key}"] = rows.copy()


def _autoreset_mode(mode) -> AutoresetMode:
    """An `AutoresetMode`, its value ("NextStep") or name in any case ("next_step", "same-step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    norm = str(mode).lower().replace("_", "").replace("-", "")
    for m in AutoresetMode:
        if norm in (m.value.lower(), m.name.lower().replace("_", "")):
            return m
    raise ValueError(
        f"autoreset_mode must be one of {[m.value for m in AutoresetMode]} "
        f"(or their names, e.g. 'next_step'), got {mode!r}"
    )


def _no_info():
    f, i, b = jnp.float32(0), jnp.int32(0), jnp.bool_(False)
    return {
        "sanctioned": b,
        "collided": b,
        "goals_completed": i,
        "exited": b,
        "returned_episode": b,
        "episode": {"r": f, "l": i, "sanctions": i, "goals": i, "collisions": i},
    }


@functools.cache
def compiled_vector(capacity: int, batched_params: bool):
    """The vector environment's reset and advance: each one jitted, vmapped program.

    `advance(chains, state, actions, params, restart, hold, same_step)` per row:
    a fresh episode where `restart` (NEXT_STEP restarts, DISABLED masked resets),
    else a step, auto-reset inside the step when `same_step` (SAME_STEP); rows in
    `hold` keep their chain and state.  One program serves all three modes.
    """
    env = NormGymEnv(capacity=capacity)
    stack = LogWrapper(env)
    p_axis = 0 if batched_params else None

    def split(chains):
        pairs = jax.vmap(jax.random.split)(chains)
        return pairs[:, 0], pairs[:, 1]

    def reset(chains, params):
        chains, keys = split(chains)
        obs, state = jax.vmap(stack.reset, in_axes=(0, p_axis))(keys, params)
        return chains, obs, state

    def fresh(key, state, action, params):
        obs, state = stack.reset(key, params)
        return obs, state, jnp.float32(0), jnp.bool_(False), jnp.bool_(False), _no_info()

    def stepped(key, state, action, params):
        obs, state, reward, term, trunc, info = stack.step(key, state, action, params)
        si = step_info(info)
        small = {k: getattr(si, k)[0] for k in _STEP_KEYS}
        small["returned_episode"] = info["returned_episode"]
        small["episode"] = {name: info[f"returned_episode_{stat}"] for name, stat in _EPISODE_KEYS}
        return obs, state, reward, term, trunc, small

    def again(key, params, obs, state):
        obs, env_state = env.reset(reset_key(key), params)
        return obs, state.replace(env_state=env_state)

    def one(key, state, action, params, restart, same_step):
        obs, state, reward, term, trunc, info = run_where(restart, fresh, stepped, key, state, action, params)
        info["final_obs"], info["t"] = obs, world_state(state).t
        obs, state = run_where((term | trunc) & same_step, again, lambda k, p, o, s: (o, s), key, params, obs, state)
        return obs, state, reward, term, trunc, info

    def advance(chains, state, actions, params, restart, hold, same_step):
        new_chains, keys = split(chains)
        obs, new_state, reward, term, trunc, info = jax.vmap(one, in_axes=(0, 0, 0, p_axis, 0, None))(
            keys, state, actions, params, restart, same_step
        )
        return (_rows(hold, chains, new_chains), obs, _rows(hold, state, new_state), reward, term, trunc, info)

    return jax.jit(reset), jax.jit(advance)


class NormGymVectorEnv(PicklableJit, VectorEnv):
    """`num_envs` NormGym environments stepped by one jitted, vmapped program.

    Same constructor as `NormGymGymnasiumEnv` plus `num_envs` and `autoreset_mode`
    (NEXT_STEP by default; see the module doc); `params` may be one `WorldParams`
    for all environments or a batch with leading axis `num_envs` (mixing layouts,
    norms and phases).  Every `num_envs` compiles its own program (tens of seconds
    on a 2-core CPU), shared by every env of that size, capacity and params kind.
    """

    _JITTED = ("_reset_fn", "_advance_fn")
    _spec = None

    @property
    def spec(self):
        """The registry's spec, with `max_episode_steps` the horizon this env runs: gymnasium's
        `make_vec(id, max_episode_steps=n)` passes n to the constructor, then sets the
        registered spec (its 200) on the env; here it reads n."""
        return self._spec

    @spec.setter
    def spec(self, value):
        n = getattr(self, "_max_episode_steps", None)
        if value is not None and n is not None and value.max_episode_steps != n:
            value = dataclasses.replace(value, max_episode_steps=n)
        self._spec = value

    def __init__(
        self,
        env_id: str | None = None,
        num_envs: int = 8,
        *,
        env: NormGymEnv | None = None,
        params=None,
        render_mode: str | None = None,
        cell_px: int = 32,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **overrides,
    ):
        refuse_forked_jax(type(self).__name__)
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        mode = _autoreset_mode(autoreset_mode)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS, "autoreset_mode": mode}
        self.env = resolve_env(env_id, env, overrides)
        self.num_envs = int(num_envs)
        self.params = resolve_params(self.env, params, max_episode_steps)
        self._max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        batched = np.ndim(self.params.layout_id) == 1
        if batched and np.shape(self.params.layout_id)[0] != self.num_envs:
            raise ValueError(
                f"batched params have {np.shape(self.params.layout_id)[0]} rows, num_envs is {self.num_envs}"
            )
        self._batched_params = batched
        self.render_mode = check_render_mode(render_mode)
        self.cell_px = int(cell_px)
        self.single_observation_space = observation_box(self.env.capacity)
        self.single_action_space = Discrete(C.N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._build_jitted()
        self._chains = None
        self._state = None
        self._obs = None
        self._ended = np.zeros(self.num_envs, bool)

    def _build_jitted(self):
        self._reset_fn, self._advance_fn = compiled_vector(self.env.capacity, self._batched_params)

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    @property
    def state(self):
        """The batched `WorldState` (leading axis num_envs; None before reset)."""
        return None if self._state is None else world_state(self._state)

    def _advance(self, actions, restart, hold):
        same = self.autoreset_mode == AutoresetMode.SAME_STEP
        out = self._advance_fn(
            self._chains,
            self._state,
            jnp.asarray(actions, jnp.int32),
            self.params,
            jnp.asarray(restart),
            jnp.asarray(hold),
            jnp.bool_(same),
        )
        self._chains, obs, self._state = out[:3]
        obs, reward, term, trunc, info = jax.device_get((obs, *out[3:]))
        return np.array(obs), np.array(reward), np.array(term), np.array(trunc), info

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        super().reset(seed=None if seed is None or isinstance(seed, int) else seed[0])
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; valid: reset_mask")
        if mask is not None:
            return self._reset_some(np.asarray(mask), seed)
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} environments")
            self._chains = jnp.stack([seed_key(s) for s in seed])
        elif seed is not None:
            self._chains = jax.random.split(seed_key(seed), self.num_envs)
        elif self._chains is None:
            self._chains = jax.random.split(seed_key(self.np_random.integers(2**32)), self.num_envs)
        self._chains, obs, self._state = self._reset_fn(self._chains, self.params)
        self._obs = np.array(obs)
        self._ended[:] = False
        return self._obs.copy(), self._reset_info(np.ones(self.num_envs, bool))

    def _reset_some(self, mask, seed):
        if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
            raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask!r}")
        if self._state is None or seed is not None:
            raise ValueError(
                "reset(options={'reset_mask': ...}) restarts some environments of a "
                "running vector env: call reset() (with any seed) first, without a mask"
            )
        obs, *_ = self._advance(np.full(self.num_envs, C.WAIT), mask, ~mask)
        self._obs[mask] = obs[mask]
        self._ended &= ~mask
        return self._obs.copy(), self._reset_info(mask)

    def _reset_info(self, rows):
        infos = {}
        _add_info(infos, "action_mask", action_mask(self._obs), rows)
        _add_info(infos, "t", np.zeros(self.num_envs, np.int64), rows)
        return infos

    def step(self, actions):
        if self._state is None:
            raise error.ResetNeeded("call reset() before step()")
        actions = check_actions(actions, self.num_envs)
        mode, none = self.autoreset_mode, np.zeros(self.num_envs, bool)
        if mode == AutoresetMode.DISABLED and self._ended.any():
            raise error.ResetNeeded(
                f"environments {np.flatnonzero(self._ended).tolist()} have ended; restart them with "
                "reset(options={'reset_mask': mask}) (autoreset_mode DISABLED)"
            )
        restart = self._ended.copy() if mode == AutoresetMode.NEXT_STEP else none
        obs, reward, term, trunc, info = self._advance(actions, restart, none)
        self._obs = obs
        self._ended = term | trunc
        # SAME_STEP: an ended row's step info moves to final_info, its top level is the reset's.
        moved = self._ended if mode == AutoresetMode.SAME_STEP else none
        t = np.asarray(info["t"], np.int64)  # int64 as SyncVectorEnv batches the single env's ints
        step_info = {key: np.asarray(info[key]) for key in _STEP_KEYS}
        step_info["goals_completed"] = step_info["goals_completed"].astype(np.int64)
        episode = {key: np.asarray(v) for key, v in info["episode"].items()}
        infos = {}
        _add_info(infos, "action_mask", action_mask(obs), ~none)
        _add_info(infos, "t", np.where(moved, 0, t), ~none)
        for key, values in step_info.items():
            _add_info(infos, key, values, ~restart & ~moved)
        if mode != AutoresetMode.SAME_STEP:
            _add_info(infos, EPISODE_KEY, episode, np.asarray(info["returned_episode"]))
        elif moved.any():
            final_obs, final = np.full(self.num_envs, None, dtype=object), {}
            for i in np.flatnonzero(moved):
                final_obs[i] = np.array(info["final_obs"][i])
            _add_info(final, "action_mask", action_mask(info["final_obs"]), moved)
            _add_info(final, "t", t, moved)
            for key, values in step_info.items():
                _add_info(final, key, values, moved)
            _add_info(final, EPISODE_KEY, episode, moved)
            infos.update(final_obs=final_obs, _final_obs=moved.copy(), final_info=final, _final_info=moved.copy())
        return obs.copy(), reward, term, trunc, infos

    def render(self):
        if self.render_mode is None:
            logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if self._state is None:
            raise error.ResetNeeded("call reset() before render()")
        states = world_state(self._state)
        frames = []
        for i in range(self.num_envs):
            pick = functools.partial(lambda x, i: x[i], i=i)
            params = jax.tree.map(pick, self.params) if self._batched_params else self.params
            frames.append(np.asarray(render_frame_jit(jax.tree.map(pick, states), params, cell_px=self.cell_px)))
        return tuple(frames)


__all__ = ["EPISODE_KEY", "NormGymVectorEnv", "compiled_vector"]
