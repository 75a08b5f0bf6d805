"""Wrappers around `NormGymEnv` for the wider ecosystem.

Pure JAX, importable without extra packages, each jittable and vmappable:
`AutoResetWrapper`, `LogWrapper` (episode statistics of the newcomer),
`DictObservation` / `FlattenObservation`; the observation's true per-entry bounds
(`observation_bounds`) and the host-side action check every adapter uses
(`check_action`).  The adapters to Gymnasium (`normjax.wrappers.gymnasium`),
PettingZoo (`.pettingzoo`) and gymnax (`.gymnax`) need their extras.
"""

from normjax.wrappers.actions import check_action, check_actions
from normjax.wrappers.bounds import observation_bounds
from normjax.wrappers.core import (
    AutoResetWrapper,
    Wrapper,
    reset_key,
    seed_key,
    step_info,
    world_state,
)
from normjax.wrappers.observation import (
    OBS_KEYS,
    DictObservation,
    FlattenObservation,
    flatten_observation,
    unflatten_observation,
)
from normjax.wrappers.stats import EpisodeStats, LogState, LogWrapper

__all__ = [
    "AutoResetWrapper",
    "DictObservation",
    "EpisodeStats",
    "FlattenObservation",
    "LogState",
    "LogWrapper",
    "OBS_KEYS",
    "Wrapper",
    "check_action",
    "check_actions",
    "flatten_observation",
    "observation_bounds",
    "reset_key",
    "seed_key",
    "step_info",
    "unflatten_observation",
    "world_state",
]
