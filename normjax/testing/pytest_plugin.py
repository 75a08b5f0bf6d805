"""The test session's setup, for tests/ and benchmarks/tests/ alike (pyproject's addopts load
it with `-p normjax.testing.pytest_plugin`): the two tiers, a persistent JAX compilation cache,
and fast compiles for the default tier (`pytest_configure`).

Tiers: `pytest -q` runs the default tier; `pytest -q -m slow` the slow tier.  A
test marked with one of NEEDS_SLOW_TIER (what it needs: training, several
processes, a notebook kernel, a benchmark script, the whole protocol) is put into
the slow tier here, so a need marker alone is enough and cannot be forgotten.
After every test the executable cache's directory and JAX's cache settings are put back
(`_restore_cache_settings`), since a command run in-process changes them.
"""

import json
import os
from pathlib import Path

import jax
import pytest

from normjax.cache import atomic_cache_writes
from normjax.xla_cpu import configure

NEEDS_SLOW_TIER = ("training", "distributed", "notebook", "benchmark", "full_protocol", "browser")


# The tests compile far more than they run, and LLVM's optimisation is most of an XLA:CPU
# compile: both tiers build their programs at LLVM level 0 (the same HLO; full-step
# trajectories hash the same, tests/test_xla_cpu.py's slow test), and since the level is part
# of a program's cache key, the slow tier then loads from the shared cache every program the
# default tier compiled.  One difference: an identity operation that level 3 removes is
# executed, and XLA:CPU flushes a denormal input to 0 (test_computed_once_is_the_identity...
# checks the command's level in a process of its own).  The `normjax` command keeps XLA's
# default.  Subprocesses the tests start inherit the flag; an XLA_FLAGS that names a level wins.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"


def pytest_configure(config):
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE_FLAG}".strip()  # read when the CPU backend starts
    cache_dir = Path(os.environ.get("NORMJAX_TEST_CACHE", config.rootpath / ".jax_cache"))
    jax.config.update("jax_compilation_cache_dir", str(cache_dir))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    # The workers share the cache: whole entries only (a half-written one failed a later run).
    atomic_cache_writes()
    # The programs the `normjax` command compiles (and no slower): normjax/xla_cpu.py.
    configure()


_recorder = None  # normjax.testing.timing.Recorder when NORMJAX_TEST_TIMING names a folder


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _timed(item, "call")


def _timed(item, when):
    global _recorder
    if _recorder is None and os.environ.get("NORMJAX_TEST_TIMING"):
        from normjax.testing.timing import recorder_from_env

        _recorder = recorder_from_env()
    if _recorder is not None:
        _recorder.start(item.nodeid, when)
    yield
    if _recorder is not None:
        _recorder.stop()


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(m) for m in NEEDS_SLOW_TIER) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    items[:] = heavy_files_first(items)


def heavy_files_first(items, durations: dict | None = None):
    """The longest files first (stable otherwise), so that a long file taken last does not leave
    one worker running alone at the end. xdist hands out whole files (--dist loadfile) in this
    order because pyproject's addopts pass --no-loadscope-reorder (by default it reorders them by
    their number of tests, and CI runs ended on one-test training files). A file's length is
    its seconds in tests/durations.json (written from a timed run by
    `python -m normjax.testing.timing DIR --durations tests/durations.json`); a file not there
    with slow-tier tests goes first."""
    if durations is None:
        path = Path(items[0].config.rootpath) / "tests" / "durations.json" if items else None
        durations = json.loads(path.read_text()) if path is not None and path.is_file() else {}
    weight: dict[str, float] = {}
    for item in items:
        f = item.nodeid.split("::")[0]
        heavy = any(item.get_closest_marker(m) for m in (*NEEDS_SLOW_TIER, "slow"))
        # an unmeasured file with heavy tests goes ahead of every measured one
        weight[f] = durations[f] if f in durations else weight.get(f, 0) + heavy * 1e6
    order = {f: i for i, f in enumerate(sorted(weight, key=lambda f: -weight[f]))}
    return sorted(items, key=lambda item: order[item.nodeid.split("::")[0]])


_JAX_CACHE_OPTIONS = (
    "jax_enable_compilation_cache",
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


@pytest.fixture(autouse=True)
def _restore_cache_settings():
    """Undo a command run in-process (`normjax.cli.main` -> `configure_cache`): it points the
    executable cache at a directory and changes JAX's cache settings for the rest of the worker,
    so later tests would store every program (llm-eval's and play's too) and compile with JAX's
    cache off (`normjax.compile_afresh`)."""
    from normjax import cache

    exe_dir = cache._exe_dir
    saved = {k: getattr(jax.config, k) for k in _JAX_CACHE_OPTIONS}
    yield
    cache._exe_dir = exe_dir
    changed = {k: v for k, v in saved.items() if getattr(jax.config, k) != v}
    if changed:
        from jax.experimental.compilation_cache import compilation_cache

        for k, v in changed.items():
            jax.config.update(k, v)
        compilation_cache.reset_cache()  # JAX reads the settings again at the next compilation
