"""Stable argsort, argmin and random permutations of a short vector, without a sort.

The step orders its K (at most 10) agents three or four times: random
priorities in the planner and in physics, the order in which physics places
displaced agents, the observation's slot order.  XLA lowers `jnp.argsort` to a
`sort` that, under `vmap` on CPU, runs as a separate loop over each row of the
batch; with K = 10 the pairwise [K, K] comparisons below cost less and fuse
with their neighbours.  The results are identical to the library calls they
replace (tested against them), so trajectories do not change.
"""

import jax
import jax.numpy as jnp

from normjax.xla_cpu import computed_once


def stable_rank(values) -> jax.Array:
    """Position of each entry of a 1-D array in its stable ascending order:
    rank[i] = #{j: v[j] < v[i]} + #{j < i: v[j] == v[i]} (int32 [n])."""
    # Stored once: fused into the [n, n] comparisons, whatever computes the
    # values (a random hash, say) would run once per pair.
    v = computed_once(jnp.asarray(values))
    n = v.shape[0]
    before = jnp.arange(n)[None, :] < jnp.arange(n)[:, None]  # [i, j]: j < i
    less = (v[None, :] < v[:, None]) | ((v[None, :] == v[:, None]) & before)
    return less.sum(axis=1, dtype=jnp.int32)


def argsort_small(values) -> jax.Array:
    """`jnp.argsort(values, stable=True)` of a short 1-D array without NaNs, as [n, n] comparisons
    (comparisons as XLA makes them: on CPU a subnormal float equals 0.0)."""
    rank = stable_rank(values)
    n = rank.shape[0]
    slot = rank[None, :] == jnp.arange(n, dtype=jnp.int32)[:, None]  # [r, i]: i has rank r
    return jnp.sum(jnp.where(slot, jnp.arange(n, dtype=jnp.int32)[None, :], 0), axis=1, dtype=jnp.int32)


def argmin_small(values) -> jax.Array:
    """`jnp.argmin(values, axis=-1)` (int32) for a short last axis without NaNs,
    as a chain of selects over its entries (the first minimum, as argmin).

    XLA:CPU reduces a short minor axis one output at a time, with the fused
    producers of its input in scalar code; the chain is elementwise over the
    other axes and vectorises.  Measure before using it: for the planner's
    final choice it is faster, for its greedy prediction slower."""
    best = values[..., 0]
    index = jnp.zeros(best.shape, jnp.int32)
    for a in range(1, values.shape[-1]):
        better = values[..., a] < best
        best = jnp.where(better, values[..., a], best)
        index = jnp.where(better, a, index)
    return index


def permutation_small(key, n: int) -> jax.Array:
    """`jax.random.permutation(key, n)` for n < 2**10, from the same random bits.

    For such n the library sorts `arange(n)` by one round of 32-bit keys drawn
    from the second half of `split(key)`; this orders the same keys by rank.
    """
    if not 0 < n < 1 << 10:
        raise ValueError(f"permutation_small: n must be in 1..1023 (one sort round), got {n}")
    _, sub = jax.random.split(key)
    return argsort_small(jax.random.bits(sub, (n,), jnp.uint32))


__all__ = ["argmin_small", "argsort_small", "permutation_small", "stable_rank"]
