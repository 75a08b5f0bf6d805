"""Running a population function with each device stepping its own runs.

The runs of a DQN population are independent, so sharded over the devices of a
1-D mesh (`train.run.population_mesh`) each device can run a whole chunk of
its own runs and exchange nothing with the others.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from normjax.world.state import with_packing


def per_device(fn: Callable, mesh=None) -> Callable:
    """`fn` over a population, run by each device of `mesh` on its own runs.

    Every argument and result is a pytree whose leaves hold the run axis first,
    but for scalars shared by all runs (the replay's write position), which every
    device keeps whole.  Inside, functions traced under `vmap` pack their rare
    work among the device's runs (`WorldParams.packing` True), whatever the
    caller's params say.  With `mesh` None, `fn` itself.
    """
    if mesh is None:
        return fn

    def specs(tree):
        return jax.tree.map(lambda x: PartitionSpec() if jnp.ndim(x) == 0 else PartitionSpec(mesh.axis_names[0]), tree)

    def local(*args):
        return fn(*with_packing(args, True))

    def call(*args):
        out_shape = jax.eval_shape(fn, *args)
        return jax.shard_map(local, mesh=mesh, in_specs=specs(args), out_specs=specs(out_shape), check_vma=False)(*args)

    return call


__all__ = ["per_device"]
