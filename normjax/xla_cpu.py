"""CPU code generation settings that make the world step faster, results unchanged.

On CPU, JAX lowers its threefry random-number hash with a *rolled* loop (a
`while` loop of 5 iterations per random call), to keep CPU compiles small.
Inside the world step that means one `while` loop per `jax.random` call (35 of
the compiled full step's 38), and under `vmap` every loop is a serial
round-trip over the whole batch.  `configure(unrolled_threefry=True)` registers
JAX's own unrolled lowering (the one GPUs and TPUs use) for the CPU too: the
same arithmetic, so every random bit is unchanged (tested), fewer loops, and
shorter compiles.  Measured by `benchmarks/stage_breakdown.py`-style CPU-time
A/B on the 2-core machine: about 7% less CPU time per env-step.

Opt-in: `import normjax` changes nothing in JAX.  normjax's own entry points
apply it (the `normjax` command, `train.run.train_population`, the timing
scripts of benchmarks/, the test session); user code opts in with
`normjax.configure()` (for the process, undone by
`normjax.configure(unrolled_threefry=False)`) or `with normjax.configured():`
(for a block).  The setting is read when a program is compiled: a program
compiled while it was on keeps the unrolled loops after it is turned off, and
the other way round (either way the same bits).  `NORMJAX_ROLLED_THREEFRY=1`
makes `configure` keep JAX's default.  It uses JAX internals (pinned jax
version); where they are missing nothing is changed.
"""

from __future__ import annotations

import contextlib
import os

import jax.numpy as jnp

_SAVED = []  # JAX's own CPU rule entry, saved the first time ours replaces it


def _rules():
    """(CPU lowering rules of JAX, the threefry primitive, its unrolled rule) or None."""
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as threefry

        return mlir._platform_specific_lowerings["cpu"], threefry.threefry2x32_p, threefry._threefry2x32_lowering_rule
    except (ImportError, AttributeError):  # a JAX without these internals: keep its default
        return None


def unrolled_threefry_applied() -> bool:
    """Whether CPU programs compiled now get the unrolled threefry lowering."""
    got = _rules()
    if got is None:
        return False
    cpu, prim, rule = got
    entry = cpu.get(prim)
    return entry is not None and entry.rule is rule


def configure(*, unrolled_threefry: bool = True) -> dict:
    """Set normjax's JAX settings for this process; returns the previous settings.

    `unrolled_threefry`: compile threefry on the CPU without its `while` loop
    (module doc; same bits, about 7% faster env-steps).  True is ignored under
    `NORMJAX_ROLLED_THREEFRY=1`.  `configure(**previous)` restores.
    """
    previous = {"unrolled_threefry": unrolled_threefry_applied()}
    got = _rules()
    if got is None:
        return previous
    cpu, prim, rule = got
    want = bool(unrolled_threefry) and os.environ.get("NORMJAX_ROLLED_THREEFRY") != "1"
    if want and not previous["unrolled_threefry"]:
        from jax.interpreters import mlir

        _SAVED[:] = [cpu.get(prim)]
        mlir.register_lowering(prim, rule, platform="cpu")
    elif not want and previous["unrolled_threefry"]:
        if _SAVED and _SAVED[0] is not None:
            cpu[prim] = _SAVED[0]
        else:
            cpu.pop(prim, None)
    return previous


@contextlib.contextmanager
def configured(**settings):
    """`configure(**settings)` for the block, the previous settings restored after it."""
    previous = configure(**settings)
    try:
        yield
    finally:
        configure(**previous)


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


__all__ = ["computed_once", "configure", "configured", "unrolled_threefry_applied"]
