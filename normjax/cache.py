"""A persistent JAX compilation cache for the `normjax` command line.

Every `normjax` command compiles large programs (the environment step, the
protocol's 300 episodes, a DQN population); with a persistent cache a second
identical command loads the executables from disk instead of compiling them.
The cache is JAX's own (`jax_compilation_cache_dir`), configured here before
anything compiles:

* on by default, under the user's cache directory:
  ``$XDG_CACHE_HOME/normjax/jax``, or ``~/.cache/normjax/jax``;
* ``--cache-dir DIR`` or the environment variable ``NORMJAX_CACHE_DIR`` choose
  another directory;
* ``--no-cache`` or ``NORMJAX_NO_CACHE=1`` turn it off;
* a directory that JAX already has (``JAX_COMPILATION_CACHE_DIR``, or a test
  session's own setting) is kept when neither flag nor ``NORMJAX_CACHE_DIR``
  names one.

The thresholds are lowered (`jax_persistent_cache_min_compile_time_secs` 0,
`jax_persistent_cache_min_entry_size_bytes` -1) so that CPU programs, which
compile in well under JAX's default one second, are cached too.
`cache_stats()` counts this process's cache hits and writes (from
`jax.monitoring` events).
"""

from __future__ import annotations

import os
from pathlib import Path

_HIT = "/jax/compilation_cache/cache_hits"
_MISS = "/jax/compilation_cache/cache_misses"  # recorded when an entry is written
_REQUEST = "/jax/compilation_cache/compile_requests_use_cache"
_counts = {_HIT: 0, _MISS: 0, _REQUEST: 0}
_listening = False

_FALSE = ("", "0", "false", "no", "off")


def default_cache_dir(environ=None) -> Path:
    """``$XDG_CACHE_HOME/normjax/jax`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "normjax" / "jax"


def resolve_cache_dir(cache_dir: str | None = None, no_cache: bool = False, environ=None,
                      jax_dir: str | None = None) -> Path | None:
    """The cache directory a command should use, or None for no cache.

    Precedence: ``no_cache`` (``--no-cache``), ``cache_dir`` (``--cache-dir``),
    ``NORMJAX_NO_CACHE``, ``NORMJAX_CACHE_DIR``, a directory JAX is already
    configured with (`jax_dir`), the default user cache directory.
    """
    env = os.environ if environ is None else environ
    if no_cache:
        return None
    if cache_dir:
        return Path(cache_dir).expanduser()
    if env.get("NORMJAX_NO_CACHE", "").strip().lower() not in _FALSE:
        return None
    if env.get("NORMJAX_CACHE_DIR"):
        return Path(env["NORMJAX_CACHE_DIR"]).expanduser()
    if jax_dir:
        return Path(jax_dir)
    return default_cache_dir(env)


def _listen() -> None:
    global _listening
    if _listening:
        return
    import jax

    def on_event(event: str, **kwargs) -> None:
        if event in _counts:
            _counts[event] += 1

    jax.monitoring.register_event_listener(on_event)
    _listening = True


def configure_cache(cache_dir: str | None = None, no_cache: bool = False) -> Path | None:
    """Set JAX's persistent compilation cache for this process; returns the directory or None.

    Call before the programs to be cached compile.  JAX decides once per
    process whether it uses a cache (at the first compilation: importing
    `normjax` already compiles two tiny constant-staging programs, before any
    cache is configured), so the decision is reset here
    (`jax.experimental.compilation_cache.compilation_cache.reset_cache`) and
    taken again at the next compilation with these settings.  Turning the
    cache off sets `jax_enable_compilation_cache` to False.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache as jax_cache

    _listen()
    path = resolve_cache_dir(cache_dir, no_cache, jax_dir=jax.config.jax_compilation_cache_dir)
    jax_cache.reset_cache()
    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path


def cache_stats() -> dict:
    """This process's persistent-cache events since `configure_cache`: hits, writes, lookups."""
    return {"hits": _counts[_HIT], "writes": _counts[_MISS], "lookups": _counts[_REQUEST]}


__all__ = ["cache_stats", "configure_cache", "default_cache_dir", "resolve_cache_dir"]
