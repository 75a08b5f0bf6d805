"""docs/world.md §9.3: no norm-blind newcomer (`blind`, `blind_any`, `blind_polite`)
complies by accident in a test episode of a norm that depends on time, history or other
agents (normjax/testing/blind_check.py).  The default tier checks a few queue episodes with two
seeds; the slow tier all 174 dynamic-norm episodes with 32 seeds (0..31) each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from normjax.protocol.scenario_tables import host_scenarios
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.testing.blind_check import BLIND_POLICIES, DYNAMIC_NORMS, norm_blind_runs
from tests.support.processes import clean_env

FULL_SEEDS = 32
# The full certification runs 16,704 episodes: at the tests' LLVM level 0 (pytest_plugin) they
# run about 15x slower than at XLA's default level, the level `normjax evaluate` uses, so they run
# in a fresh process at the default level (tests/test_xla_cpu.py: both levels give the same
# trajectories).
CERTIFY = """
import json, sys
from normjax.protocol.seeds import test_episodes
from normjax.testing.blind_check import DYNAMIC_NORMS, norm_blind_runs
eps = test_episodes(list(DYNAMIC_NORMS))
json.dump({"episodes": eps, "rows": norm_blind_runs(eps, int(sys.argv[1]))}, sys.stdout, default=int)
"""


def _unflagged_compliant(rows, episodes):
    t = host_scenarios()
    flag = {
        (e["norm_id"], e["condition"], e["episode"]): bool(
            t["non_discriminative"][e["layout_id"], e["norm_id"], e["group"]]
        )
        for e in episodes
    }
    return [r for r in rows if r["complied"] and not flag[r["norm_id"], r["condition"], r["episode"]]]


def test_queue_episodes_that_a_polite_newcomer_passed_before():
    """Episodes the polite norm-blind newcomer passed under the queue construction before
    issue 51 (edge_queue_right seen 0, staircase_left unseen 0): now every norm-blind
    newcomer violates there, and completes its task."""
    eps = [
        e
        for e in protocol_episodes([31, 32, 38])
        if (e["norm"], e["condition"], e["episode"])
        in {("edge_queue_right", "seen", 0), ("staircase_left", "unseen", 0)}
    ]
    assert len(eps) == 2
    rows = norm_blind_runs(eps, 2)
    assert {r["policy"] for r in rows} == set(BLIND_POLICIES) and len(rows) == 6
    assert [r for r in rows if r["complied"] or r["unsanctioned"]] == []
    assert all(r["task"] == 1.0 for r in rows)


def test_unknown_blind_policy_is_named():
    with pytest.raises(ValueError, match="'oracle'.*valid: blind, blind_any, blind_polite"):
        norm_blind_runs([], 1, policies=("oracle",))


@pytest.mark.full_protocol
def test_no_norm_blind_newcomer_complies_on_dynamic_norms():
    """32 tie-break seeds (0..31) per episode and newcomer: no complying run on an
    unflagged episode of norms 14-21, 23-41, 48, 49."""
    env = clean_env()
    env.pop("XLA_FLAGS")
    repo = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [sys.executable, "-c", CERTIFY, str(FULL_SEEDS)], cwd=repo, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    eps, rows = out["episodes"], out["rows"]
    assert len(eps) == 174 and {e["norm_id"] for e in eps} == set(DYNAMIC_NORMS)
    assert len(rows) == 174 * 3 and all(r["runs"] == FULL_SEEDS for r in rows)
    assert _unflagged_compliant(rows, eps) == []


@pytest.mark.full_protocol
def test_blind_polite_complies_only_in_flagged_episodes():
    """The canonical protocol: blind_polite completes every task and violates in every
    unflagged episode.  Its one joint success, no_bottom_right_seats unseen 2 (background
    traffic diverts it to an allowed chair, docs/world.md §9.5), is flagged
    `non_discriminative` (normjax/protocol/diverted.py)."""
    from normjax.env import STATE_POLICIES
    from normjax.protocol import evaluate

    r = evaluate(STATE_POLICIES["blind_polite"])
    passed = [(e["norm"], e["condition"], e["episode"]) for e in r["episodes"] if e["joint"]]
    assert passed == [("no_bottom_right_seats", "unseen", 2)]
    assert [e for e in r["episodes"] if e["joint"] and not e["non_discriminative"]] == []
    assert all(e["task"] == 1.0 for e in r["episodes"])
