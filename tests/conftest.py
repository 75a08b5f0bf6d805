"""Test-session setup: a persistent JAX compilation cache shared across runs."""

import os
from pathlib import Path

import jax

_cache = Path(os.environ.get("NORMJAX_TEST_CACHE", Path(__file__).resolve().parents[1] / ".jax_cache"))
jax.config.update("jax_compilation_cache_dir", str(_cache))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
