"""normjax: NormGym as a pure-function JAX world.

Layers, imports flowing one way: `layouts` (maps, validator, tables, routes) ->
`norms` (registry, predicates, the per-norm table) -> `world` (state, physics,
tasks, the world step, observation) -> `community` (the scripted planner) ->
`env` (the one environment step, policies, `make`) -> `protocol` (seeds,
scenarios, runner) -> `interop` (export, rendering) -> `cli`.  The rules of the
world are written down in docs/world.md.

`normjax.make` is `normjax.registration.make`: it takes an environment id
(`normjax.registered_envs`, e.g. "NormGym-cafe-clockwise_circulation-train-v0") or
the keyword arguments of `normjax.env.make`.  Pure-JAX wrappers (auto-reset,
episode statistics, flat or dict observations) live in `normjax.wrappers`.
"""

from normjax.xla_cpu import use_unrolled_threefry

use_unrolled_threefry()  # same random bits, fewer loops on CPU (normjax/xla_cpu.py)

from normjax.env import NormGymEnv, env_step  # noqa: E402
from normjax.layouts import LAYOUTS, LayoutError, get_layout, load_layout  # noqa: E402
from normjax.norms import NORMS, get_norm, norm_id  # noqa: E402
from normjax.registration import env_id, make, registered_envs  # noqa: E402
from normjax.world.observation import Observation, obs_size, observe  # noqa: E402
from normjax.world.state import WorldConfig, WorldParams, WorldState, make_params  # noqa: E402
from normjax.world.step import StepInfo, reset_world, step_world  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "LayoutError",
    "NORMS",
    "NormGymEnv",
    "Observation",
    "StepInfo",
    "WorldConfig",
    "WorldParams",
    "WorldState",
    "env_id",
    "env_step",
    "get_layout",
    "get_norm",
    "load_layout",
    "make",
    "make_params",
    "norm_id",
    "obs_size",
    "observe",
    "registered_envs",
    "reset_world",
    "step_world",
]
