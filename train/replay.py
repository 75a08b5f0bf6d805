"""Replay memory for a population of DQN runs that step in lockstep.

Every run of a population collects one transition per environment step at the
same time, so the write position is one scalar shared by all runs and a block
of `train_freq` transitions per run is written with a single in-place
`dynamic_update_slice` into arrays shaped [runs, capacity, ...].  Sampling
draws independent indices per run from its own key.

Why not flashbax: its item buffer works (and was tried here), but under `vmap`
each run's add becomes a scatter with a per-run index, and on a 2-core CPU a
50-run population spent 15-35 ms per add on it (and more when the buffer sat
in a vmapped carry), several times the cost of the environment step itself.
The lockstep layout removes that cost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Replay:
    obs: jax.Array  # [R, N, obs]
    action: jax.Array  # int32 [R, N]
    reward: jax.Array  # float32 [R, N]
    next_obs: jax.Array  # [R, N, obs]
    terminated: jax.Array  # float32 [R, N]
    index: jax.Array  # int32: next write position (shared by all runs)
    size: jax.Array  # int32: filled entries (shared)

    @property
    def capacity(self) -> int:
        return self.action.shape[1]


def init(runs: int, capacity: int, obs_size: int, dtype=jnp.float32) -> Replay:
    z = lambda *s, d=jnp.float32: jnp.zeros((runs, capacity) + s, d)
    return Replay(
        obs=z(obs_size, d=dtype),
        action=z(d=jnp.int32),
        reward=z(),
        next_obs=z(obs_size, d=dtype),
        terminated=z(),
        index=jnp.int32(0),
        size=jnp.int32(0),
    )


def nbytes(runs: int, capacity: int, obs_size: int, dtype=jnp.float32) -> int:
    """Bytes that `init(runs, capacity, obs_size, dtype)` allocates."""
    per_item = 2 * obs_size * jnp.dtype(dtype).itemsize + 3 * 4  # obs, next_obs; action, reward, terminated
    return runs * capacity * per_item


def available_host_memory() -> int | None:
    """Bytes the kernel reports as available (Linux `MemAvailable`), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def add_block(rb: Replay, obs, action, reward, next_obs, terminated) -> Replay:
    """Write B transitions per run ([R, B, ...]); capacity must be a multiple of B.

    Wrap-around overwrites the oldest entries (ring buffer).
    """
    b = action.shape[1]
    at = lambda buf, x: jax.lax.dynamic_update_slice_in_dim(buf, x.astype(buf.dtype), rb.index, axis=1)
    return rb.replace(
        obs=at(rb.obs, obs),
        action=at(rb.action, action),
        reward=at(rb.reward, reward),
        next_obs=at(rb.next_obs, next_obs),
        terminated=at(rb.terminated, terminated),
        index=(rb.index + b) % rb.capacity,
        size=jnp.minimum(rb.size + b, rb.capacity),
    )


def sample(rb: Replay, keys, batch: int) -> dict:
    """Uniform minibatch per run from the filled part: dict of [R, batch, ...]."""
    idx = jax.vmap(lambda k: jax.random.randint(k, (batch,), 0, jnp.maximum(rb.size, 1)))(keys)
    take = lambda buf: jnp.take_along_axis(buf, idx.reshape(idx.shape + (1,) * (buf.ndim - 2)), axis=1)
    return {
        "obs": take(rb.obs).astype(jnp.float32),
        "action": take(rb.action),
        "reward": take(rb.reward),
        "next_obs": take(rb.next_obs).astype(jnp.float32),
        "terminated": take(rb.terminated),
    }
