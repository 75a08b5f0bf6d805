"""Test-session setup: the two tiers and a persistent JAX compilation cache.

Tiers: `pytest -q` runs the default tier; `pytest -q -m slow` the slow tier.  A
test marked with one of NEEDS_SLOW_TIER (what it needs: training, several
processes, a notebook kernel, a benchmark script, the whole protocol) is put into
the slow tier here, so a need marker alone is enough and cannot be forgotten.
"""

import os
from pathlib import Path

import jax
import pytest

NEEDS_SLOW_TIER = ("training", "distributed", "notebook", "benchmark", "full_protocol")

# The longest files of each tier (seconds of compiling or training, from CI's durations), run
# first: pytest-xdist hands out whole files in collection order (pyproject's addopts turn
# off its own reordering by test count, which put these few-test files last and left the
# other worker idle), so longest-first scheduling.  Order only: a file missing here runs
# after these, in the usual order.
LONGEST_FIRST = (
    "test_llm_runner.py", "test_dqn_run.py", "test_dqn.py", "test_world.py", "test_observer_policies.py",
    "test_wrappers.py", "test_observer.py", "test_cache.py", "test_planner.py", "test_draws_at.py",
    "test_distractors.py", "test_gymnasium.py", "test_env_jit.py", "test_export_many.py",
    # the slow tier's
    "test_distributed.py", "test_llm_slow.py", "test_dqn_scale.py", "test_dqn_task_learning.py",
    "test_dqn_learning.py", "test_notebook.py",
)

_cache = Path(os.environ.get("NORMJAX_TEST_CACHE", Path(__file__).resolve().parents[1] / ".jax_cache"))
jax.config.update("jax_compilation_cache_dir", str(_cache))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(m) for m in NEEDS_SLOW_TIER) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))  # stable: file order kept
