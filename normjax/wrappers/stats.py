"""Episode statistics of the newcomer (slot 0), kept in the state and the info.

`LogWrapper` counts, over the current episode, the return, the number of steps,
and the newcomer slot's public sanctions, completed goals and collisions (as a
mover, docs/world.md §4.1 rule 6, the protocol's collision metric) from the step's
`StepInfo`.  When an episode ends (terminated or truncated) the counts are copied
to `returned` and the running counts restart, as purejaxrl's LogWrapper does, so a
training loop logs `info["returned_episode_return"]` where
`info["returned_episode"]` is true.  With newcomer replacement (interaction and
train phases) the slot's successive occupants add up: an episode's goals may
exceed 2.

Order: `LogWrapper(AutoResetWrapper(env))`.  The auto-reset hands the finishing
step's reward and flags through, so the counts close on the right step; wrapping
the other way round resets this wrapper's state too (the step's info is still
right, the state's `returned` is lost).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import struct

from normjax.wrappers.core import Wrapper, info_dict, step_info, where_tree

STAT_NAMES = ("return", "length", "sanctions", "goals", "collisions")


@struct.dataclass
class EpisodeStats:
    """Counters of one episode (float32 return, int32 counts)."""

    return_: jnp.ndarray
    length: jnp.ndarray
    sanctions: jnp.ndarray
    goals: jnp.ndarray
    collisions: jnp.ndarray

    @classmethod
    def zeros(cls) -> EpisodeStats:
        z = jnp.int32(0)
        return cls(return_=jnp.float32(0.0), length=z, sanctions=z, goals=z, collisions=z)

    def as_dict(self, prefix: str) -> dict:
        values = (self.return_, self.length, self.sanctions, self.goals, self.collisions)
        return {f"{prefix}{name}": v for name, v in zip(STAT_NAMES, values)}


@struct.dataclass
class LogState:
    """The wrapped environment state plus the running and the last finished counts."""

    env_state: Any
    episode: EpisodeStats
    returned: EpisodeStats


class LogWrapper(Wrapper):
    """Adds `episode_*` (running) and `returned_*` (last finished episode) to the info.

    Info keys: "returned_episode" (bool: an episode ended on this step),
    "episode_return|length|sanctions|goals|collisions" (the counts including this
    step) and "returned_episode_return|length|sanctions|goals|collisions".
    """

    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        zeros = EpisodeStats.zeros()
        return obs, LogState(env_state=env_state, episode=zeros, returned=zeros)

    def step(self, key, state: LogState, action, params=None):
        obs, env_state, reward, terminated, truncated, info = self._env.step(key, state.env_state, action, params)
        si = step_info(info)
        ep = state.episode
        ep = EpisodeStats(
            return_=ep.return_ + jnp.asarray(reward, jnp.float32),
            length=ep.length + 1,
            sanctions=ep.sanctions + si.sanctioned[0].astype(jnp.int32),
            goals=ep.goals + si.goals_completed[0].astype(jnp.int32),
            collisions=ep.collisions + si.collided[0].astype(jnp.int32),
        )
        done = terminated | truncated
        returned = where_tree(done, ep, state.returned)
        info = info_dict(info)
        info["returned_episode"] = done
        info.update(ep.as_dict("episode_"))
        info.update(returned.as_dict("returned_episode_"))
        state = LogState(env_state=env_state, episode=where_tree(done, EpisodeStats.zeros(), ep), returned=returned)
        return obs, state, reward, terminated, truncated, info


__all__ = ["EpisodeStats", "LogState", "LogWrapper", "STAT_NAMES"]
