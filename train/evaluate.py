"""Evaluation of a trained DQN population with the protocol's test episodes.

Each run's greedy policy (masked argmax of its own Q-network) plays its norm's
test episodes (`normjax.protocol.scenarios`), all runs and episodes in one vmapped
program, through `normjax.protocol.run_episode`.  Final tests use the
canonical protocol (3 seen + 3 unseen episodes per norm, protocol seed 0);
validation uses seen-condition episodes of other protocol seeds (disjoint from
the final tests) on the cafe and the two validation cafes (`validation_episodes`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax.env import obs_policy
from normjax.layouts.tables import layout_id
from normjax.protocol.runner import run_episode, summarize
from normjax.protocol.scenarios import test_episodes
from normjax.train.programs import cached
from normjax.world.habits import check_distractor
from normjax.world.state import WorldConfig


def episodes_for(norm_ids, seeds=(0,), conditions=("seen", "unseen")) -> list[list[dict]]:
    """Per run: its norm's test episodes over the protocol seeds and conditions."""
    out = []
    for nid in norm_ids:
        eps = [e for s in seeds for e in test_episodes([int(nid)], s) if e["condition"] in conditions]
        out.append(eps)
    return out


def validation_episodes(norm_ids, seeds, layouts) -> list[list[dict]]:
    """Per run: its norm's seen-condition episodes of the protocol seeds, on every layout.

    Each layout gets the same seeds and newcomer groups (a paired comparison);
    the scenario is built on that layout (`normjax.protocol.scenarios`).
    """
    ids = {name: layout_id(name) for name in layouts}  # clear errors first
    out = []
    for eps in episodes_for(norm_ids, seeds, ("seen",)):
        out.append(
            [dict(e, condition="validation", layout=name, layout_id=lid) for name, lid in ids.items() for e in eps]
        )
    return out


_PROGRAMS: dict = {}  # (config, capacity) -> jitted program


def _program(tr, capacity: int):
    # Keyed by the config, not the trainer object: a resumed or repeated run of the same
    # config in one process (make_train builds a new trainer) traces the program once.
    key = (tr.config, capacity)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = _build_program(tr, capacity)
    return _PROGRAMS[key]


def _build_program(tr, capacity: int):
    cfg = WorldConfig(capacity=capacity)
    # Distractors as in training (docs/world.md §8.5); when on, over-imitation is counted too.
    habit, share = check_distractor(tr.config.distractor, tr.config.distractor_share)
    on = habit != 0 and share > 0.0

    def one_run(q_params, keys, lay, nid, grp):
        policy = obs_policy(tr.greedy_policy(q_params))
        return jax.vmap(lambda k, lay, n, g: run_episode(policy, k, lay, n, g, cfg, None, habit, share, on))(
            keys, lay, nid, grp
        )

    return jax.jit(jax.vmap(one_run))


def run_population(tr, q_params, per_run: list[list[dict]]) -> dict[str, np.ndarray]:
    """Raw per-episode metrics [runs, episodes] for every run's own episodes."""
    arr = lambda f, dt=jnp.int32: jnp.asarray([[f(e) for e in eps] for eps in per_run], dt)
    keys = jnp.stack([jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps]) for eps in per_run])
    program = cached("train-episodes", _program(tr, tr.config.capacity), tr.config)
    out = program(q_params, keys, arr(lambda e: e["layout_id"]), arr(lambda e: e["norm_id"]), arr(lambda e: e["group"]))
    return {k: np.asarray(v) for k, v in jax.block_until_ready(out).items()}


def summarize_groups(rows: list[dict], per_run: list[list[dict]], raw: dict, key: str) -> dict:
    """Protocol summaries per value of `rows[i][key]` (e.g. reward condition)."""
    result = {}
    for value in sorted({r[key] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r[key] == value]
        eps = [e for i in idx for e in per_run[i]]
        flat = {k: np.concatenate([v[i] for i in idx]) for k, v in raw.items()}
        summary = summarize(eps, flat)
        if "waits" in flat:
            active = np.maximum(flat["path_length"], 1)
            share = flat["waits"] / active
            for cond in ("seen", "unseen"):
                sel = np.array([e["condition"] == cond for e in eps])
                if sel.any():
                    summary[cond]["overall"]["wait_share"] = 100.0 * float(share[sel].mean())
                    summary[cond]["overall"]["all_wait_episodes"] = 100.0 * float(
                        (flat["waits"][sel] >= flat["path_length"][sel]).mean()
                    )
        result[value] = summary
    return result
