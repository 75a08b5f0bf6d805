"""normjax: NormGym as a pure-function JAX world.

Layers, imports flowing one way: `layouts` (maps, validator, tables, routes) ->
`ground` (effective moves, `run_where`, hashed draws, ranking) -> `norms`
(registry, predicates, the per-norm table) -> `world` (state, physics, tasks, the
world step, observation) -> `community` (the scripted planner) -> `env` (the one
environment step, policies, `make`) -> `protocol` (seeds, scenarios, runner) ->
`interop` / `observer` -> `llm`, `finetune`, `play`, `wrappers` -> the command line
(`cli`, `commands`: the only modules that import the `train` and `agents`
packages).  tests/test_import_layers.py holds the whole order and checks it.  The
rules of the world are written down in docs/world.md.

`normjax.make` is `normjax.registration.make`: it takes an environment id
(`normjax.registered_envs`, e.g. "NormGym-cafe-clockwise_circulation-train-v0") or
the keyword arguments of `normjax.env.make`, and returns the bare `NormGymEnv`.  With
`return_params=True` it is gymnax's idiom, `env, params = make(id)`, and returns what
`normjax.wrappers.gymnax.make` returns: `(GymnaxEnv, params)`, an env with gymnax's
interface (spaces, dict info, auto-reset) that gymnax's own wrappers accept (so the
package's `__init__` sits above `normjax.wrappers` in tests/test_import_layers.py).
Pure-JAX wrappers (auto-reset, episode statistics, flat or dict observations) live in
`normjax.wrappers`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Literal, overload

from normjax.constants import VERSION

if TYPE_CHECKING:
    from normjax.env.environment import NormGymEnv
    from normjax.world.state import WorldParams
    from normjax.wrappers.gymnax import GymnaxEnv

# Importing normjax changes nothing in JAX.  `normjax.configure()` opts this
# process into normjax's CPU code generation settings (normjax/xla_cpu.py: the
# same random bits, fewer loops); normjax's own entry points apply it.
#
# Public names, imported on first use (PEP 562): `import normjax` (and so the
# `normjax` command, whose module lives in this package) starts no JAX backend,
# so `jax.distributed.initialize()` can still run first (`normjax train
# --distributed`), and the compilation cache can be configured before anything
# compiles.
_LAZY = {
    "NormGymEnv": "normjax.env",
    "env_step": "normjax.env",
    "LAYOUTS": "normjax.layouts",
    "LayoutError": "normjax.layouts",
    "get_layout": "normjax.layouts",
    "load_layout": "normjax.layouts",
    "NORMS": "normjax.norms",
    "get_norm": "normjax.norms",
    "norm_id": "normjax.norms",
    "env_id": "normjax.registration",
    "registered_envs": "normjax.registration",
    "Observation": "normjax.world.observation",
    "obs_size": "normjax.world.observation",
    "observe": "normjax.world.observation",
    "WorldConfig": "normjax.world.state",
    "WorldParams": "normjax.world.state",
    "WorldState": "normjax.world.state",
    "make_params": "normjax.world.state",
    "StepInfo": "normjax.world.step",
    "reset_world": "normjax.world.step",
    "step_world": "normjax.world.step",
    "configure": "normjax.xla_cpu",
    "configured": "normjax.xla_cpu",
}


# The real parameters, for IDEs and type checkers: an id with keyword overrides of the
# `NormGymEnv` fields, or the fields alone (positional or keyword) as `normjax.env.make`.
@overload
def make(
    env_id: str,
    /,
    *,
    layout: str = ...,
    norm: str | int | None = ...,
    capacity: int = ...,
    phase: str = ...,
    reward_condition: str = ...,
    static_layout: bool = ...,
    distractor: str = ...,
    distractor_share: float = ...,
    return_params: Literal[False] = False,
) -> NormGymEnv: ...
@overload
def make(
    env_id: str,
    /,
    *,
    layout: str = ...,
    norm: str | int | None = ...,
    capacity: int = ...,
    phase: str = ...,
    reward_condition: str = ...,
    static_layout: bool = ...,
    distractor: str = ...,
    distractor_share: float = ...,
    return_params: Literal[True],
) -> tuple[GymnaxEnv, WorldParams]: ...
@overload
def make(
    layout: str = "cafe",
    norm: str | int | None = None,
    capacity: int = 10,
    phase: str = "train",
    reward_condition: str = "sparse_penalty",
    static_layout: bool = False,
    distractor: str = "none",
    distractor_share: float = 0.0,
    *,
    return_params: Literal[False] = False,
) -> NormGymEnv: ...
@overload
def make(
    layout: str = "cafe",
    norm: str | int | None = None,
    capacity: int = 10,
    phase: str = "train",
    reward_condition: str = "sparse_penalty",
    static_layout: bool = False,
    distractor: str = "none",
    distractor_share: float = 0.0,
    *,
    return_params: Literal[True],
) -> tuple[GymnaxEnv, WorldParams]: ...


def make(*args, return_params: bool = False, **kwargs):
    """A `NormGymEnv` from an id (plus field overrides) or from its fields (`normjax.registration.make`).

    `return_params=True` is gymnax's idiom: `(env, params)` as `normjax.wrappers.gymnax.make`
    returns them, the env a `GymnaxEnv` (gymnax's interface: `action_space`,
    `observation_space`, dict info, auto-reset) over the same `NormGymEnv`, so gymnax's
    `LogWrapper` and training loops take it unchanged; its spaces need gymnax installed.
    """
    if return_params:
        from normjax.wrappers.gymnax import make as _make_gymnax

        return _make_gymnax(*args, **kwargs)
    from normjax.registration import make as _make

    return _make(*args, **kwargs)


def enable_compilation_cache(path=None):
    """Keep this process's compiled programs on disk (JAX's persistent compilation cache).

    Off by default in the library (the `normjax` commands turn it on).  Call it once,
    before the first environment compiles; every later compilation in the process
    (the pure JAX env, the Gymnasium, PettingZoo and gymnax adapters, training) then
    loads a program compiled by an earlier process instead of compiling it again.
    `path` defaults as for the commands: `NORMJAX_CACHE_DIR`, else
    `$XDG_CACHE_HOME/normjax/jax` (`~/.cache/normjax/jax`).  Returns the directory
    (None, and the cache off, where `NORMJAX_NO_CACHE` is set and no `path` given).
    """
    from normjax.cache import configure_cache

    return configure_cache(None if path is None else str(path))


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'normjax' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = VERSION

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
    "configure",
    "configured",
    "enable_compilation_cache",
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
