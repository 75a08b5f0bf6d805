"""docs/world.md §9 test protocol: scenario construction, seeds/groups, reference rows.

The reference rows (Table 1) are pinned on a subset of norms (two or three
per family, seen and unseen) in ONE compiled program that runs the oracle and
the norm-blind newcomer side by side (the policy's awareness is a vmapped
flag).  The full 50-norm run is marked slow.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.layouts import LAYOUTS
from normjax.norms import FAMILIES, N_NORMS, NORMS
from normjax.community.planner import plan_actions
from normjax.protocol.runner import METRICS, format_table, resolve_norms, run_episode, summarize
from normjax.protocol.geometry import host_scenarios
from normjax.protocol.scenarios import build_test_episode, missing_scenarios
from normjax.protocol.seeds import base_seed, episode_seeds, group_orders
from normjax.protocol.seeds import test_episodes as protocol_episodes

SUBSET = [0, 9, 13, 22, 30, 37, 40, 44, 49]  # >= 2 norms per family


def test_seed_and_group_scheme():
    eps = protocol_episodes()
    assert len(eps) == 6 * N_NORMS
    for n in range(N_NORMS):
        s = base_seed(n)
        mine = [e for e in eps if e["norm_id"] == n]
        assert [e["seed"] for e in mine] == [s + i for i in range(1, 7)]
        assert episode_seeds(n) == {"seen": [s + 1, s + 2, s + 3], "unseen": [s + 4, s + 5, s + 6]}
        for cond in ("seen", "unseen"):
            sub = [e for e in mine if e["condition"] == cond]
            assert sorted(e["group"] for e in sub) == [0, 1, 2]  # each group once
            want = "cafe" if cond == "seen" else NORMS[n].unseen_layout
            assert {e["layout"] for e in sub} == {want}
    # deterministic, and the order is drawn from the norm's seed
    assert group_orders(7) == group_orders(7)
    assert len({tuple(group_orders(n)["seen"]) for n in range(N_NORMS)}) > 1
    assert base_seed(3, seed=1) != base_seed(3)


def test_every_protocol_episode_has_a_construction():
    assert missing_scenarios() == []
    t = host_scenarios()
    for e in protocol_episodes():
        ix = (e["layout_id"], e["norm_id"], e["group"])
        assert t["valid"][ix]
        assert t["gap"][ix] >= 1, e  # the blind route is certified to violate


def test_build_is_deterministic_and_places_the_newcomer():
    build = jax.jit(build_test_episode)
    e = protocol_episodes([30])[4]
    key = jax.random.PRNGKey(e["seed"])
    s1, p1 = build(key, e["layout_id"], e["norm_id"], e["group"])
    s2, _ = build(key, e["layout_id"], e["norm_id"], e["group"])
    for a, b in zip(jax.tree.leaves(s1), jax.tree.leaves(s2)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ag = s1.agents
    t = host_scenarios()
    ix = (e["layout_id"], e["norm_id"], e["group"])
    assert bool(ag.active[0]) and int(ag.group[0]) == e["group"]
    assert ag.pos[0].tolist() == t["start"][ix].tolist()
    assert int(p1.max_steps) == 100 and not bool(p1.replace_newcomer)
    assert int(p1.n_blind) == 0 and int(p1.norm_id) == 30
    pos = np.asarray(ag.pos)[np.asarray(ag.active)]
    assert len({tuple(p) for p in pos}) == len(pos)  # nobody shares a cell


@functools.lru_cache(maxsize=None)
def _reference_run():
    """Oracle and blind newcomers on SUBSET, one compiled program."""
    eps = protocol_episodes(SUBSET)

    def one(aware, key, lay, nid, grp):
        def policy(k, s, p):
            n = s.agents.active.shape[0]
            return plan_actions(k, s, p, (jnp.arange(n) == 0) & aware)[0]

        return run_episode(policy, key, lay, nid, grp)

    def col(f):
        return jnp.asarray([f(e) for e in eps] * 2)

    aware = jnp.asarray([True] * len(eps) + [False] * len(eps))
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps] * 2)
    out = jax.jit(jax.vmap(one))(aware, keys, col(lambda e: e["layout_id"]),
                                 col(lambda e: e["norm_id"]), col(lambda e: e["group"]))
    out = {k: np.asarray(v) for k, v in out.items()}
    n = len(eps)
    oracle = summarize(eps, {k: v[:n] for k, v in out.items()})
    blind = summarize(eps, {k: v[n:] for k, v in out.items()})
    return oracle, blind


@pytest.mark.parametrize("policy, joint, episode_ok", [
    ("oracle", 100.0, lambda r: r["finished"] and r["sanctions"] == 0),
    ("blind", 0.0, lambda r: r["sanctions"] >= 1 and r["task"] == 1.0),
])
def test_reference_rows(policy, joint, episode_ok):
    summary = dict(zip(("oracle", "blind"), _reference_run()))[policy]
    for cond in ("seen", "unseen"):
        for fam in ("overall",) + FAMILIES:
            assert summary[cond][fam]["joint"] == joint, (cond, fam, summary[cond][fam])
            assert summary[cond][fam]["task"] == 100.0, (cond, fam, summary[cond][fam])
    assert all(episode_ok(r) for r in summary["episodes"])


def test_result_json_shape_and_table():
    oracle, _ = _reference_run()
    assert set(oracle) == {"seen", "unseen", "episodes"}
    for cond in ("seen", "unseen"):
        assert set(oracle[cond]) == {"overall", *FAMILIES}
        for agg in oracle[cond].values():
            assert set(METRICS) <= set(agg)
    row = oracle["episodes"][0]
    for k in ("norm", "family", "condition", "layout", "seed", "group", "task", "joint",
              "path_length", "collision", "community_path_length", "community_welfare"):
        assert k in row
    assert all(1 <= r["path_length"] <= 100 for r in oracle["episodes"])
    json.loads(json.dumps(oracle))
    table = format_table(oracle)
    assert "seen" in table and "unseen" in table and "coordination" in table


def test_unknown_norm_names_error_before_tracing():
    with pytest.raises(ValueError, match="forbidden_zone_q"):
        resolve_norms(["no_such_norm"])
    from normjax.cli import _norm_list

    with pytest.raises(ValueError, match="valid names are: forbidden_zone_q"):
        _norm_list(["no_such_norm"])
    assert _norm_list(["bend_left_1", "0"]) == [25, 0]


def test_scenario_layouts_are_seen_and_unseen():
    for e in protocol_episodes([0, 49]):
        assert e["layout_id"] == (0 if e["condition"] == "seen" else LAYOUTS.index(NORMS[e["norm_id"]].unseen_layout))


@pytest.mark.slow
def test_full_protocol_reference_rows():
    from normjax.env import blind_policy, oracle_policy
    from normjax.protocol.runner import evaluate

    o = evaluate(oracle_policy)
    b = evaluate(blind_policy)
    for cond in ("seen", "unseen"):
        for fam in ("overall",) + FAMILIES:
            assert o[cond][fam]["joint"] == 100.0 and o[cond][fam]["task"] == 100.0, (cond, fam)
            assert b[cond][fam]["joint"] == 0.0 and b[cond][fam]["task"] == 100.0, (cond, fam)
    assert len(o["episodes"]) == 300
