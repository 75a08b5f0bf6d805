"""A program compiled by XLA now, for storing whole (`normjax.cache.compiled`).

On XLA:CPU (jax 0.10.2) an executable that JAX loaded from its own persistent cache
serialises without some of its kernels: a stored copy loads, then fails at its first
call ("NOT_FOUND: Function select_broadcast_fusion.1 not found").  Such an executable
reaches a store two ways, and both are closed here: JAX's persistent cache serving the
compile itself (turned off for it), and JAX's in-memory caches handing back the
executable of an earlier call in this process that the persistent cache served
(bypassed by a compiler option).  Tests: tests/test_cache.py.
"""

from __future__ import annotations

import contextlib
import functools
import threading

_lock = threading.Lock()
_off = {"compiles": 0, "setting_before": None}  # compiles now running with JAX's cache off


@contextlib.contextmanager
def _without_jax_cache():
    """JAX's persistent cache off while a program to be stored compiles.  Counted, so that
    compiles in several threads (play's sessions) keep it off until the last one ends,
    which restores the setting the first one found."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as jax_cache

    def setting(on) -> None:
        jax.config.update("jax_enable_compilation_cache", on)
        jax_cache.reset_cache()  # JAX reads the setting once per cache initialisation

    with _lock:
        if _off["compiles"] == 0:
            _off["setting_before"] = jax.config.jax_enable_compilation_cache
            setting(False)
        _off["compiles"] += 1
    try:
        yield
    finally:
        with _lock:
            _off["compiles"] -= 1
            if _off["compiles"] == 0:
                setting(_off["setting_before"])


def compile_afresh(jitted, args: tuple, static: dict):
    """`jitted` compiled for `args` by XLA now, never an executable JAX already holds in memory.

    JAX keeps the executables of a process's earlier calls (a lowering's own and
    `pxla._cached_compilation`'s), and `.compile()` returns one of those when the same
    program ran before (a library call, then an in-process command); if that one came from
    JAX's persistent cache it serialises without kernels.  A compiler option is part of both
    caches' keys, so passing one compiles afresh; it is set to the value already in effect
    (`XLA_FLAGS` or XLA's default), so the program is the one the call would have compiled.
    """
    with _without_jax_cache():
        option = {_FRESH_OPTION: _option_in_effect(_FRESH_OPTION)}
        return jitted.lower(*args, **static).compile(compiler_options=option)


_FRESH_OPTION = "xla_cpu_enable_fast_math"  # any option would do: it is set to its value in effect


@functools.cache
def _option_in_effect(name: str):
    """An XLA debug option's value for this process: XLA's default with `XLA_FLAGS` applied."""
    from jax._src.lib import xla_client

    return getattr(xla_client.CompileOptions().executable_build_options.debug_options, name)


__all__ = ["compile_afresh"]
