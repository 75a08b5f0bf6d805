"""The environment step: the one place where the scripted community, the
newcomer's action, the world step and the observation are composed.

    obs, state, info = env_step(k_comm, k_world, state, action, params, community)

Every consumer (`NormGymEnv.step`, the DQN trainer, the protocol runner, the
exporter, the benchmarks) steps the environment through `env_step`; they differ
only in how they split their keys and in which `Community` drives slots 1..K-1.

A `Community` is a pair of pure functions: `act(key, state, params, view) -> [K]`
joint actions (slot 0's entry is replaced by the newcomer's action; `view` is
the episode's norm on `state`, `normjax.world.step.state_norm`, computed once
per step and shared by the planner and the world step's sanctions) and
`after_step(state, params) -> state`, a hook run after the world step.  The
default community is the scripted planner of docs/world.md §8 with no hook; the
test scenarios add their "holders" (agents kept in place until the newcomer
reaches them) as a community with a release hook (`normjax.protocol.scenarios`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp

from normjax.community.planner import plan_actions
from normjax.constants import ROLE_AWARE
from normjax.world.observation import observe
from normjax.world.state import WorldParams, WorldState
from normjax.world.step import state_norm, step_world


class Community(NamedTuple):
    """Who acts in slots 1..K-1, and what happens after each world step."""

    act: Callable  # (key, state, params, view=None) -> int32 [K]
    after_step: Callable  # (state, params) -> state


def community_actions(key, state: WorldState, params: WorldParams, view=None):
    """Joint action of the scripted slots [K] (slot 0's entry is unused).

    Norm-aware slots plan under the episode's norm, norm-blind slots without it.
    """
    aware = state.agents.role == ROLE_AWARE
    return plan_actions(key, state, params, aware, view)


def no_hook(state: WorldState, params: WorldParams) -> WorldState:
    return state


COMMUNITY = Community(act=community_actions, after_step=no_hook)


def env_step(
    k_comm, k_world, state: WorldState, action, params: WorldParams, community: Community = COMMUNITY, controlled=None
):
    """One environment step -> (Observation of slot 0, new state, StepInfo).

    `action` is the newcomer's (slot 0) action; with `controlled` (bool [K]) it
    is a joint action [K] whose controlled slots replace the community's (for
    multi-agent wrappers).  `k_comm` drives the community's planner, `k_world`
    the world step (physics ties, turnover).  The observation is computed on the
    new state; under `jit` it costs nothing when the caller does not use it.
    """
    view = state_norm(state, params)
    joint = community.act(k_comm, state, params, view).astype(jnp.int32)
    if controlled is None:
        joint = joint.at[0].set(jnp.asarray(action, jnp.int32))
    else:
        joint = jnp.where(controlled, jnp.asarray(action, jnp.int32), joint)
    new, info = step_world(k_world, state, joint, params, view)
    new = community.after_step(new, params)
    return observe(new, params), new, info


__all__ = ["COMMUNITY", "Community", "community_actions", "env_step", "no_hook"]
