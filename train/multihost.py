"""Multi-process (multi-host) helpers for `train.run` on `jax.distributed`.

A population run spread over several processes (hosts, or several processes
on one machine) is one SPMD program: every process runs the same Python code,
builds the same population from the same key, and the population axis is
sharded over a mesh of *all* processes' devices (`train.run.population_mesh`).
Here:

* `initialize(coordinator, num_processes, process_id)`: `jax.distributed.initialize`
  with the given values, or JAX's own auto-detection (SLURM, Open MPI, TPU
  pods, ...) for those left None.  It must run before anything touches a JAX
  backend (importing `normjax` does not; importing `train.config` does).
* `to_global(x, sharding)`: an array every process holds in full, placed on a
  sharding that spans processes (each process fills its own shards).
* `to_host(tree)`: numpy copies of (possibly cross-process) arrays, gathered on
  every process (a collective: every process must call it).
* `local_value(x)`: an element every device holds alike, read from a local shard.
* `is_primary()`: process 0 writes the run's files; checkpoints are saved by
  every process (orbax coordinates them).
"""

from __future__ import annotations

import jax
import numpy as np


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None) -> None:
    """Join the distributed run (`jax.distributed.initialize`); None values are auto-detected."""
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"--num-processes={num_processes} is invalid; allowed: a positive integer")
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id={process_id} is invalid; allowed: 0..{num_processes - 1}")
    kwargs = {
        k: v
        for k, v in dict(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id).items()
        if v is not None
    }
    jax.distributed.initialize(**kwargs)


def is_multiprocess() -> bool:
    return jax.process_count() > 1


def is_primary() -> bool:
    return jax.process_index() == 0


def to_global(x, sharding):
    """`x` (the same full value on every process) as an array with `sharding`."""
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])


def to_host(tree):
    """numpy copies of every leaf; arrays spread over processes are all-gathered first."""
    if not any(isinstance(x, jax.Array) and not x.is_fully_addressable for x in jax.tree.leaves(tree)):
        return jax.tree.map(np.asarray, tree)
    from jax.experimental import multihost_utils

    return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))


def local_value(x):
    """The first element of `x`'s first local shard (for values equal across the population)."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        x = x.addressable_shards[0].data
    return np.asarray(x).reshape(-1)[0]


__all__ = ["initialize", "is_multiprocess", "is_primary", "local_value", "to_global", "to_host"]
