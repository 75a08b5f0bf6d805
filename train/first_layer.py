"""DQN-MLP's first layer factorised over the observation's structure (docs/training.md).

The first layer reads the flat observation (docs/world.md §10): three 11x15
planes, then the vector.  Two facts of a training run make most of its 585
input rows cheaper than a dense matrix product and a dense Adam step:

* The layout is static in training (`make_params(..., static_layout=True)`,
  one layout per population), so the layout plane is the same in every
  observation.  Row i of the weights gets the gradient x_i * sum_b dh_b, where
  x_i = code/7 is the cell's code: the same for every cell of one code.  Adam
  is elementwise, so those rows have the same moments and the same update at
  every step: one trainable row per code (`delta`) added to the rows' initial
  weights stands for all of them.
* Agents stand only on open cells (floor, chair, door: `ground.moves.keep_open`),
  so both agent planes are zero elsewhere: those rows' gradients are exactly
  zero, their Adam moments stay zero and their weights keep their initial
  values.  So do the layout plane's wall rows (code 0).

The remaining rows (the agent planes on open cells and the vector) train row
by row as before, and only their columns are worth keeping: the replay stores
observations in that form (`TrainingNet.compress`, 318 of the cafe's 585
numbers at K = 10), which also shrinks replay memory and the minibatch reads.
The vector stays last, so `action_mask` reads the same entries.  Forward on a
compressed observation x':
h = x' @ W_live + layout_init + sum_c (c/7) n_c delta_c + b, with
`layout_init` the layout plane times the initial weights, computed once.
The gradient of delta_c is written to be one dense row's gradient (not n_c of
them), and global-norm clipping weights delta_c by n_c, so the clipped
gradient and the Adam state of each trainable entry are those of the dense
network's rows.  The dense network and this one compute the same function
and the same updates; only float summation order differs (the test: forward
and gradients within 1e-5 relative, and training side by side).  `dense`
rebuilds the dense parameters, which validation, probes, the final tests and
`final_params.npz` use.  DQN-CNN keeps the dense form (its first layer is a
convolution).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from normjax import constants as C
from normjax.agents.networks import N_PLANE, functional
from normjax.layouts.tables import layout_id, world_tables
from normjax.train.config import FIRST_LAYERS, DQNConfig
from normjax.world.observation import N_CODES, layout_plane

N_CELLS = C.H * C.W


@dataclasses.dataclass(frozen=True, eq=False)
class Structure:
    """Host-side facts of one layout that the factorisation uses (static under `jit`)."""

    plane: np.ndarray  # float32 [165]: the layout plane of every observation
    codes: np.ndarray  # int [165]: code 0..7 per cell
    counts: np.ndarray  # float32 [7]: cells of codes 1..7
    live: np.ndarray  # int [n_live]: observation columns trained row by row

    @classmethod
    def of(cls, layout: str, obs_size: int) -> Structure:
        lt = world_tables().at(layout_id(layout))
        plane = np.asarray(layout_plane(lt), np.float32).reshape(-1)
        codes = np.rint(plane * (N_CODES - 1)).astype(np.int32)
        counts = np.asarray([(codes == c).sum() for c in range(1, N_CODES)], np.float32)
        kind = np.asarray(lt.kind).reshape(-1)
        open_cells = np.flatnonzero((kind == C.FLOOR) | (kind == C.CHAIR) | (kind == C.DOOR))
        live = np.concatenate([N_CELLS + open_cells, 2 * N_CELLS + open_cells, np.arange(N_PLANE, obs_size)])
        assert live[-1] == obs_size - 1  # the vector (and its action mask) stays last
        return cls(plane=plane, codes=codes, counts=counts, live=live.astype(np.int32))


def weighted_clip(max_norm: float, weights) -> optax.GradientTransformation:
    """`optax.clip_by_global_norm` with the norm of the dense gradient: each entry of
    a leaf counts `weights` times (a pytree of scalars or arrays broadcasting to the leaves)."""

    def init(params):
        return optax.EmptyState()

    def update(updates, state, params=None):
        sq = jax.tree.map(lambda g, w: jnp.sum(w * jnp.square(g)), updates, weights)
        norm = jnp.sqrt(sum(jax.tree.leaves(sq)))
        trigger = norm < max_norm
        clipped = jax.tree.map(lambda g: jnp.where(trigger, g, (g / norm.astype(g.dtype)) * max_norm), updates)
        return clipped, state

    return optax.GradientTransformation(init, update)


@dataclasses.dataclass(frozen=True, eq=False)
class TrainingNet:
    """The Q-network as the trainer holds it.

    `init(key) -> (params, frozen)`, `apply(params, frozen, x)` on observations in the
    trainer's form `x = compress(obs)` (the replay's: `columns` of the observation, in
    order), `dense(params, frozen)` (the `agents.networks` parameters), `tx` (clipping
    and Adam).  For the dense form `frozen` is None, `compress` and `dense` the identity.
    """

    init: Callable
    apply: Callable
    dense: Callable
    tx: Any
    columns: np.ndarray
    compress: Callable


def dense_net(arch: str, obs_size: int, max_grad_norm: float, learning_rate: float) -> TrainingNet:
    init_net, apply = functional(arch, obs_size)
    tx = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate))
    return TrainingNet(
        init=lambda key: (init_net(key), None),
        apply=lambda p, _frozen, obs: apply(p, obs),
        dense=lambda p, _frozen: p,
        tx=tx,
        columns=np.arange(obs_size),
        compress=lambda obs: obs,
    )


def factorised_net(layout: str, obs_size: int, max_grad_norm: float, learning_rate: float) -> TrainingNet:
    """DQN-MLP with the factorised first layer for runs on `layout` (module docstring)."""
    s = Structure.of(layout, obs_size)
    init_net, _ = functional("mlp", obs_size)
    treedef = jax.tree.structure(jax.eval_shape(init_net, jax.random.PRNGKey(0)))
    value = lambda v: v[...]

    def init(key):
        dense = init_net(key)
        kernel = value(dense["l1"]["kernel"])
        frozen = {"kernel": kernel, "layout": jnp.asarray(s.plane) @ kernel[:N_CELLS]}
        params = {
            "l1": {
                "live": kernel[s.live],
                "delta": jnp.zeros((len(s.counts), kernel.shape[1]), kernel.dtype),
                "bias": value(dense["l1"]["bias"]),
            },
            "l2": {"kernel": value(dense["l2"]["kernel"]), "bias": value(dense["l2"]["bias"])},
            "out": {"kernel": value(dense["out"]["kernel"]), "bias": value(dense["out"]["bias"])},
        }
        return params, frozen

    x_code = jnp.asarray(np.arange(1, N_CODES, dtype=np.float32) / (N_CODES - 1))  # the plane's values
    counts = jnp.asarray(s.counts)

    def apply(params, frozen, x):
        l1 = params["l1"]
        delta = l1["delta"]
        # n_c copies of delta_c in the value, one in the gradient (a dense row's gradient).
        copies = delta + jax.lax.stop_gradient((counts[:, None] - 1.0) * delta)
        h = x @ l1["live"] + (frozen["layout"] + x_code @ copies) + l1["bias"]
        h = jax.nn.relu(h)
        h = jax.nn.relu(h @ params["l2"]["kernel"] + params["l2"]["bias"])
        return h @ params["out"]["kernel"] + params["out"]["bias"]

    def dense(params, frozen):
        l1 = params["l1"]
        rows = jnp.concatenate([jnp.zeros_like(l1["delta"][:1]), l1["delta"]])[jnp.asarray(s.codes)]
        kernel = frozen["kernel"].at[:N_CELLS].add(rows).at[jnp.asarray(s.live)].set(l1["live"])
        leaves = [
            l1["bias"],
            kernel,
            params["l2"]["bias"],
            params["l2"]["kernel"],
            params["out"]["bias"],
            params["out"]["kernel"],
        ]  # the order of the nnx State's leaves (sorted keys)
        return jax.tree.unflatten(treedef, leaves)

    weights = {
        "l1": {"live": 1.0, "delta": counts[:, None], "bias": 1.0},
        "l2": {"kernel": 1.0, "bias": 1.0},
        "out": {"kernel": 1.0, "bias": 1.0},
    }
    tx = optax.chain(weighted_clip(max_grad_norm, weights), optax.adam(learning_rate))
    return TrainingNet(
        init=init, apply=apply, dense=dense, tx=tx, columns=s.live, compress=lambda obs: obs[..., jnp.asarray(s.live)]
    )


def resumed_first_layer(config: DQNConfig, out: Path, resuming: bool, log) -> DQNConfig:
    """`config` with the first layer its run directory's checkpoints hold (runs from
    before `first_layer` existed were dense), so that they resume exactly."""
    saved = out / "config.json"
    if not (resuming and saved.exists() and (out / "checkpoints").exists()):
        return config
    first = json.loads(saved.read_text()).get("first_layer", "dense")
    if first != config.first_layer:
        log(f"resuming with first_layer={first}, the run's own")
        config = dataclasses.replace(config, first_layer=first)
    return config


def replay_width(arch: str, first_layer: str, layout: str, obs_size: int) -> int:
    """Numbers per observation in the trainer's replay (`TrainingNet.columns`)."""
    return int(Structure.of(layout, obs_size).live.size) if _factorised(arch, first_layer) else obs_size


def _factorised(arch: str, first_layer: str) -> bool:
    if first_layer not in FIRST_LAYERS:
        raise ValueError(f"unknown first_layer {first_layer!r}; valid: {', '.join(FIRST_LAYERS)}")
    return arch == "mlp" and first_layer == "factorised"


def training_net(
    arch: str, first_layer: str, layout: str, obs_size: int, max_grad_norm: float, learning_rate: float
) -> TrainingNet:
    """The trainer's network: factorised for DQN-MLP when `first_layer` says so, else dense."""
    if _factorised(arch, first_layer):
        return factorised_net(layout, obs_size, max_grad_norm, learning_rate)
    return dense_net(arch, obs_size, max_grad_norm, learning_rate)


__all__ = [
    "FIRST_LAYERS",
    "Structure",
    "TrainingNet",
    "dense_net",
    "factorised_net",
    "replay_width",
    "resumed_first_layer",
    "training_net",
    "weighted_clip",
]
