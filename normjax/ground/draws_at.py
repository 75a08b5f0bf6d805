"""Entries of a vector of library random draws, computed only where needed.

With JAX's partitionable threefry (the default), entry i of
`jax.random.bits(key, (n,))` hashes only (key, i), and `jax.random.randint`
turns two such bit vectors into integers entry by entry.  So the entries at a
few indices can be computed without the rest.  The world step's refill uses
this: every step it would draw six task numbers for all K slots, yet at most
`N_DOORS` slots empty in one step (see `normjax.world.turnover`).  The values
are exactly the library's (tested against it), so trajectories do not change.
"""

import jax
import jax.numpy as jnp
from jax.extend.random import threefry_2x32

from normjax.xla_cpu import computed_once


def _raw(key) -> jax.Array:
    """The key's two uint32 words (a raw key passes through)."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def bits_at(key, index) -> jax.Array:
    """`jax.random.bits(key, (n,), jnp.uint32)[index]` for any n > max(index) (uint32 [m])."""
    if not jax.config.jax_threefry_partitionable:
        raise RuntimeError("bits_at needs jax_threefry_partitionable=True (JAX's default)")
    index = jnp.asarray(index, jnp.uint32)
    # Counter (0, i) is entry i's; threefry_2x32 hashes the halves of `count` pairwise.
    out = threefry_2x32(_raw(key), jnp.concatenate([jnp.zeros_like(index), index]))
    m = index.shape[0]
    return out[:m] ^ out[m:]


def randint_at(key, index, minval, maxval) -> jax.Array:
    """`jax.random.randint(key, (n,), minval, maxval)[index]` (int32 [m]) for scalar bounds."""
    k1, k2 = jax.random.split(key)
    higher, lower = bits_at(k1, index), bits_at(k2, index)
    # jax.random.randint's int32 arithmetic, step by step.
    minval = jnp.asarray(minval, jnp.int32)
    maxval = jnp.asarray(maxval, jnp.int32)
    span = jnp.where(maxval <= minval, jnp.uint32(1), (maxval - minval).astype(jnp.uint32))
    multiplier = jnp.uint32(2**16) % span
    multiplier = (multiplier * multiplier) % span
    offset = ((higher % span) * multiplier + lower % span) % span
    return computed_once(minval + offset.astype(jnp.int32))


__all__ = ["bits_at", "randint_at"]
