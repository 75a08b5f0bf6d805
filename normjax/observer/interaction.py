"""Learning the belief in the interaction phase, and the protocol's observer newcomers.

`learn(key, norm_id, act, ...)` runs one norm's 200-step interaction phase
(docs/world.md §9.1: the cafe, `phase_params("interaction", 0, norm)`, the default
community with one norm-blind member, the newcomer replaced when it finishes)
with the newcomer in slot 0 acting by `act(key, state, params, belief)` on the
current belief, and the observer updating the belief after every step.  Keys
follow the trajectory exporter (`normjax.interop.export`): the episode key
`PRNGKey(base_seed(norm, seed))` is split into a reset key and a run key, and
each step is the one episode step (`normjax.env.episode.episode_step`).

`observer_policy(name, ...)` packages an observer newcomer as a
`normjax.protocol.StatefulPolicy`: `prepare` is `learn` (with `bayes_map`, or
`bayes_active` for the active learner, as the interaction newcomer), `begin`
carries the posterior into a test episode with a fresh public history, `act` is
the named policy, and `observe` keeps updating during the test episode.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.env import COMMUNITY, phase_params
from normjax.env.episode import Newcomer, episode_step, start_episode
from normjax.layouts.tables import world_tables
from normjax.observer.belief import Belief, check_eps, init_belief, new_episode, update
from normjax.observer.evidence import check_source
from normjax.observer.policies import DEFAULT_MIN_GAIN, DEFAULT_THRESHOLD, make_act
from normjax.protocol.runner import StatefulPolicy
from normjax.world.habits import check_distractor
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

INTERACTION_STEPS = C.INTERACTION_STEPS
OBSERVER_POLICIES = ("bayes_map", "bayes_safe", "bayes_active")


def interaction_params(norm_id, habit=0, habit_share=0.0):
    """The interaction phase's parameters on the cafe (`norm_id` may be traced),
    with the distractor habit code and share of docs/world.md §8.5 (default off)."""
    return phase_params("interaction", 0, 0).replace(
        norm_id=jnp.asarray(norm_id, jnp.int32),
        habit=jnp.asarray(habit, jnp.int32),
        habit_share=jnp.asarray(habit_share, jnp.float32),
    )


def learn(
    key,
    norm_id,
    act,
    eps=0.0,
    source: str = "positions",
    config: WorldConfig = WorldConfig(),
    steps: int = INTERACTION_STEPS,
    probe=None,
    habit=0,
    habit_share=0.0,
):
    """One interaction phase with the observer as newcomer -> (final Belief, trace).

    `act(key, state, params, belief) -> action` drives slot 0.  `probe`, if
    given, is `probe(state_before, info, belief_after, params) -> pytree`,
    stacked over the steps as `trace` (analysis only: it may read anything);
    without it `trace` holds the posterior after every step, float32
    `[steps, 50]`.  Jittable and vmappable over `key` and `norm_id`.
    `habit` / `habit_share`: the episode's distractors (docs/world.md §8.5).
    """
    check_eps(eps)
    check_source(source)
    params = interaction_params(norm_id, habit, habit_share)
    lt = world_tables().at(params.layout_id)
    k_reset, k_run = jax.random.split(key)
    state = reset_world(k_reset, params, config)
    belief = init_belief(lt, state)

    newcomer = Newcomer(act=act, observe=lambda b, s, info, params: update(b, s, info, lt, eps, source))

    def body(episode, k):
        after, info = episode_step(k, episode, params, newcomer, COMMUNITY)
        b2 = after.memory
        return after, (b2.log_probs if probe is None else probe(episode.state, info, b2, params))

    final, trace = jax.lax.scan(body, start_episode(state, belief), jax.random.split(k_run, steps))
    return final.memory, trace


def _prepare(learn_act, eps, source, distractor, key, norm_id, config):
    return learn(key, norm_id, learn_act, eps, source, config, habit=distractor[0], habit_share=distractor[1])[0]


@functools.cache
def _prepare_fn(learner: str, eps: float, source: str, min_gain: float, distractor=(0, 0.0)):
    """One function object per learning setting (and distractor habit code and
    share), so that the runner's compiled interaction program is shared by
    policies that learn alike."""
    return functools.partial(_prepare, make_act(learner, eps, DEFAULT_THRESHOLD, min_gain), eps, source, distractor)


def _begin(belief: Belief, state, params) -> Belief:
    return new_episode(belief, world_tables().at(params.layout_id), state)


def _observe(eps, source, belief: Belief, state_before, info, params) -> Belief:
    return update(belief, state_before, info, world_tables().at(params.layout_id), eps, source)


@functools.cache
def _observe_fn(eps: float, source: str):
    return functools.partial(_observe, eps, source)


@functools.cache
def observer_policy(
    name: str,
    eps: float = 0.0,
    threshold: float = DEFAULT_THRESHOLD,
    source: str = "positions",
    min_gain: float = DEFAULT_MIN_GAIN,
    distractor: str | None = None,
    distractor_share: float = 0.0,
) -> StatefulPolicy:
    """The observer newcomer `name` (one of OBSERVER_POLICIES) for `normjax.protocol.evaluate`.

    In the interaction phase the newcomer acts by `bayes_map` (`bayes_active`:
    by the active learner); in the test episodes by `name` (`bayes_active`:
    by `bayes_map`).  `distractor` / `distractor_share` set the interaction
    phase's habits (docs/world.md §8.5; pass the same to `evaluate` for the
    tests).  Cached, so equal settings share compiled programs.
    """
    habits = check_distractor(distractor, distractor_share)
    if name not in OBSERVER_POLICIES:
        raise ValueError(f"unknown observer policy {name!r}; valid: {', '.join(OBSERVER_POLICIES)}")
    check_eps(eps)
    check_source(source)
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    learner = "bayes_active" if name == "bayes_active" else "bayes_map"
    return StatefulPolicy(
        prepare=_prepare_fn(learner, eps, source, min_gain if learner == "bayes_active" else DEFAULT_MIN_GAIN, habits),
        begin=_begin,
        act=make_act("bayes_map" if name == "bayes_active" else name, eps, threshold, min_gain),
        observe=_observe_fn(eps, source),
    )


__all__ = ["INTERACTION_STEPS", "OBSERVER_POLICIES", "interaction_params", "learn", "observer_policy"]
