"""CPU code generation settings that make the world step faster, results unchanged.

On CPU, JAX lowers its threefry random-number hash with a *rolled* loop (a
`while` loop of 5 iterations per random call), to keep CPU compiles small.
Inside the world step that means one `while` loop per `jax.random` call (35 of
the compiled full step's 38), and under `vmap` every loop is a serial
round-trip over the whole batch.  `use_unrolled_threefry()` registers JAX's
own unrolled lowering (the one GPUs and TPUs use) for the CPU too: the same
arithmetic, so every random bit is unchanged (tested), fewer loops, and
shorter compiles.  Measured by `benchmarks/stage_breakdown.py`-style CPU-time
A/B on the 2-core machine: about 7% less CPU time per env-step.

It is applied when `normjax` is imported, for the whole process (it changes
only how JAX compiles threefry on CPU, never its values).  Set
`NORMJAX_ROLLED_THREEFRY=1` before importing normjax to keep JAX's default.
It uses a JAX-internal module (pinned jax version); if that module is not
there, nothing is changed and `UNROLLED` stays False.
"""

from __future__ import annotations

import os

import jax.numpy as jnp

UNROLLED = False


def use_unrolled_threefry() -> bool:
    """Register the unrolled threefry lowering for the CPU; True when applied."""
    global UNROLLED
    if os.environ.get("NORMJAX_ROLLED_THREEFRY") == "1":
        return False
    try:
        from jax._src.random import threefry2x32 as threefry
        from jax.interpreters import mlir

        mlir.register_lowering(threefry.threefry2x32_p, threefry._threefry2x32_lowering_rule, platform="cpu")
    except (ImportError, AttributeError):  # a JAX without these internals: keep its default
        return False
    UNROLLED = True
    return True


def computed_once(x):
    """`x` unchanged, but stored once instead of recomputed inside each consumer.

    With the unrolled lowering a threefry hash is ~140 cheap integer operations,
    and XLA fuses cheap producers into every consumer: a random vector read by a
    [K, K] rank table was hashed K times per entry, a task draw once per
    coordinate of the cell it picks.  A reduction ends a fusion, so `x` goes
    through one that is the identity (or with 0; max with -inf for floats, which
    keeps NaN).  `lax.optimization_barrier` does not help: XLA:CPU removes it
    before fusing.
    """
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.max(jnp.stack([x, jnp.full_like(x, -jnp.inf)]), axis=0)
    if x.dtype == jnp.bool_:
        return jnp.any(jnp.stack([x, jnp.zeros_like(x)]), axis=0)
    return jnp.bitwise_or.reduce(jnp.stack([x, jnp.zeros_like(x)]), axis=0)


__all__ = ["UNROLLED", "computed_once", "use_unrolled_threefry"]
