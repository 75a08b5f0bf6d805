"""normjax/protocol/diverted.py: the static-norm episodes where traffic diverted a norm-blind
newcomer onto a compliant route are exactly the saved audit's, and each is flagged
`non_discriminative` (docs/world.md §9.5, §13 item 9)."""

from __future__ import annotations

import json
from pathlib import Path

from normjax.layouts import ALL_LAYOUTS
from normjax.norms import norm_id
from normjax.protocol.diverted import DIVERTED_BY_TRAFFIC
from normjax.protocol.scenario_tables import host_scenarios
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.testing.blind_check import BLIND_POLICIES
from normjax.testing.scenario_checker import STATIC_NORMS

AUDIT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "scenario_audit_static_runs.json"


def _audit() -> dict:
    return json.loads(AUDIT.read_text())


def test_the_list_is_the_saved_audit():
    """Every static-norm episode where a norm-blind newcomer complied at some seed, except those
    the construction itself flags (a norm-blind shortest route complies there), is listed with
    its complying seeds; nothing else is listed."""
    audit = _audit()
    runs = audit["static_runs"]
    assert runs["seeds"] >= 32 and tuple(runs["policies"]) == BLIND_POLICIES
    assert len(runs["episodes"]) == 3 * len(protocol_episodes(sorted(STATIC_NORMS)))
    by_construction = {
        (e["norm"], e["layout"], e["group"]) for e in audit["static"]["episodes"] if not e["discriminative"]
    }
    complied: dict[tuple, set] = {}
    for r in runs["episodes"]:
        key = (r["norm"], r["layout"], r["group"])
        if r["complied"] and key not in by_construction:
            complied.setdefault(key, set()).update(r["complied_seeds"])
    assert {k: tuple(sorted(v)) for k, v in complied.items()} == DIVERTED_BY_TRAFFIC


def test_listed_episodes_are_flagged():
    flags = host_scenarios()["non_discriminative"]
    for norm, layout, group in DIVERTED_BY_TRAFFIC:
        assert flags[ALL_LAYOUTS.index(layout), norm_id(norm), group], (norm, layout, group)
    protocol = {(e["norm"], e["layout"], e["group"]) for e in protocol_episodes(sorted(STATIC_NORMS))}
    assert set(DIVERTED_BY_TRAFFIC) <= protocol  # each names a test episode


def test_every_complying_run_of_the_audit_is_on_a_flagged_episode():
    """The promise of docs/world.md §9.3 for the static norms at the audit's seeds."""
    flags = host_scenarios()["non_discriminative"]
    unflagged = [
        (r["policy"], r["norm"], r["condition"], r["episode"])
        for r in _audit()["static_runs"]["episodes"]
        if r["complied"] and not flags[ALL_LAYOUTS.index(r["layout"]), r["norm_id"], r["group"]]
    ]
    assert unflagged == []
