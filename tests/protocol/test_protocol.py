"""docs/world.md §9 test protocol: scenario construction, seeds/groups, reference rows.

The reference rows (Table 1) are pinned on a subset of norms (three per
family, seen and unseen) in ONE compiled program that runs the oracle and
the norm-blind newcomer side by side (tests/support/shared_protocol.py, shared with
the LLM runner's and the observer's tests).  The full 50-norm run is in the
slow tier.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.layouts import LAYOUTS, load_layout
from normjax.layouts.routes import host_route_tables
from normjax.norms import FAMILIES, N_NORMS, NORMS
from normjax.norms.table import NORM_TABLE
from normjax.protocol.geometry import NEVER, QUEUE_RELEASE_STEPS, Geo
from normjax.protocol.runner import METRICS, format_table, resolve_norms, summarize
from normjax.protocol.scenario_tables import host_scenarios
from normjax.protocol.scenarios import HABIT_HOLD, build_test_episode, missing_scenarios, release_holds
from normjax.protocol.seeds import base_seed, episode_seeds, group_orders
from normjax.protocol.seeds import test_episodes as protocol_episodes
from tests.support.shared_protocol import REFERENCE_NORMS, reference

SUBSET = list(REFERENCE_NORMS)  # three norms per family


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


def _reference_run():
    """Oracle and blind newcomers on SUBSET (one compiled program shared with other test files)."""
    return tuple(summarize(*reference(name, SUBSET)) for name in ("oracle", "blind"))


@pytest.mark.parametrize(
    "policy, joint, episode_ok",
    [
        ("oracle", 100.0, lambda r: r["finished"] and r["sanctions"] == 0),
        ("blind", 0.0, lambda r: r["sanctions"] >= 1 and r["task"] == 1.0),
    ],
)
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
    for k in (
        "norm",
        "family",
        "condition",
        "layout",
        "seed",
        "group",
        "task",
        "joint",
        "path_length",
        "collision",
        "community_path_length",
        "community_welfare",
    ):
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


@pytest.mark.full_protocol
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


@pytest.mark.full_protocol
def test_full_protocol_blind_any_row():
    """blind_any (random shortest routes on the rules' graph): no joint success outside
    the episodes flagged non_discriminative (docs/world.md §9.3, §13), tasks done."""
    from normjax.env import STATE_POLICIES
    from normjax.protocol.runner import evaluate

    r = evaluate(STATE_POLICIES["blind_any"])
    assert [e for e in r["episodes"] if e["joint"] and not e["non_discriminative"]] == []
    assert r["unseen"]["overall"]["joint"] == 0.0
    for cond in ("seen", "unseen"):
        assert r[cond]["overall"]["task"] >= 95.0, (cond, r[cond]["overall"])


def test_newcomer_enters_through_a_door_in_every_episode():
    """All 300 episodes: the newcomer's first cell is its entry door's inward cell."""
    t = host_scenarios()
    for e in protocol_episodes():
        ix = (e["layout_id"], e["norm_id"], e["group"])
        inward = load_layout(e["layout"]).door_inward
        assert t["start"][ix].tolist() == inward[t["entry"][ix]].tolist(), e


@functools.cache
def _all_starts():
    """Step-0 states of all 300 protocol episodes, built in one vmapped program."""
    eps = protocol_episodes()
    col = lambda f: jnp.asarray([f(e) for e in eps], jnp.int32)
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps])
    states, _ = jax.jit(jax.vmap(build_test_episode))(
        keys, col(lambda e: e["layout_id"]), col(lambda e: e["norm_id"]), col(lambda e: e["group"])
    )
    return eps, jax.tree.map(np.asarray, states.agents)


def test_built_episodes_start_the_newcomer_on_a_door_inward_cell():
    eps, ag = _all_starts()
    for i, e in enumerate(eps):
        lay = load_layout(e["layout"])
        assert ag.active[i, 0]
        assert ag.pos[i, 0].tolist() == lay.door_inward[ag.entry_door[i, 0]].tolist(), e
        on = ag.pos[i][ag.active[i]]
        assert len({tuple(p) for p in on}) == len(on), e  # nobody shares a cell


def test_queue_episodes_start_with_a_free_head_and_a_held_customer_behind_it():
    """docs/world.md §9.3 Queues: the head pi(1) is free, one customer stands on pi(2)
    (its goal), held until a + QUEUE_RELEASE_STEPS (a: the newcomer's route length to
    the counter), when the background agents enter too; nobody else is on the grid."""
    eps, ag = _all_starts()
    t = host_scenarios()
    routes = host_route_tables()
    n_queue = 0
    for i, e in enumerate(eps):
        j = int(NORM_TABLE.row(e["norm_id"])["queue_path"])
        ix = (e["layout_id"], e["norm_id"], e["group"])
        if j < 0:
            assert t["release_t"][ix] == NEVER, e
            continue
        n_queue += 1
        lay = load_layout(e["layout"])
        path = lay.queue_paths[j][: lay.queue_len[j]].tolist()
        others = [s for s in range(1, ag.pos.shape[1]) if ag.active[i, s]]
        assert path[0] == lay.service.tolist() and len(others) == 1, e
        s = others[0]
        assert ag.pos[i, s].tolist() == path[1] == ag.goal_cell[i, s].tolist(), e
        assert ag.habit[i, s] == HABIT_HOLD and ag.leg[i, s] == 0 and ag.timer[i, s] == 0, e
        a = Geo(lay, routes[e["layout_id"]]).d(tuple(path[0]), tuple(t["start"][ix]))
        assert t["release_t"][ix] == a + QUEUE_RELEASE_STEPS == t["bg_from"][ix], e
        assert t["gap"][ix] == 1 and not t["non_discriminative"][ix], e
    assert n_queue == 16 * 6


def test_the_queued_customer_is_released_at_its_step():
    e = [x for x in protocol_episodes([37]) if x["condition"] == "seen"][0]  # edge_queue_left
    state, params = jax.jit(build_test_episode)(jax.random.PRNGKey(e["seed"]), e["layout_id"], e["norm_id"], e["group"])
    due = int(host_scenarios()["release_t"][e["layout_id"], e["norm_id"], e["group"]])
    assert int(state.agents.habit[1]) == HABIT_HOLD and 5 <= due < 30
    assert int(release_holds(state.replace(t=jnp.int32(due - 1)), params).agents.habit[1]) == HABIT_HOLD
    assert int(release_holds(state.replace(t=jnp.int32(due)), params).agents.habit[1]) == 0


def test_seat_scenarios_without_a_strict_door_seat_customers_on_the_near_allowed_chairs():
    """no_bottom_left_seats on the cafe: from A and B an allowed chair ties with a
    bottom-left one, so held customers sit there and the nearest free chair is in BL."""
    t = host_scenarios()
    routes = host_route_tables()
    n = NORMS.index(next(s for s in NORMS if s.name == "no_bottom_left_seats"))
    lay = load_layout("cafe")
    g = Geo(lay, routes[0])
    for grp in range(3):
        ix = (0, n, grp)
        start = tuple(t["start"][ix])
        assert start in g.inward[:2]
        seated = {tuple(p) for p in t["x_pos"][ix][t["x_used"][ix]]}
        assert seated and t["x_hold"][ix][t["x_used"][ix]].all()
        assert all(lay.region[c] != 1 for c in seated)  # customers sit in allowed regions
        free = [c for c in g.chairs if c not in seated]
        nearest = min(free, key=lambda c: g.d(c, start))
        assert lay.region[nearest] == 1  # BL, disallowed
        near_ok = min(g.d(c, start) for c in free if lay.region[c] != 1)
        assert near_ok - g.d(nearest, start) == t["gap"][ix] >= 1


def test_seated_customers_are_released_when_the_newcomer_sits():
    e = [x for x in protocol_episodes([10]) if x["condition"] == "seen"][0]
    state, params = jax.jit(build_test_episode)(jax.random.PRNGKey(e["seed"]), e["layout_id"], e["norm_id"], e["group"])
    assert int(state.agents.habit[1]) == HABIT_HOLD
    held = release_holds(state, params)  # newcomer still at the door
    assert int(held.agents.habit[1]) == HABIT_HOLD
    chair = jnp.asarray(load_layout("cafe").chairs[0], jnp.int32)
    sitting = state.replace(agents=state.agents.replace(pos=state.agents.pos.at[0].set(chair)))
    assert int(release_holds(sitting, params).agents.habit[1]) == 0
