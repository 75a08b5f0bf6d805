"""Wrappers around `NormGymEnv` for the wider ecosystem.

Pure JAX, importable without extra packages, each jittable and vmappable:
`AutoResetWrapper`, `LogWrapper` (episode statistics of the newcomer),
`DictObservation` / `FlattenObservation`.
"""

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
    "AutoResetWrapper", "DictObservation", "EpisodeStats", "FlattenObservation", "LogState",
    "LogWrapper", "OBS_KEYS", "Wrapper", "flatten_observation", "reset_key", "seed_key", "step_info",
    "unflatten_observation", "world_state",
]
