"""Shared benchmark utilities: timing with compile time excluded, result files."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import jax

# NORMJAX_BENCH_RESULTS redirects the result files (the device suite writes to its $OUT).
RESULTS = Path(os.environ.get("NORMJAX_BENCH_RESULTS") or Path(__file__).resolve().parent / "results")
# The records of past A/B decisions (benchmarks/experiments/) keep their results apart.
EXPERIMENT_RESULTS = Path(
    os.environ.get("NORMJAX_BENCH_RESULTS") or Path(__file__).resolve().parent / "experiments" / "results"
)


def machine() -> dict:
    """A short description of where a benchmark ran."""
    dev = jax.devices()[0]
    return {
        "platform": dev.platform,
        "device": getattr(dev, "device_kind", str(dev)),
        "n_devices": jax.device_count(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "jax": jax.__version__,
    }


def block(tree):
    return jax.block_until_ready(tree)


def compile_timed(fn, *args):
    """Lower and compile jitted `fn` for `args` -> (compiled, compile_seconds)."""
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    return compiled, time.perf_counter() - t0


def xla_cost(compiled) -> dict:
    """XLA's own count for a compiled program: {"bytes": bytes accessed, "flops"} (NaN where absent)."""
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):  # older jax: one dict per computation
        ca = ca[0] if ca else {}
    ca = ca or {}
    return {"bytes": float(ca.get("bytes accessed", float("nan"))), "flops": float(ca.get("flops", float("nan")))}


def best_of(compiled, *args, repeats: int = 3, clock=time.perf_counter):
    """One warm-up run, then the best of `repeats` timed runs -> (best_seconds, output).

    `clock=time.process_time` measures this process's CPU time (all its threads)
    instead of wall time: on a shared machine it is far less disturbed by other
    processes, which is what A/B comparisons of two programs need.
    """
    out = block(compiled(*args))  # warm-up run
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        out = block(compiled(*args))
        best = min(best, clock() - t0)
    return best, out


def time_compiled(fn, *args, repeats: int = 3):
    """Compile `fn(*args)` (timed separately), then time `repeats` runs.

    Returns (compile_seconds, best_run_seconds, output).  `fn` must be jitted.
    """
    compiled, compile_s = compile_timed(fn, *args)
    best, out = best_of(compiled, *args, repeats=repeats)
    return compile_s, best, out


def save_experiment(name: str, payload: dict) -> Path:
    """`save` into EXPERIMENT_RESULTS (read at call time, so a test can redirect it)."""
    return save(name, payload, EXPERIMENT_RESULTS)


def save(name: str, payload: dict, results: Path | None = None) -> Path:
    results = RESULTS if results is None else Path(results)
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.json"
    payload = {"machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2))
    return path
