"""The environment the newcomer sees: gymnax-style pure reset / step.

`make(layout=..., norm=..., capacity=...)` returns a `NormGymEnv`; the
scripted community (docs/world.md §8) acts inside `step`, so a policy only
supplies the newcomer's action (slot 0).  `reset(key, params) -> (obs, state)`
and `step(key, state, action, params) -> (obs, state, reward, terminated,
truncated, info)`, with `terminated` (the newcomer's test episode ended) and
`truncated` (the horizon was reached) returned separately.

`reset` and `step` are jitted (as gymnax's), so a plain Python loop over
`env.step` runs compiled steps after the first call; inside a caller's `jit`
or `vmap` they are inlined into the caller's program.
"""

from __future__ import annotations

import dataclasses
import functools

import jax

from normjax import constants as C
from normjax.env.step import env_step
from normjax.layouts.tables import layout_id as _layout_id
from normjax.norms import norm_id as _norm_id
from normjax.world.observation import Observation, obs_size, observe
from normjax.world.state import WorldConfig, WorldParams, WorldState, make_params
from normjax.world.step import reset_world, terminated, truncated

PHASES = ("interaction", "train", "test")


def phase_params(phase: str, layout: int, norm: int, **overrides) -> WorldParams:
    """WorldParams of an episode phase (docs/world.md §9, §11).

    interaction: 200 steps, one norm-blind background slot, newcomer replaced;
    train: 200 steps, newcomer replaced, all background norm-aware;
    test: 100 steps, newcomer not replaced, background norm-aware only.
    """
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; valid: {', '.join(PHASES)}")
    base = dict(
        interaction=dict(max_steps=C.INTERACTION_STEPS, n_blind=1, replace_newcomer=True),
        train=dict(max_steps=C.INTERACTION_STEPS, n_blind=0, replace_newcomer=True),
        test=dict(max_steps=C.TEST_STEPS, n_blind=0, replace_newcomer=False),
    )[phase]
    base.update(overrides)
    return make_params(layout, norm, **base)


@dataclasses.dataclass(frozen=True)
class NormGymEnv:
    """A NormGym environment: layout, norm and phase set its default params."""

    layout: str = "cafe"
    norm: str | int | None = None
    capacity: int = 10
    phase: str = "train"
    reward_condition: str = "sparse_penalty"
    # Single-layout fast path (WorldParams.static_layout): `default_params` promise
    # this env's layout, so its tables compile as constants.  Keep False to step
    # params whose `layout_id` you change (e.g. a batch mixing layouts).
    static_layout: bool = False
    # Distractor habits of norm-aware background agents (docs/world.md §8.5): off by default.
    distractor: str = "none"
    distractor_share: float = 0.0

    def __post_init__(self):
        _layout_id(self.layout)  # clear errors before any tracing
        _norm_id(self.norm)
        WorldConfig(capacity=self.capacity)
        phase_params(self.phase, 0, -1, distractor=self.distractor, distractor_share=self.distractor_share)

    @property
    def config(self) -> WorldConfig:
        return WorldConfig(capacity=self.capacity)

    @property
    def default_params(self) -> WorldParams:
        return phase_params(
            self.phase,
            _layout_id(self.layout),
            _norm_id(self.norm),
            reward_condition=self.reward_condition,
            static_layout=self.static_layout,
            distractor=self.distractor,
            distractor_share=self.distractor_share,
        )

    @property
    def num_actions(self) -> int:
        return C.N_ACTIONS

    @property
    def obs_size(self) -> int:
        return obs_size(self.capacity)

    def reset(self, key, params: WorldParams | None = None):
        params = self.default_params if params is None else params
        return _reset(self, key, params)

    def step(self, key, state: WorldState, action, params: WorldParams | None = None):
        """One step with the caller's `action`: `key` is split in two (community, world),
        so it is not the protocol's step for the same key, which splits it in three
        (`normjax.env.episode.step_keys`; the relation is tested)."""
        params = self.default_params if params is None else params
        return _step(self, key, state, action, params)

    def observation(self, state: WorldState, params: WorldParams | None = None) -> Observation:
        return observe(state, self.default_params if params is None else params)


# How a caller's `vmap` runs the step's rare work is the params' static
# `WorldParams.packing` (normjax.ground.rare): part of the arguments' structure,
# so each setting has its own compiled program.
@functools.partial(jax.jit, static_argnums=0)
def _reset(env: NormGymEnv, key, params: WorldParams):
    state = reset_world(key, params, env.config)
    return observe(state, params).flat(), state


@functools.partial(jax.jit, static_argnums=0)
def _step(env: NormGymEnv, key, state: WorldState, action, params: WorldParams):
    k_comm, k_world = jax.random.split(key)
    obs, state, info = env_step(k_comm, k_world, state, action, params)
    return obs.flat(), state, info.reward[0], terminated(state, params), truncated(state, params), info


def make(
    layout: str = "cafe",
    norm: str | int | None = None,
    capacity: int = 10,
    phase: str = "train",
    reward_condition: str = "sparse_penalty",
    static_layout: bool = False,
    distractor: str = "none",
    distractor_share: float = 0.0,
) -> NormGymEnv:
    """Build an environment; names are validated here, before any tracing."""
    return NormGymEnv(
        layout=layout,
        norm=norm,
        capacity=capacity,
        phase=phase,
        reward_condition=reward_condition,
        static_layout=static_layout,
        distractor=distractor,
        distractor_share=distractor_share,
    )
