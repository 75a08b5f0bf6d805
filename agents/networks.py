"""Q-networks of the paper's DQN baselines (docs/world.md §11, paper A14), in flax NNX.

DQN-MLP: the flat observation, 64-64 ReLU, linear 5.
DQN-CNN: two padded 3x3 convolutions (16 and 32 channels, ReLU, no pooling)
on the three 11x15 map planes, flattened and concatenated with the vector
part, then 256 ReLU, 64-64 ReLU, linear 5.

Both take the *flat* observation (planes first, then the vector; see
`normjax.world.observation`) so the replay buffer stores one array per transition.
For training under `jit`/`vmap`, `functional(model)` splits a module into a
static graph definition and a parameter pytree with a pure apply function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from normjax import constants as C

N_PLANE = 3 * C.H * C.W
ARCHITECTURES = ("mlp", "cnn")


class MLPQNetwork(nnx.Module):
    """DQN-MLP: obs -> 64 -> 64 -> 5."""

    def __init__(self, obs_size: int, rngs: nnx.Rngs, hidden: int = 64):
        self.l1 = nnx.Linear(obs_size, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, C.N_ACTIONS, rngs=rngs)

    def __call__(self, obs):
        x = nnx.relu(self.l1(obs))
        x = nnx.relu(self.l2(x))
        return self.out(x)


def conv3x3_same(x, kernel, bias):
    """A padded 3x3 convolution as patches x matrix ([..., H, W, C] -> [..., H, W, O]).

    The same cross-correlation as `nnx.Conv(padding="SAME")` (to float rounding), written
    as one product of the nine shifted copies of x, concatenated along the channels in the
    kernel's own row order (i, j, c), with the kernel as a [9 C, O] matrix.  Under `vmap`
    over a population's kernels it stays a batched matrix product (a vmapped
    `conv_general_dilated` became a grouped convolution that XLA:CPU ran many times
    slower), and the patches are built with C contiguous numbers per copy: stacked as
    [..., 9, C] and contracted over two axes, XLA:CPU transposed them to [..., C, 9]
    first, a copy with a stride of 9 that took half of DQN-CNN's update
    (docs/history/speed.md, round 14).
    """
    h, w = x.shape[-3], x.shape[-2]
    pad = [(0, 0)] * (x.ndim - 3) + [(1, 1), (1, 1), (0, 0)]
    xp = jnp.pad(x, pad)
    patches = jnp.concatenate([xp[..., i : i + h, j : j + w, :] for i in range(3) for j in range(3)], axis=-1)
    return patches @ kernel.reshape((-1, kernel.shape[-1])) + bias


class CNNQNetwork(nnx.Module):
    """DQN-CNN: conv16-conv32 on the planes, concat vector, 256, 64-64, 5."""

    def __init__(self, obs_size: int, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(3, 16, kernel_size=(3, 3), padding="SAME", rngs=rngs)
        self.conv2 = nnx.Conv(16, 32, kernel_size=(3, 3), padding="SAME", rngs=rngs)
        vec = obs_size - N_PLANE
        self.l0 = nnx.Linear(32 * C.H * C.W + vec, 256, rngs=rngs)
        self.l1 = nnx.Linear(256, 64, rngs=rngs)
        self.l2 = nnx.Linear(64, 64, rngs=rngs)
        self.out = nnx.Linear(64, C.N_ACTIONS, rngs=rngs)

    def __call__(self, obs):
        lead = obs.shape[:-1]
        planes = obs[..., :N_PLANE].reshape(lead + (3, C.H, C.W))
        planes = jnp.moveaxis(planes, -3, -1)  # NHWC for nnx.Conv
        x = nnx.relu(conv3x3_same(planes, self.conv1.kernel[...], self.conv1.bias[...]))
        x = nnx.relu(conv3x3_same(x, self.conv2.kernel[...], self.conv2.bias[...]))
        x = x.reshape(lead + (-1,))
        x = jnp.concatenate([x, obs[..., N_PLANE:]], axis=-1)
        x = nnx.relu(self.l0(x))
        x = nnx.relu(self.l1(x))
        x = nnx.relu(self.l2(x))
        return self.out(x)


def make_q_network(arch: str, obs_size: int, seed: int | jax.Array = 0) -> nnx.Module:
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; valid: {', '.join(ARCHITECTURES)}")
    if isinstance(seed, jax.Array) and seed.dtype == jnp.uint32 and seed.shape == (2,):
        seed = jax.random.wrap_key_data(seed)  # a raw PRNGKey
    rngs = nnx.Rngs(params=seed)
    return MLPQNetwork(obs_size, rngs) if arch == "mlp" else CNNQNetwork(obs_size, rngs)


def functional(arch: str, obs_size: int):
    """(init(key) -> params, apply(params, obs) -> q) as pure functions."""
    graphdef, _ = nnx.split(make_q_network(arch, obs_size, 0))

    def init(key):
        """Fresh parameters from a PRNG key (jittable, vmappable over keys)."""
        return nnx.split(make_q_network(arch, obs_size, key))[1]

    def apply(params, obs):
        return nnx.merge(graphdef, params)(obs)

    return init, apply


def action_mask(obs):
    """The physical action mask: the last five entries of the flat observation."""
    return obs[..., -C.N_ACTIONS :] > 0.5


def masked_argmax(q, mask):
    """Greedy action among the physically possible ones (docs/world.md §11)."""
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1)


def masked_max(q, mask):
    """max_a Q over possible actions (used in the TD target)."""
    return jnp.max(jnp.where(mask, q, -jnp.inf), axis=-1)


def epsilon_greedy(key, q, mask, epsilon):
    """With probability epsilon a uniform action over all five (docs/world.md §11: exploration
    samples all five), else the masked greedy action."""
    k1, k2 = jax.random.split(key)
    explore = jax.random.uniform(k1) < epsilon
    return jnp.where(explore, jax.random.randint(k2, (), 0, C.N_ACTIONS), masked_argmax(q, mask))
