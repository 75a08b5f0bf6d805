"""The external-agent runner's programs through the executable cache (`normjax.cache`).

`normjax llm-eval` and `normjax play` step their episodes with the jitted
programs of `normjax.runtime.batch` (a stage's start, the packed view, the fused
step and the frame renderer).  With a cache directory configured (the
command line's default), `run` gets each program from
`normjax.cache.compiled`, so a repeated command loads it whole instead of
tracing and compiling it again.  The key is the program's name, its static
arguments (`static_key`: they are not in the arguments' shapes and dtypes),
the arguments' structure, shapes and dtypes, and the source of `normjax` and
JAX's version (a code or JAX change compiles again).  Without a cache
directory (library use, the tests) the jitted function is called as it is.
The executable is the same program either way (``jitted.lower(...).compile()``),
so the trajectories are the same.
"""

from __future__ import annotations

import json
import threading

from normjax.cache import cache_stats, compiled, persistent

# One compile per program at a time: play's sessions step in their own threads, and the
# runner's step runs in a worker thread (two callers would compile and store it twice).
_locks: dict[str, threading.Lock] = {}


def static_key(static: dict) -> str:
    """The static arguments as a stable string (sorted JSON)."""
    return json.dumps(static, sort_keys=True)


def run(name: str, jitted, *args, **static):
    """``jitted(*args, **static)``: through the executable cache when one is configured.

    The static arguments must be keyword arguments and the others positional
    (``jitted.lower(*args, **static)`` is what gets compiled)."""
    if not persistent():
        return jitted(*args, **static)
    lock = _locks.get(name) or _locks.setdefault(name, threading.Lock())  # setdefault: atomic
    with lock:
        exe = compiled(f"llm_{name}", jitted, args, static, static_key(static))
    return exe(*args)


def programs_line() -> str | None:
    """``programs: N loaded whole, M compiled and stored, Xs`` (the other commands' line), or None
    without a cache directory."""
    if not persistent():
        return None
    s = cache_stats()
    return (
        f"programs: {s['executable_loads']} loaded whole, {s['executable_stores']} compiled and stored, "
        f"{s['program_s']:.1f}s"
    )


__all__ = ["programs_line", "run", "static_key"]
