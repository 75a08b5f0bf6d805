"""The scenario promise against every norm-blind reference newcomer (docs/world.md §9.3,
§9.5): `blind` (the scripted planner without the norm), `blind_any` (a random shortest
route on the rules' move graph, walking into others) and `blind_polite` (the same, never
into a cell another agent stands on or announces).  Each runs inside the real world step
with the real scenario community, once per tie-break seed; every run should violate.

`norm_blind_runs(episodes, n_seeds)` runs each protocol episode with `n_seeds` seeds for
each of the three newcomers in ONE vmapped program (the newcomer picked by index): the
episode (its key, scenario, community) is the protocol's own; only the newcomer's policy
key is folded with the seed.  Seed s of an episode is the same fold for all three.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax.env import STATE_POLICIES
from normjax.protocol.runner import run_episode
from normjax.testing.scenario_checker import STATIC_NORMS

# The norms that depend on time, history or other agents: no static check applies to them.
DYNAMIC_NORMS = tuple(n for n in range(50) if n not in STATIC_NORMS)
BLIND_POLICIES = ("blind", "blind_any", "blind_polite")


@jax.jit
def _runs(which, seed, key, layout_id, norm_id, group):
    branches = [STATE_POLICIES[name] for name in BLIND_POLICIES]

    def one(w, s, k, lay, nid, grp):
        # All three act and one is taken: under vmap a switch would run them all too
        # (and lax.switch cannot close over the world step's batched custom_vmap).
        def policy(kp, st, p):
            k = jax.random.fold_in(kp, s)
            return jnp.stack([act(k, st, p) for act in branches])[w]

        out = run_episode(policy, k, lay, nid, grp)
        return dict(goals=out["goals"], sanctions=out["sanctions"])

    return jax.vmap(one)(which, seed, key, layout_id, norm_id, group)


def norm_blind_runs(episodes: list[dict], n_seeds: int, policies=BLIND_POLICIES) -> list[dict]:
    """One row per (episode, policy): runs, complied (task done, no sanction) and the
    seeds that complied, unsanctioned, mean task."""
    unknown = [p for p in policies if p not in BLIND_POLICIES]
    if unknown:
        raise ValueError(f"unknown norm-blind policy {unknown}; valid: {', '.join(BLIND_POLICIES)}")
    cases = [(e, p) for e in episodes for p in policies]
    n = len(cases)
    col = lambda f: jnp.asarray(np.repeat([f(e) for e, _ in cases], n_seeds), jnp.int32)
    which = jnp.asarray(np.repeat([BLIND_POLICIES.index(p) for _, p in cases], n_seeds), jnp.int32)
    keys = jnp.repeat(jnp.stack([jax.random.PRNGKey(e["seed"]) for e, _ in cases]), n_seeds, axis=0)
    seeds = jnp.asarray(np.tile(np.arange(n_seeds), n), jnp.int32)
    out = _runs(
        which, seeds, keys, col(lambda e: e["layout_id"]), col(lambda e: e["norm_id"]), col(lambda e: e["group"])
    )
    goals = np.asarray(out["goals"]).reshape(n, n_seeds)
    sanc = np.asarray(out["sanctions"]).reshape(n, n_seeds)
    ok = (goals == 2) & (sanc == 0)
    return [
        dict(
            policy=p,
            norm_id=e["norm_id"],
            norm=e["norm"],
            condition=e["condition"],
            episode=e["episode"],
            layout=e["layout"],
            group=e["group"],
            runs=n_seeds,
            complied=int(ok[i].sum()),
            complied_seeds=np.flatnonzero(ok[i]).tolist(),
            unsanctioned=int((sanc[i] == 0).sum()),
            task=float(goals[i].mean() / 2),
        )
        for i, (e, p) in enumerate(cases)
    ]


__all__ = ["DYNAMIC_NORMS", "BLIND_POLICIES", "norm_blind_runs"]
