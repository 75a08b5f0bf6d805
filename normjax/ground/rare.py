"""Work that few environments of a batch need, run only for those under `vmap`.

Some parts of a step do nothing in most environments: physics places displaced
agents one at a time (an env-step has about 0.1 displaced agents on average),
an auto-reset starts a new episode about once in 200 steps.  Under a plain
`vmap` every environment runs such a part anyway (and a `while_loop` in it
runs for the busiest environment of the batch).

`run_where(needed, fn, idle, *args)` is, per environment, `fn(*args)` where
`needed` holds and `idle(*args)` elsewhere (`idle` is meant to be cheap: the
inputs passed through, a constant).  Unbatched it is a `lax.cond`.  Under
`vmap` (a `custom_vmap` rule) it runs `idle` for the whole batch and `fn` only
for the environments that need it: their indices are packed into chunks of a
fixed size (static shapes), their inputs gathered, `fn` vmapped over the
chunk, and the results scattered back.  A `while_loop` over chunks runs as
many as there are needing environments (usually one; none when no environment
needs `fn`).  A `needed` that is the same for the whole batch is one `cond`.

Cost: two passes over the batch for the packed indices, one gather of the
inputs and one scatter of the outputs per chunk, against `fn` for every
environment.  Worth it only where `fn` is much dearer than `idle` and rarely
needed; measure.

A batch sharded over several devices by the compiler (`NamedSharding` on the
batch axis under `jit`) is the exception: packing gathers environments across
devices, which cost 4.5x on the DQN population's acting half on two CPU
devices.  Such programs pass `packing=False` (the world step passes its
params' static `WorldParams.packing`): `run_where` then computes both for
every environment and selects, as a plain `vmap` of `jnp.where` would.
`shard_map` / `pmap` programs see their local batch and need nothing (the DQN
trainer runs each device's runs in a `shard_map`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

# Default chunk size as a share of the batch: big enough that one chunk
# usually holds every environment that needs the work.
CHUNK_SHARE = 1 / 8


def chunk_size(batch: int, share: float = CHUNK_SHARE) -> int:
    """Environments per chunk for a batch of `batch`."""
    return max(1, min(batch, math.ceil(batch * share)))


def _select(needed, a, b):
    """`a` where `needed` (bool [batch]) else `b`, leaf by leaf (batch axis 0)."""
    return jax.tree.map(lambda x, y: jnp.where(needed.reshape(needed.shape + (1,) * (x.ndim - 1)), x, y), a, b)


def run_where(needed, fn, idle, *args, share: float = CHUNK_SHARE, packing: bool = True):
    """Per environment `fn(*args)` if `needed` else `idle(*args)`; under `vmap`
    `fn` is computed only where needed (see the module doc).

    `fn` and `idle` must be pure functions of `args` (no captured tracers) with
    the same output structure.  `share`: the chunk size as a share of the batch
    (about the share of environments that usually need `fn`).  `packing`
    (static): False computes both for every environment and selects.
    """
    if not 0 < share <= 1:
        raise ValueError(f"run_where: share must be in (0, 1], got {share}")

    @custom_vmap
    def call(needed, args):
        return jax.lax.cond(needed, fn, idle, *args)

    @call.def_vmap
    def _batched(axis_size, in_batched, needed, args):
        needed_batched, args_batched = in_batched
        axes = jax.tree.map(lambda b: 0 if b else None, args_batched)
        whole = lambda f: lambda *a: jax.vmap(f, in_axes=axes, axis_size=axis_size)(*a)
        batched = lambda out: (out, jax.tree.map(lambda _: True, out))
        if not needed_batched:
            return batched(jax.lax.cond(needed, whole(fn), whole(idle), *args))
        if not packing:
            return batched(_select(needed, whole(fn)(*args), whole(idle)(*args)))
        out = whole(idle)(*args)
        size = chunk_size(axis_size, share)
        rank = jnp.cumsum(needed, dtype=jnp.int32) - 1
        n_chunks = (needed.sum(dtype=jnp.int32) + size - 1) // size

        def one_chunk(carry):
            c, out = carry
            mine = needed & (rank // size == c)
            (idx,) = jnp.nonzero(mine, size=size, fill_value=axis_size)
            safe = jnp.minimum(idx, axis_size - 1)
            sub = jax.tree.map(lambda a, b: a[safe] if b else a, args, args_batched)
            got = jax.vmap(fn, in_axes=axes)(*sub)
            out = jax.tree.map(lambda o, g: o.at[idx].set(g, mode="drop"), out, got)
            return c + 1, out

        _, out = jax.lax.while_loop(lambda c: c[0] < n_chunks, one_chunk, (jnp.int32(0), out))
        return batched(out)

    return call(jnp.asarray(needed, bool), args)


__all__ = ["CHUNK_SHARE", "chunk_size", "run_where"]
