"""The ideal Bayesian observer over the 50 norms (docs/observer.md).

* `evidence`: what the observer sees and the predicate inputs it derives from it;
* `belief`: the posterior `[50]` as a pytree, its update, read-outs and helpers;
* `queues`: the queue part of the norms' context from a per-layout cell table;
* `policies`: `bayes_map`, `bayes_safe` and the active learner `bayes_active`;
* `interaction`: learning in the interaction phase, and the observer newcomers
  as `normjax.protocol.StatefulPolicy` for `normjax.protocol.evaluate`;
* `identify`: identifiability of every norm from its interaction phase.
"""

from normjax.observer.belief import (
    Belief,
    entropy,
    init_belief,
    kl,
    map_norm,
    new_episode,
    plausible,
    probs,
    sample,
    survivors,
    update,
)
from normjax.observer.evidence import SOURCES, PublicHistory, Transitions, observe_step
from normjax.observer.interaction import OBSERVER_POLICIES, interaction_params, learn, observer_policy
from normjax.observer.policies import bayes_active, bayes_map, bayes_safe, expected_information_gain

__all__ = [
    "OBSERVER_POLICIES",
    "SOURCES",
    "Belief",
    "PublicHistory",
    "Transitions",
    "bayes_active",
    "bayes_map",
    "bayes_safe",
    "entropy",
    "expected_information_gain",
    "init_belief",
    "interaction_params",
    "kl",
    "learn",
    "map_norm",
    "new_episode",
    "observe_step",
    "observer_policy",
    "plausible",
    "probs",
    "sample",
    "survivors",
    "update",
]
