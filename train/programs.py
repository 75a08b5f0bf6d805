"""The trainer's programs through the executable cache (`normjax.cache`).

A repeated `normjax train` with the same config loads its programs whole (the
population's init, the training block, the validation and final-test episodes,
the probe collection and statistics) instead of tracing and compiling them
again.  The key holds the config and every other value a program depends on
beyond its arguments' shapes, and the source of `normjax`, `train` and `agents` (a code
change compiles again).  Without a cache directory (`--no-cache`), and under
`jax.distributed` (programs spanning processes are not stored), the jitted
functions are used as they are.
"""

from __future__ import annotations

import json

from normjax.cache import Program, persistent
from normjax.train.multihost import is_multiprocess

SOURCES = ("normjax", "normjax.train", "normjax.agents")  # the networks live in agents/


def stores_programs() -> bool:
    """Whether the trainer's programs go through the executable cache in this process."""
    return persistent() and not is_multiprocess()


def cached(name: str, jitted, config=None, **values):
    """`jitted`, or a `normjax.cache.Program` keyed by `config` (a DQNConfig) and `values`."""
    if not stores_programs():
        return jitted
    key = json.dumps(dict(config=None if config is None else config.to_dict(), **values), sort_keys=True, default=str)
    return Program(name, jitted, key, SOURCES)


__all__ = ["SOURCES", "cached", "stores_programs"]
