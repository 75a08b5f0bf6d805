"""Cheap counter-based random numbers for tie-breaking inside the step.

Drawing many threefry numbers per step (e.g. one per agent and cell for tie
breaks) dominated the planner's cost on CPU.  Here a step draws one 32-bit
seed from its PRNG key and derives any number of uniform values by hashing
(seed, index) with the `lowbias32` integer hash (C. Wellons).  Everything
still comes from the step's key, so a fixed key replays exactly.  Quality is
ample for breaking ties; it is not used where statistics matter more.
"""

import jax
import jax.numpy as jnp

from normjax.xla_cpu import computed_once


def seed_from_key(key) -> jax.Array:
    """One uint32 seed from a PRNG key (hashed once, not in each consumer)."""
    return computed_once(jax.random.bits(key, (), jnp.uint32))


def seed_from_key_data(key) -> jax.Array:
    """A uint32 seed hashed from the raw words of a PRNG key, with no threefry
    draw: a stream that leaves every draw from (or split of) the key unchanged."""
    words = jax.random.key_data(key).reshape(-1).astype(jnp.uint32)
    return _lowbias32(words[0] ^ _lowbias32(words[1] + jnp.uint32(0x9E3779B9)))


def _lowbias32(x):
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def hash_uniform(seed, shape, salt: int = 0) -> jax.Array:
    """float32 uniform [0, 1) of `shape`, a pure function of (seed, salt, index)."""
    n = 1
    for d in shape:
        n *= d
    return hash_at(seed, jnp.arange(n, dtype=jnp.uint32).reshape(shape), salt)


def hash_at(seed, index, salt: int = 0) -> jax.Array:
    """The values `hash_uniform(seed, shape, salt)` has at the given flat indices:
    a caller that needs a few entries of a large table of draws computes only those."""
    idx = jnp.asarray(index).astype(jnp.uint32)
    x = _lowbias32(idx * jnp.uint32(0x9E3779B9) + seed + jnp.uint32(salt * 0x85EBCA6B % 2**32))
    x = _lowbias32(x ^ seed)
    return (x >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
