"""Newcomer policies for evaluation and export: `policy(key, state, params) -> action`.

State policies see the full world state (`oracle_policy`, `blind_policy`,
`blind_any_policy`, `blind_polite_policy`, `random_policy`); any jittable `policy(obs_flat, key) -> action` on the DQN
observation becomes one with `obs_policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.community.planner import plan_actions
from normjax.env.blind_any import blind_any_policy
from normjax.env.blind_polite import blind_polite_policy
from normjax.world.observation import observe
from normjax.world.state import WorldParams, WorldState


def oracle_policy(key, state: WorldState, params: WorldParams):
    """The norm-aware planner as newcomer ("Norm Oracle", paper Table 1)."""
    k = state.agents.active.shape[0]
    return plan_actions(key, state, params, jnp.arange(k) == 0)[0]


def blind_policy(key, state: WorldState, params: WorldParams):
    """The norm-blind shortest-path planner as newcomer ("Norm-Blind")."""
    k = state.agents.active.shape[0]
    return plan_actions(key, state, params, jnp.zeros((k,), bool))[0]


def random_policy(key, state: WorldState, params: WorldParams):
    """Uniformly random actions."""
    return jax.random.randint(key, (), 0, C.N_ACTIONS)


STATE_POLICIES = {
    "oracle": oracle_policy,
    "blind": blind_policy,
    "blind_any": blind_any_policy,
    "blind_polite": blind_polite_policy,
    "random": random_policy,
}


def check_policy_name(name: str) -> str:
    """`name` if it names a state policy; else ValueError listing the valid ones."""
    if name not in STATE_POLICIES:
        raise ValueError(f"unknown policy {name!r}; valid: {', '.join(STATE_POLICIES)}")
    return name


def obs_policy(policy: Callable[[Any, Any], Any]):
    """Wrap a jittable `policy(obs_flat, key) -> action` as a state policy."""

    def wrapped(key, state, params):
        return policy(observe(state, params).flat(), key)

    return wrapped


__all__ = [
    "STATE_POLICIES",
    "blind_any_policy",
    "blind_polite_policy",
    "blind_policy",
    "check_policy_name",
    "obs_policy",
    "oracle_policy",
    "random_policy",
]
