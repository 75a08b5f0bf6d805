"""Protocol reference runs shared by several test files (one compiled program per session).

`reference(name, norms)`: the oracle's or the norm-blind newcomer's raw
per-episode metrics (`normjax.protocol.run_episode`, as `evaluate` runs it) on
protocol test episodes.  All of REFERENCE_NORMS (three norms per family, the
norms of tests/protocol/test_protocol.py, llm/test_runner.py and test_observer_policies.py)
run once, oracle and blind side by side in ONE vmapped program (the policy's
awareness is a batched flag), and each caller takes the rows of its norms.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax.community.planner import plan_actions
from normjax.protocol.runner import run_episode
from normjax.protocol.seeds import test_episodes as protocol_episodes

REFERENCE_NORMS = (0, 9, 12, 13, 22, 23, 30, 37, 39, 40, 44, 49)


@functools.cache
def _run():
    eps = protocol_episodes(list(REFERENCE_NORMS))

    def one(aware, key, lay, nid, grp):
        def policy(k, s, p):  # aware: env.oracle_policy; not aware: env.blind_policy
            return plan_actions(k, s, p, (jnp.arange(s.agents.active.shape[0]) == 0) & aware)[0]

        return run_episode(policy, key, lay, nid, grp)

    col = lambda f: jnp.asarray([f(e) for e in eps] * 2)
    out = jax.jit(jax.vmap(one))(
        jnp.asarray([True] * len(eps) + [False] * len(eps)),
        jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps] * 2),
        col(lambda e: e["layout_id"]),
        col(lambda e: e["norm_id"]),
        col(lambda e: e["group"]),
    )
    out = {k: np.asarray(v) for k, v in out.items()}
    n = len(eps)
    return eps, {"oracle": {k: v[:n] for k, v in out.items()}, "blind": {k: v[n:] for k, v in out.items()}}


def reference(name: str, norms) -> tuple[list[dict], dict[str, np.ndarray]]:
    """(protocol_episodes(norms), raw metrics of policy `name` on them, in that order)."""
    all_eps, raw = _run()
    row = {(e["norm_id"], e["condition"], e["episode"]): i for i, e in enumerate(all_eps)}
    eps = protocol_episodes(list(norms))
    idx = np.asarray([row[(e["norm_id"], e["condition"], e["episode"])] for e in eps])
    return eps, {k: v[idx] for k, v in raw[name].items()}
