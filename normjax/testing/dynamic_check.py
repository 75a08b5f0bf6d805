"""The scenario promise for the norms that depend on time, history or other agents
(docs/world.md §9.3): the `blind_any` newcomer, a uniformly random shortest route on
the rules' move graph re-planned every step, run inside the real world step with the
real scenario community, once per tie-break seed.  Every run should violate.

`blind_any_runs(episodes, n_seeds)` runs each protocol episode with `n_seeds`
tie-break seeds in one vmapped program: the episode (its key, scenario, community)
is the protocol's own; only the newcomer's policy key is folded with the seed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax.env.blind_any import blind_any_policy
from normjax.protocol.runner import run_episode
from normjax.testing.scenario_checker import STATIC_NORMS

DYNAMIC_NORMS = tuple(n for n in range(50) if n not in STATIC_NORMS)


@jax.jit
def _runs(seed, key, layout_id, norm_id, group):
    def one(s, k, lay, nid, grp):
        policy = lambda kp, st, p: blind_any_policy(jax.random.fold_in(kp, s), st, p)
        out = run_episode(policy, k, lay, nid, grp)
        return dict(goals=out["goals"], sanctions=out["sanctions"])

    return jax.vmap(one)(seed, key, layout_id, norm_id, group)


def blind_any_runs(episodes: list[dict], n_seeds: int) -> list[dict]:
    """Per episode: runs, complied (task done, no sanction), unsanctioned, mean task."""
    n = len(episodes)
    col = lambda f: jnp.asarray(np.repeat([f(e) for e in episodes], n_seeds), jnp.int32)
    keys = jnp.repeat(jnp.stack([jax.random.PRNGKey(e["seed"]) for e in episodes]), n_seeds, axis=0)
    seeds = jnp.asarray(np.tile(np.arange(n_seeds), n), jnp.int32)
    out = _runs(seeds, keys, col(lambda e: e["layout_id"]), col(lambda e: e["norm_id"]), col(lambda e: e["group"]))
    goals = np.asarray(out["goals"]).reshape(n, n_seeds)
    sanc = np.asarray(out["sanctions"]).reshape(n, n_seeds)
    return [
        dict(
            norm_id=e["norm_id"],
            norm=e["norm"],
            condition=e["condition"],
            episode=e["episode"],
            layout=e["layout"],
            group=e["group"],
            runs=n_seeds,
            complied=int(((goals[i] == 2) & (sanc[i] == 0)).sum()),
            unsanctioned=int((sanc[i] == 0).sum()),
            task=float(goals[i].mean() / 2),
        )
        for i, e in enumerate(episodes)
    ]


__all__ = ["DYNAMIC_NORMS", "blind_any_runs"]
