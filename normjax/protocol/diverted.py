"""Static-norm test episodes in which the scenario's traffic can divert a careful norm-blind
newcomer onto a compliant route (docs/world.md §9.5, §13 item 9).

The static certificate (`geometry.py`) proves that every shortest route of a norm-blind agent
walking alone violates.  `blind_polite` never steps onto a cell another agent stands on or
announces, and re-plans from wherever it is, so the background agents of an episode can turn
it onto a compliant route (e.g. pushed back to its door and blocked along a row, it re-plans
to an allowed chair).  The construction cannot see that, so these episodes are measured: the
three norm-blind newcomers ran every static-norm test episode with 32 tie-break seeds
(`python -m benchmarks.scenario_audit --seeds 0 --static-seeds 32`, saved in
`benchmarks/results/scenario_audit_static_runs.json`), and every episode where one of them
complied at least once is listed here and flagged `non_discriminative`, as the episodes the
construction itself cannot make discriminative are.  `tests/protocol/test_diverted.py` keeps
this list equal to the saved audit.
"""

from __future__ import annotations

# (norm, layout, newcomer group) -> the audit's complying tie-break seeds (of 0..31)
# fmt: off
DIVERTED_BY_TRAFFIC: dict[tuple[str, str, int], tuple[int, ...]] = {
    ("all_exit_bottom", "cafe", 1): (4, 9, 10, 13, 17, 21, 27, 29),
    ("bottom_door_forbidden", "cafe", 2): (1,),
    ("bottom_door_forbidden", "library", 2): (1, 2, 3, 4, 6, 7, 8, 11, 12, 13, 14, 17, 20, 22, 26, 28, 29, 30),
    ("bottom_left_seats_only", "cafe", 0): (9,),
    ("group_doors_abc", "cafe", 2): (2,),
    ("group_seating_rot1", "cafe", 0): (0, 1, 2, 5, 13, 16, 19, 26, 27),
    ("group_seating_rot2", "cafe", 0): (14,),
    ("group_seating_rot3", "cafe", 1): (8, 10, 14, 23, 29),
    ("no_bottom_left_seats", "barbershop", 2): (15,),
    ("no_bottom_right_seats", "clothing_store", 0): (0, 2, 3, 4, 5, 6, 8, 9, 10, 12, 14, 15, 16, 17, 18, 19, 26, 28, 29, 31),
}
# fmt: on


__all__ = ["DIVERTED_BY_TRAFFIC"]
