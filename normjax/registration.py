"""Environment ids: one string per (layout, norm, phase), and `make` that reads them.

Ecosystem tools (Gymnasium's registry, experiment configs, command lines) name an
environment by one string, so every NormGym configuration gets an id:

    NormGym-<layout>-<norm>-<phase>-v0     e.g. NormGym-cafe-clockwise_circulation-train-v0
    NormGym-<layout>-none-<phase>-v0       the same world without a norm

`<layout>` is one of `normjax.LAYOUTS`, `<norm>` one of the 50 norm names (or
`none`), `<phase>` one of `normjax.env.PHASES`.  No layout, norm or phase name
contains a hyphen, so an id splits unambiguously; the table of ids is nevertheless
built once from the names (`registered_envs`) and looked up, never parsed by
pattern, so an id is valid exactly when it is listed.  Only strings are made here:
no JAX work happens at import.

`make` accepts an id plus `NormGymEnv` field overrides, or, as before ids existed,
only the keyword (or positional) arguments of `normjax.env.make`.
"""

from __future__ import annotations

import dataclasses
import difflib

from normjax.env.environment import PHASES, NormGymEnv
from normjax.env.environment import make as _make_from_fields
from normjax.layouts import LAYOUTS
from normjax.norms import NO_NORM, NORM_NAMES, get_norm, norm_id

ID_PREFIX = "NormGym"
ID_VERSION = "v0"
NO_NORM_NAME = "none"
_EXAMPLE = f"{ID_PREFIX}-cafe-clockwise_circulation-train-{ID_VERSION}"

_FIELDS = tuple(f.name for f in dataclasses.fields(NormGymEnv))


def env_id(layout: str = "cafe", norm: str | int | None = None, phase: str = "train") -> str:
    """The id of a (layout, norm, phase) configuration; `norm` a name, an id or None.

    The id is checked against `registered_envs`, so a misspelt name fails here
    rather than producing an id that `make` would later reject.
    """
    if norm is None:
        norm = NO_NORM_NAME
    elif not isinstance(norm, str):  # an integer id; -1 is no norm
        norm = NO_NORM_NAME if norm_id(norm) == NO_NORM else get_norm(norm).name
    name = f"{ID_PREFIX}-{layout}-{norm}-{phase}-{ID_VERSION}"
    if name not in _SPECS:
        raise _unknown_id(name)
    return name


def _build_table() -> dict[str, tuple[str, str | None, str]]:
    table = {}
    for layout in LAYOUTS:
        for norm in (NO_NORM_NAME, *NORM_NAMES):
            for phase in PHASES:
                name = f"{ID_PREFIX}-{layout}-{norm}-{phase}-{ID_VERSION}"
                table[name] = (layout, None if norm == NO_NORM_NAME else norm, phase)
    return table


# id -> (layout, norm name or None, phase); insertion order = layouts x norms x phases.
_SPECS: dict[str, tuple[str, str | None, str]] = _build_table()

registered_envs: tuple[str, ...] = tuple(_SPECS)
"""Every environment id: 10 layouts x (no norm + 50 norms) x 3 phases = 1530."""


def _unknown_id(name: str) -> ValueError:
    close = difflib.get_close_matches(name, registered_envs, n=5, cutoff=0.6)
    hint = (
        "closest valid ids: " + ", ".join(close)
        if close
        else f"for example {_EXAMPLE!r} (all: normjax.registered_envs)"
    )
    return ValueError(
        f"unknown environment id {name!r}; ids are {ID_PREFIX}-<layout>-<norm or none>-<phase>-{ID_VERSION}; {hint}"
    )


def parse_env_id(name: str) -> dict[str, str | None]:
    """`{"layout", "norm", "phase"}` of a registered id (norm None for `none`)."""
    if not isinstance(name, str):
        raise TypeError(f"an environment id is a string, got {type(name).__name__}")
    if name not in _SPECS:
        raise _unknown_id(name)
    layout, norm, phase = _SPECS[name]
    return {"layout": layout, "norm": norm, "phase": phase}


def _looks_like_id(value) -> bool:
    # Layout names contain no hyphen, so a positional layout ("cafe") keeps its
    # old meaning while anything id-shaped (even misspelt) is read as an id.
    return isinstance(value, str) and ("-" in value or value.lower().startswith(ID_PREFIX.lower()))


def make(*args, **kwargs) -> NormGymEnv:
    """Build a `NormGymEnv` from an id, or from its fields as `normjax.env.make` does.

        make("NormGym-cafe-clockwise_circulation-test-v0")
        make("NormGym-cafe-none-train-v0", capacity=6, reward_condition="dense")
        make("NormGym-cafe-none-test-v0", distractor="move1_wait1", distractor_share=0.5)
        make(layout="cafe", norm="clockwise_circulation", phase="test")   # no id

    With an id, keyword arguments override `NormGymEnv` fields (layout, norm,
    capacity, phase, reward_condition, static_layout, distractor,
    distractor_share); an unknown field is a TypeError naming the valid ones,
    an unknown id a ValueError naming the closest valid ids.  Without an id the
    arguments are those of `normjax.env.make`, unchanged.
    """
    if args and _looks_like_id(args[0]):
        if len(args) > 1:
            raise TypeError("make(env_id, **overrides) takes the overrides as keywords only")
        fields = parse_env_id(args[0])
        unknown = sorted(set(kwargs) - set(_FIELDS))
        if unknown:
            raise TypeError(f"unknown override(s) {', '.join(unknown)}; valid: {', '.join(_FIELDS)}")
        fields.update(kwargs)
        return NormGymEnv(**fields)
    return _make_from_fields(*args, **kwargs)


__all__ = ["ID_PREFIX", "ID_VERSION", "env_id", "make", "parse_env_id", "registered_envs"]
