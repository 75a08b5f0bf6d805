"""The environment (docs/world.md §8-9): the one composed step, the one episode
step (key schedule, newcomer, done-freeze), newcomer policies, episode phases and
the gymnax-style `NormGymEnv`."""

from normjax.env.environment import PHASES, NormGymEnv, make, phase_params
from normjax.env.episode import (
    Episode,
    Newcomer,
    StepKeys,
    episode_step,
    fixed_action,
    start_episode,
    state_newcomer,
    step_keys,
)
from normjax.env.policies import (
    STATE_POLICIES,
    blind_policy,
    check_policy_name,
    obs_policy,
    oracle_policy,
    random_policy,
)
from normjax.env.step import COMMUNITY, Community, community_actions, env_step

__all__ = [
    "COMMUNITY",
    "Community",
    "Episode",
    "Newcomer",
    "NormGymEnv",
    "PHASES",
    "STATE_POLICIES",
    "StepKeys",
    "blind_policy",
    "check_policy_name",
    "community_actions",
    "env_step",
    "episode_step",
    "fixed_action",
    "make",
    "obs_policy",
    "oracle_policy",
    "phase_params",
    "random_policy",
    "start_episode",
    "state_newcomer",
    "step_keys",
]
