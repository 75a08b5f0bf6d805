"""Observation formats: the flat DQN vector, or a dict of its named parts.

`NormGymEnv` returns the flat observation of docs/world.md §10 (`Observation.flat()`):
planes (3x11x15, row-major), the agent's 13-vector, K-1 other-agent slots of 8 and
the 5-entry physical action mask.  Networks that treat the map with convolutions
and the agents with attention want those parts apart; `DictObservation` cuts the
flat vector into

    planes       float32 [3, 11, 15]
    vector       float32 [13]          the agent itself (docs/world.md §10.2)
    others       float32 [K-1, 8]      nearest first (docs/world.md §10.3)
    action_mask  bool    [5]           physical mask, action order

by static slices (no recomputation, so it composes with `AutoResetWrapper`'s
"final_obs"), and `FlattenObservation` joins such a dict back in that order
(identity on an already flat observation).  Both accept leading batch axes.
"""

from __future__ import annotations

import jax.numpy as jnp

from normjax import constants as C
from normjax.world.observation import N_OTHER, N_VEC, obs_size
from normjax.wrappers.core import Wrapper, info_dict

OBS_KEYS = ("planes", "vector", "others", "action_mask")
_N_PLANES = 3 * C.H * C.W


def capacity_of(flat_size: int) -> int:
    """The capacity K whose flat observation has `flat_size` entries (553/569/585)."""
    for k in C.CAPACITIES:
        if obs_size(k) == flat_size:
            return k
    raise ValueError(
        f"{flat_size} is not a NormGym observation size ({', '.join(str(obs_size(k)) for k in C.CAPACITIES)})"
    )


def unflatten_observation(flat) -> dict:
    """Cut a flat observation [..., D] into the dict of `OBS_KEYS`."""
    flat = jnp.asarray(flat)
    k = capacity_of(flat.shape[-1])
    lead = flat.shape[:-1]
    a, b = _N_PLANES, _N_PLANES + N_VEC
    c = b + N_OTHER * (k - 1)
    return {
        "planes": flat[..., :a].reshape(*lead, 3, C.H, C.W),
        "vector": flat[..., a:b],
        "others": flat[..., b:c].reshape(*lead, k - 1, N_OTHER),
        "action_mask": flat[..., c:] > 0.5,
    }


def flatten_observation(obs) -> jnp.ndarray:
    """Join a dict of `OBS_KEYS` into the flat float32 observation (arrays pass through)."""
    if not isinstance(obs, dict):
        return jnp.asarray(obs, jnp.float32)
    lead = obs["vector"].shape[:-1]
    parts = [jnp.asarray(obs[key], jnp.float32).reshape(*lead, -1) for key in OBS_KEYS]
    return jnp.concatenate(parts, axis=-1)


class _ObservationWrapper(Wrapper):
    """Applies `transform` to the observation and to the info's "final_obs"."""

    transform = staticmethod(lambda obs: obs)

    def reset(self, key, params=None):
        obs, state = self._env.reset(key, params)
        return self.transform(obs), state

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        if isinstance(info, dict) and "final_obs" in info:
            info = info_dict(info)
            info["final_obs"] = self.transform(info["final_obs"])
        return self.transform(obs), state, reward, terminated, truncated, info


class DictObservation(_ObservationWrapper):
    """Observations as the dict `{planes, vector, others, action_mask}`."""

    transform = staticmethod(unflatten_observation)


class FlattenObservation(_ObservationWrapper):
    """Observations as the flat float32 vector (undoes `DictObservation`)."""

    transform = staticmethod(flatten_observation)


__all__ = [
    "DictObservation",
    "FlattenObservation",
    "OBS_KEYS",
    "capacity_of",
    "flatten_observation",
    "unflatten_observation",
]
