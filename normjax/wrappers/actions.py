"""One action check for every host-side adapter (Gymnasium, its vector env, PettingZoo).

Accepted: a Python int, a NumPy or JAX integer scalar, or a 0-d integer array
(NumPy or JAX), with a value in 0..4 (UP, DOWN, LEFT, RIGHT, WAIT).  Anything else
(floats, bools, strings, arrays with more dimensions) is a TypeError, a value out
of range a ValueError; both name the value and the allowed range.  The check runs
on the host, before anything is traced or dispatched.

Inside `jax.jit` (the pure JAX `NormGymEnv.step` and its wrappers) actions are
traced and cannot be checked: an out-of-range action has no defined meaning
there.  `normjax.wrappers.gymnax.GymnaxEnv` maps it to WAIT (`as_valid_action`);
callers of the bare env should pass actions in 0..4 (the physical mask is the
observation's last five entries).
"""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np

from normjax import constants as C

ALLOWED = f"an integer in 0..{C.N_ACTIONS - 1} (UP, DOWN, LEFT, RIGHT, WAIT)"


def _is_integer_dtype(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.integer)


def check_action(action, *, what: str = "action") -> int:
    """The action as a Python int, or a clear TypeError / ValueError."""
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"{what} must be {ALLOWED}, got the bool {action!r}")
    if isinstance(action, numbers.Integral):
        value = int(action)
    elif hasattr(action, "dtype") and hasattr(action, "shape"):  # numpy / jax arrays and scalars
        if np.shape(action) != () or not _is_integer_dtype(action.dtype):
            raise TypeError(
                f"{what} must be {ALLOWED} (or a 0-d integer array), got {action!r} "
                f"of dtype {action.dtype} and shape {np.shape(action)}"
            )
        value = int(action)
    else:
        raise TypeError(f"{what} must be {ALLOWED}, got {action!r} of type {type(action).__name__}")
    if not 0 <= value < C.N_ACTIONS:
        raise ValueError(f"{what} must be {ALLOWED}, got {value}")
    return value


def check_actions(actions, num_envs: int) -> np.ndarray:
    """A batch of `num_envs` actions as int32 [num_envs], or a clear error.

    Accepts a sequence of valid single actions or an integer array of shape
    (num_envs,) (NumPy or JAX).
    """
    if hasattr(actions, "dtype") and hasattr(actions, "shape"):
        if tuple(np.shape(actions)) != (num_envs,) or not _is_integer_dtype(actions.dtype):
            raise TypeError(
                f"actions must be {num_envs} values, each {ALLOWED}: an integer array of "
                f"shape ({num_envs},), got dtype {actions.dtype} and shape {np.shape(actions)}"
            )
        values = np.asarray(actions)
        bad = np.flatnonzero((values < 0) | (values >= C.N_ACTIONS))
        if bad.size:
            raise ValueError(f"actions must each be {ALLOWED}; got {values[bad[0]]} at index {bad[0]}")
        return values.astype(np.int32)
    if not isinstance(actions, (list, tuple)) or len(actions) != num_envs:
        raise TypeError(f"actions must be {num_envs} values, each {ALLOWED}, got {actions!r}")
    return np.array([check_action(a, what=f"actions[{i}]") for i, a in enumerate(actions)], np.int32)


def as_valid_action(action):
    """Inside jit: the action as int32, WAIT where it is outside 0..4.

    Its dtype must be an integer one (checked while tracing: the dtype is static).
    """
    action = jnp.asarray(action)
    if not _is_integer_dtype(action.dtype):
        raise TypeError(f"action must have an integer dtype ({ALLOWED}), got dtype {action.dtype}")
    ok = (action >= 0) & (action < C.N_ACTIONS)
    return jnp.where(ok, action, C.WAIT).astype(jnp.int32)


__all__ = ["ALLOWED", "as_valid_action", "check_action", "check_actions"]
