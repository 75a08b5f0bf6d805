"""normjax: NormGym as a pure-function JAX world.

The world (layouts, physics, tasks, rewards, norms) is in this package; see
SPEC.md for the semantics it implements.
"""

from normjax.layout import LAYOUTS, LayoutError, get_layout, load_layout
from normjax.norms import NORMS, get_norm, norm_id
from normjax.observation import Observation, obs_size, observe
from normjax.state import WorldConfig, WorldParams, WorldState, make_params
from normjax.world import StepInfo, reset_world, step_world

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "LayoutError",
    "NORMS",
    "Observation",
    "StepInfo",
    "WorldConfig",
    "WorldParams",
    "WorldState",
    "get_layout",
    "get_norm",
    "load_layout",
    "make_params",
    "norm_id",
    "obs_size",
    "observe",
    "reset_world",
    "step_world",
]
