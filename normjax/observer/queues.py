"""The queue part of the predicates' `Context`, computed from a cell table.

`normjax.norms.context` finds each agent on each of the 16 queue paths by
comparing every agent's cell with every path cell (`[16, 7, K, 2]`), which is
most of the cost of the full `[50, K]` mask that the observer evaluates every
step.  Here a host-side table gives each cell's index on each path of each
layout, so the same three fields (`queue_src`, `queue_held`, `queue_tail`,
docs/world.md §7.3) come from one `[16, K]` gather and a `[16, K, 7]` one-hot.
`fast_context` returns `context(...)` with these fields replaced (XLA drops
the unused original computation).  tests/observer/test_observer.py checks the fields
equal `context`'s on random rollouts of every layout.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.layouts.tables import host_tables
from normjax.norms import Context, context

OFF_PATH = -1


@functools.cache
def queue_index_table() -> jax.Array:
    """int8 [layouts, 16, H * W]: index of each cell on each queue path, -1 off it."""
    t = host_tables()
    paths, lens = t["queue_paths"], t["queue_len"]  # [L, 16, 7, 2], [L, 16]
    n_layouts, n_paths = lens.shape
    out = np.full((n_layouts, n_paths, C.N_CELLS), OFF_PATH, np.int8)
    for lay in range(n_layouts):
        for p in range(n_paths):
            for j in range(int(lens[lay, p])):
                r, c = paths[lay, p, j]
                out[lay, p, r * C.W + c] = j
    with jax.ensure_compile_time_eval():
        return jnp.asarray(out)


def queue_fields(layout_id, pos, active):
    """(queue_src [16, K], queue_held [16, 7, K], queue_tail [16, K]) as in `context`."""
    active = active.astype(bool)
    flat = jnp.clip(pos[:, 0], 0, C.H - 1) * C.W + jnp.clip(pos[:, 1], 0, C.W - 1)
    src = queue_index_table()[layout_id, :, flat].T.astype(jnp.int32)  # [16, K]
    src = jnp.where(active[None, :], src, OFF_PATH)
    length = C.MAX_QUEUE_LEN
    mine = src[:, :, None] == jnp.arange(length)[None, None, :]  # [16, K, 7]; off path: none
    held = (mine.sum(axis=1)[:, :, None] - mine.transpose(0, 2, 1)) > 0  # by someone other than i
    idx = jnp.arange(1, length + 1, dtype=jnp.int32)[None, :, None]
    tail = jnp.max(jnp.where(held, idx, 0), axis=1)
    return src, held, tail


def fast_context(lt, pos, active, group, visited_q) -> Context:
    """`normjax.norms.context` with the queue fields from `queue_fields`."""
    src, held, tail = queue_fields(lt.layout_index, pos, active)
    return context(lt, pos, active, group, visited_q)._replace(queue_src=src, queue_held=held, queue_tail=tail)


__all__ = ["OFF_PATH", "fast_context", "queue_fields", "queue_index_table"]
