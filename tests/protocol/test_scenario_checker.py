"""docs/world.md §9.3: no norm-blind shortest route complies with a static norm by
accident, checked by normjax/testing/scenario_checker.py (its own map reader, norm rules and
graph search, independent of the scenario builder).  Host-side only, no compile."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from normjax.layouts import LAYOUTS
from normjax.protocol.diverted import DIVERTED_BY_TRAFFIC
from normjax.protocol.scenario_tables import host_scenarios
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.testing.scenario_checker import STATIC_NORMS, check_episode, check_protocol

# docs/world.md §13 (Scenarios): the episodes the paper's construction cannot make
# discriminative, flagged `non_discriminative` in the protocol's results.
DOCUMENTED_NON_DISCRIMINATIVE = {
    ("right_door_forbidden", "seen", 0),
    ("right_door_forbidden", "seen", 1),
    ("right_door_forbidden", "seen", 2),
}


@functools.cache
def _rows():
    return check_protocol()


def test_every_static_episode_is_discriminative_or_documented():
    rows = _rows()
    assert len(rows) == 6 * len(STATIC_NORMS) == 126
    complying = {(r["norm"], r["condition"], r["episode"]) for r in rows if not r["discriminative"]}
    assert complying <= DOCUMENTED_NON_DISCRIMINATIVE, complying - DOCUMENTED_NON_DISCRIMINATIVE
    for r in rows:
        if r["discriminative"]:  # a compliant task is strictly longer, or impossible
            assert r["compliant_task"] is None or r["compliant_task"] > r["blind_task"], r


def test_flags_match_the_documented_lists():
    """Flagged: the construction's list above and the episodes where traffic diverted a
    norm-blind newcomer (normjax/protocol/diverted.py, tests/protocol/test_diverted.py)."""
    t = host_scenarios()
    flagged, diverted = set(), set()
    for e in protocol_episodes():
        name = (e["norm"], e["condition"], e["episode"])
        if t["non_discriminative"][e["layout_id"], e["norm_id"], e["group"]]:
            flagged.add(name)
        if (e["norm"], e["layout"], e["group"]) in DIVERTED_BY_TRAFFIC:
            diverted.add(name)
    assert len(diverted) == len(DIVERTED_BY_TRAFFIC) == 10
    assert flagged == DOCUMENTED_NON_DISCRIMINATIVE | diverted


@pytest.mark.parametrize(
    "case, goal_by_goal",
    [
        # Zone Q, the cafe, old seen episode 0: a 10-move route crosses chair (7,5) and never enters Q.
        (dict(layout="cafe", norm=0, group=0, start=(9, 7), goal_cell=(6, 5), exit_door=0), True),
        # No bottom-right seats, the cafe, old seen episodes: the nearest chair is in BR, but
        # seat + exit through an allowed chair is as short as through it (16 moves).
        (dict(layout="cafe", norm=11, group=0, start=(3, 13), goal_cell=(-1, -1), exit_door=0), False),
        # Clockwise, the grocery store, old unseen episode 2.
        (dict(layout="grocery_store", norm=12, group=2, start=(7, 1), goal_cell=(9, 2), exit_door=0), True),
    ],
)
def test_the_checker_finds_the_old_accidental_compliance(case, goal_by_goal):
    r = check_episode(**case)
    assert not r["discriminative"] and r["complies_whole_task"]
    assert r["complies_goal_by_goal"] == goal_by_goal
    if case["norm"] == 11:
        assert (r["blind_goal1"], r["compliant_goal1"], r["blind_task"], r["compliant_task"]) == (6, 11, 16, 16)


def test_the_checker_crosses_chairs_and_respects_holders():
    # Cafe, Q forbidden: from (6,4) to (8,6) the only short way round Q (6,6) crosses
    # chairs (7,5) and (8,5): 4 moves on the rules' graph.
    r = check_episode("cafe", 0, 0, (6, 4), (8, 6), 0)
    assert r["blind_goal1"] == r["compliant_goal1"] == 4
    # No bottom-left seats from door A: TL chair (4,2) and BL chair (7,3) are both 3
    # moves away; a holder on (4,2) makes the nearest allowed free chair 4 moves away.
    free = check_episode("cafe", 10, 0, (6, 1), (-1, -1), 0)
    held = check_episode("cafe", 10, 0, (6, 1), (-1, -1), 0, holders=[(4, 2)])
    assert (free["blind_goal1"], free["compliant_goal1"]) == (3, 3)
    assert (held["blind_goal1"], held["compliant_goal1"]) == (3, 4)


def test_protocol_rows_carry_the_flag():
    from normjax.protocol.runner import summarize

    eps = protocol_episodes([6])
    zeros = {
        k: np.zeros(len(eps), np.int32)
        for k in (
            "community_agents",
            "goals",
            "sanctions",
            "path_length",
            "involved",
            "collisions",
            "finished",
            "t_end",
            "community_finished",
            "community_steps",
            "community_return",
        )
    }
    rows = summarize(eps, zeros)["episodes"]
    t = host_scenarios()
    want = [bool(t["non_discriminative"][LAYOUTS.index(e["layout"]), 6, e["group"]]) for e in eps]
    assert [r["non_discriminative"] for r in rows] == want == [True] * 3 + [False] * 3
