"""What the host-side adapters (Gymnasium, PettingZoo) share: masks, pickling, fork safety.

* Action masks are int8 (0 / 1), the dtype Gymnasium's `Discrete.sample(mask=...)`
  and PettingZoo's tests expect; they are the observation's last five entries.
* Pickling: an adapter keeps jitted functions (not picklable) and device arrays;
  `PicklableJit` drops the functions and moves the arrays to NumPy, and rebuilds
  the functions on unpickle (from the per-process cache, so nothing recompiles
  that this process already compiled).
* `resolve_env`: the constructors' shared argument handling (render modes: `normjax.wrappers.human`).
* `resolve_params`: default params with an optional horizon (`max_episode_steps`,
  PettingZoo's `max_cycles`).
* Fork safety: JAX's runtime does not survive `fork()` (its thread pools are gone
  in the child, and the first computation there can hang).  A process forked from
  one whose JAX backend had started (Gymnasium's `AsyncVectorEnv` with the Linux
  default context "fork": `import normjax` already starts the backend) refuses to
  build an environment with a clear error instead of hanging; the Gymnasium adapter
  also raises that error in the parent, before `AsyncVectorEnv` starts a worker
  (`normjax.wrappers.gymnasium.refuse_async_fork`).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.registration import make

ASYNC_HINT = (
    'gymnasium.make_vec(id, num_envs, vectorization_mode="async", '
    'vector_kwargs={"context": "forkserver"})  (or "spawn")'
)

RENDER_FPS = 4

_FORKED_AFTER_JAX = [False]


def _jax_started() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # private API moved: assume the worst
        return True


def _note_fork() -> None:
    _FORKED_AFTER_JAX[0] = _FORKED_AFTER_JAX[0] or _jax_started()


os.register_at_fork(after_in_child=_note_fork)


def refuse_forked_jax(what: str) -> None:
    """Raise RuntimeError in a process forked after JAX started (before any JAX call)."""
    if _FORKED_AFTER_JAX[0]:
        raise RuntimeError(
            f"{what} cannot run in a process forked after JAX started (pid {os.getpid()}): "
            f"JAX does not survive fork() and would hang.  Start worker processes with the "
            f"'forkserver' or 'spawn' multiprocessing context, e.g. {ASYNC_HINT}"
        )


def action_mask(obs: np.ndarray) -> np.ndarray:
    """int8 [..., 5]: the physical action mask carried by a flat observation."""
    return (np.asarray(obs)[..., -C.N_ACTIONS :] > 0.5).astype(np.int8)


def resolve_env(env_id, env, overrides):
    """The `NormGymEnv` of an id and overrides, or `env` itself."""
    if env is None:
        return make(env_id, **overrides) if env_id is not None else make(**overrides)
    if env_id is not None or overrides:
        raise TypeError("pass either env=NormGymEnv(...) or an id / overrides, not both")
    return env


def resolve_params(env, params, max_episode_steps):
    """The env's default params (or `params`), with the horizon `max_episode_steps` if given."""
    params = env.default_params if params is None else params
    if max_episode_steps is None:
        return params
    n = int(max_episode_steps)
    if n < 1:
        raise ValueError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
    return params.replace(max_steps=jnp.full(np.shape(params.max_steps), n, jnp.int32))


class PicklableJit:
    """Mixin: pickle without the jitted functions named in `_JITTED`; rebuild them after."""

    _JITTED: tuple[str, ...] = ()

    def _build_jitted(self) -> None:  # sets every attribute of _JITTED
        raise NotImplementedError

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in self._JITTED}
        # Device arrays (keys, params, states) travel as NumPy arrays.
        return jax.tree.map(lambda x: np.asarray(x) if isinstance(x, jax.Array) else x, state)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._build_jitted()


__all__ = [
    "ASYNC_HINT",
    "PicklableJit",
    "RENDER_FPS",
    "action_mask",
    "refuse_forked_jax",
    "resolve_env",
    "resolve_params",
]
