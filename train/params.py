"""A finished run's final Q-network parameters, stored with its results.

`final_params.npz` holds every member's online-network parameters (the
greedy policies of the final tests), one array per leaf with the runs on the
leading axis, named `m<member>/<leaf path>`.  A DQN-MLP run is about 170 KB
(42k float32), so the 50 runs of one reward condition are about 8 MB: small
enough to commit, and enough to re-run the final tests when the test scenarios
change (`normjax final-test RUN_DIR`) without retraining.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

PARAMS_FILE = "final_params.npz"


def _leaf_name(member: int, path) -> str:
    return f"m{member}/" + jax.tree_util.keystr(path, simple=True, separator="/")


def save_final_params(q_params_per_member, out: Path, step: int) -> Path:
    """Write the members' parameters (host arrays, runs on axis 0) and the step they are from."""
    arrays = {"step": np.asarray(step, np.int64)}
    for m, tree in enumerate(q_params_per_member):
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            arrays[_leaf_name(m, path)] = np.asarray(leaf)
    path = Path(out) / PARAMS_FILE
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)  # never a half-written file under the final name
    return path


def load_final_params(run_dir, pop, abstract_per_member) -> tuple:
    """The stored parameters, shaped like `abstract_per_member` (one q_params tree per member).

    Raises ValueError naming the file and the leaf when a leaf is missing or has the wrong
    shape (e.g. a file from another config), or when the run did not finish.
    """
    path = Path(run_dir) / PARAMS_FILE
    if not path.exists():
        raise ValueError(f"{path}: no stored final parameters (runs trained before they were stored have none)")
    with np.load(path) as f:
        stored = {k: f[k] for k in f.files}
    step = int(stored.get("step", -1))
    if step < pop.config.total_steps:
        raise ValueError(f"{path}: parameters from transition {step:,}, the run's total is {pop.config.total_steps:,}")
    out = []
    for m, tree in enumerate(abstract_per_member):
        leaves = []
        for p, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            name = _leaf_name(m, p)
            if name not in stored:
                raise ValueError(f"{path}: leaf {name!r} missing; stored: {sorted(k for k in stored if k != 'step')}")
            if stored[name].shape != leaf.shape or stored[name].dtype != leaf.dtype:
                raise ValueError(
                    f"{path}: leaf {name!r} is {stored[name].dtype}{list(stored[name].shape)}, "
                    f"the run's config needs {leaf.dtype}{list(leaf.shape)}"
                )
            leaves.append(stored[name])
        out.append(jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(tree), leaves))
    return tuple(out)


def run_config(run_dir):
    """The DQNConfig a run directory was trained with.  A config.json written before
    `first_layer` existed was trained with the dense first layer (the default since is
    "factorised"), so its absence reads as "dense"."""
    from normjax.train.config import make_config

    fields = json.loads((Path(run_dir) / "config.json").read_text())
    fields.setdefault("first_layer", "dense")
    return make_config(fields)
