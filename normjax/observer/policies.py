"""Newcomer policies that act on the observer's belief (docs/observer.md).

Each is `act(key, state, params, belief) -> action` for slot 0:

* `bayes_map`: the norm-aware planner (docs/world.md §8) under the MAP norm, i.e.
  `plan_actions(key, state, params.replace(norm_id=MAP), aware=slot 0)`.
* `bayes_safe`: the `bayes_map` action, replaced by WAIT unless it is permitted
  under every norm whose posterior exceeds `threshold` (WAIT is permissible
  under every norm, so the result is then permitted by all of them).
* `bayes_active`: a myopic active learner for the interaction phase.  For each
  of the newcomer's five actions, the expected information gain about the norm
  from its own sanction flag,

      EIG(a) = H(q_a) - H(eps),   q_a = (1 - eps) s_a + eps (1 - s_a),
      s_a = sum_n p(n) [action a is forbidden under n],

  (H the binary entropy in nats: the flag is a deterministic function of the
  norm blurred by eps).  It takes the most informative action when its gain
  exceeds `min_gain`, otherwise the `bayes_map` action.  It costs one
  `[50, K, 5]` mask per step.  It only probes what the newcomer can try from
  its current cell, and only its own moves; what others do is observed for free.

The newcomer's own permissibility masks read its own history (`moves`,
`visited_q` of slot 0), which it knows; the masks of slot 0 depend on no other
agent's history.  The planner itself reads the world state as it does for the
Norm Oracle (docs/world.md §8: the newcomer's task, and the one-step
prediction of the other agents); only the norm id it is given comes from the
belief.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.community.planner import plan_actions
from normjax.layouts.tables import world_tables
from normjax.norms import permissible_per_action
from normjax.observer.belief import Belief, map_norm, plausible, probs

DEFAULT_THRESHOLD = 0.05
DEFAULT_MIN_GAIN = 0.01  # nats


def own_action_masks(state, params):
    """bool [50, 5]: which of slot 0's five actions each norm permits now."""
    lt = world_tables().at(params.layout_id)
    ag = state.agents
    masks = permissible_per_action(lt, state.t, ag.pos, ag.active, ag.group, ag.moves, ag.visited_q)
    return masks[:, 0, :]


def bayes_map(key, state, params, belief: Belief):
    """The norm-aware planner's action under the MAP norm."""
    k = state.agents.active.shape[0]
    p = params.replace(norm_id=map_norm(belief))
    return plan_actions(key, state, p, jnp.arange(k) == 0)[0]


def bayes_safe(key, state, params, belief: Belief, threshold=DEFAULT_THRESHOLD):
    """`bayes_map`, or WAIT when a norm with posterior > threshold forbids that action."""
    action = bayes_map(key, state, params, belief)
    ok = own_action_masks(state, params)[:, action]  # [50]
    allowed = jnp.all(ok | ~plausible(belief, threshold))
    return jnp.where(allowed, action, C.WAIT).astype(jnp.int32)


def _binary_entropy(q):
    q = jnp.clip(q, 0.0, 1.0)
    return -(jax.scipy.special.xlogy(q, q) + jax.scipy.special.xlogy(1.0 - q, 1.0 - q))


def expected_information_gain(state, params, belief: Belief, eps=0.0):
    """float [5]: expected information (nats) about the norm from slot 0's own flag per action."""
    eps = jnp.asarray(eps, jnp.float32)
    forbidden = ~own_action_masks(state, params)  # [50, 5]
    s = jnp.sum(probs(belief)[:, None] * forbidden, axis=0)
    q = (1.0 - eps) * s + eps * (1.0 - s)
    return jnp.maximum(_binary_entropy(q) - _binary_entropy(eps), 0.0)


def bayes_active(key, state, params, belief: Belief, eps=0.0, min_gain=DEFAULT_MIN_GAIN):
    """The most informative own action if it gains > min_gain nats, else `bayes_map`."""
    gain = expected_information_gain(state, params, belief, eps)
    best = jnp.argmax(gain).astype(jnp.int32)
    return jnp.where(gain[best] > min_gain, best, bayes_map(key, state, params, belief)).astype(jnp.int32)


ACTS = {"bayes_map": bayes_map, "bayes_safe": bayes_safe, "bayes_active": bayes_active}


@functools.cache
def make_act(name: str, eps: float = 0.0, threshold: float = DEFAULT_THRESHOLD, min_gain: float = DEFAULT_MIN_GAIN):
    """`act(key, state, params, belief)` of a named policy with its settings bound."""
    if name == "bayes_map":
        return bayes_map
    if name == "bayes_safe":
        return functools.partial(bayes_safe, threshold=threshold)
    if name == "bayes_active":
        return functools.partial(bayes_active, eps=eps, min_gain=min_gain)
    raise ValueError(f"unknown observer policy {name!r}; valid: {', '.join(ACTS)}")


__all__ = [
    "ACTS",
    "DEFAULT_MIN_GAIN",
    "DEFAULT_THRESHOLD",
    "bayes_active",
    "bayes_map",
    "bayes_safe",
    "expected_information_gain",
    "make_act",
    "own_action_masks",
]
