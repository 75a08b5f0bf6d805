"""One step of an episode, the same for every consumer: the key schedule, the
newcomer, the done-freeze and the newcomer's per-episode counters.

    episode = start_episode(state, memory)
    episode, info = episode_step(key, episode, params, newcomer, community)

Key schedule (`step_keys`): each step's key k is split ``kc, kp, kw =
split(k, 3)``; kc drives the community (`env_step`'s k_comm), kp is the
newcomer's policy key, kw the world step's.  The newcomer is pluggable: a
`Newcomer` is `act(key, state, params, memory) -> action` and `observe(memory,
state_before, info, params) -> memory` (`state_newcomer` wraps a memoryless
state policy).  Once the newcomer has finished (`terminated`: a test episode's
newcomer exits and is not replaced) the state and the memory are kept as they
were at termination, and the counters stop: the world keeps running in the
scan (static shapes), but nothing of the episode changes.  In interaction and
training episodes the newcomer is replaced, so nothing is ever frozen.

Consumers: the protocol (`normjax.protocol.runner.run_episode`), the exporter
(`normjax.interop.export`), the observer's interaction phase
(`normjax.observer.interaction.learn`) and the DQN probe set
(`train.probes`, which passes its own `StepKeys` so that stored probe sets
reproduce), the DQN trainer (`train.dqn`, its own `StepKeys` too, so
recorded training runs reproduce), and the LLM batch runner (`normjax.runtime.batch`, with the
host's action as a `fixed_action` newcomer).

`NormGymEnv.step(key, state, action)` is not the protocol's step for the same
key: the caller chooses the action, so the env splits its key in two,
``k_comm, k_world = split(key)``, and uses the default community.  It equals
`episode_step(StepKeys(k_comm, k_comm, k_world), start_episode(state), params,
fixed_action(action))` (tested, tests/env/test_env_jit.py); a protocol step
with key k is `episode_step(k, ...)` with the scenario community.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.env.step import COMMUNITY, Community, env_step
from normjax.world.state import WorldParams, WorldState
from normjax.world.step import terminated


class StepKeys(NamedTuple):
    """The three keys of one step."""

    community: jax.Array
    policy: jax.Array
    world: jax.Array


def step_keys(key) -> StepKeys:
    """The episode's key schedule: ``community, policy, world = split(key, 3)``."""
    return StepKeys(*jax.random.split(key, 3))


class Newcomer(NamedTuple):
    """Who acts in slot 0 (both functions jittable and vmappable)."""

    act: Callable  # (key, state, params, memory) -> action
    observe: Callable  # (memory, state_before, info, params) -> memory


def state_newcomer(policy: Callable) -> Newcomer:
    """A state policy `policy(key, state, params) -> action` with an empty memory."""
    return Newcomer(
        act=lambda key, state, params, memory: policy(key, state, params),
        observe=lambda memory, state, info, params: memory,
    )


def fixed_action(action) -> Newcomer:
    """A newcomer that takes `action` (e.g. chosen by the caller)."""
    return state_newcomer(lambda key, state, params: action)


class Episode(NamedTuple):
    """The carry of an episode's scan."""

    state: WorldState
    memory: Any  # the newcomer's
    done: jax.Array  # bool: the newcomer has finished; state and memory frozen since
    waits: jax.Array  # int32: the newcomer's own WAITs (forced service waits excluded), before done
    collisions: jax.Array  # int32: steps in which the newcomer took part in a collision, before done


def start_episode(state: WorldState, memory=()) -> Episode:
    return Episode(state, memory, jnp.bool_(False), jnp.int32(0), jnp.int32(0))


def collision_involvement(info):
    """bool [..., K]: the slot's agent was involved in a collision on this step.

    `info` is a `StepInfo` (optionally with leading batch axes).  A mover
    whose target is a stationary agent's cell is always charged (rule 6), so
    "moved into" needs no extra physics output: a stationary agent is moved
    into when some active mover's target is its cell.  A mover never targets
    its own cell (a WAIT is not a move) and exits target door cells, where no
    agent stands, so neither produces a false match.  Array methods and
    operators only: it runs on jax and on host numpy arrays alike.
    """
    mover = info.active & (info.action != C.WAIT)
    stationary = info.active & (info.action == C.WAIT)
    # hit[..., i, j]: mover j's target is agent i's start cell.
    hit = mover[..., None, :] & (info.target[..., None, :, :] == info.pos[..., :, None, :]).all(-1)
    moved_into = stationary & hit.any(-1)
    return (info.collided | info.displaced | moved_into) & info.active


def episode_step(key, episode: Episode, params: WorldParams, newcomer: Newcomer, community: Community = COMMUNITY):
    """One step of an episode -> (Episode after it, the step's StepInfo).

    `key` is the step's key (split by `step_keys`) or a `StepKeys`.  The
    StepInfo is the world step's, also after the newcomer finished (when the
    step's new state is then discarded).
    """
    keys = key if isinstance(key, StepKeys) else step_keys(key)
    s, mem, done = episode.state, episode.memory, episode.done
    _, s2, info = env_step(keys.community, keys.world, s, newcomer.act(keys.policy, s, params, mem), params, community)
    mem2 = newcomer.observe(mem, s, info, params)
    # The newcomer's own WAITs, for the paper's wait statistics of DQN policies (A14).
    waited = info.active[0] & (info.action[0] == C.WAIT) & ~info.forced_wait[0] & ~done
    hit = collision_involvement(info)[0] & ~done
    s2, mem2 = jax.tree.map(lambda a, b: jnp.where(done, a, b), (s, mem), (s2, mem2))
    new_done = done | terminated(s2, params)
    return Episode(s2, mem2, new_done, episode.waits + waited, episode.collisions + hit), info


__all__ = [
    "Episode",
    "Newcomer",
    "StepKeys",
    "collision_involvement",
    "episode_step",
    "fixed_action",
    "start_episode",
    "state_newcomer",
    "step_keys",
]
