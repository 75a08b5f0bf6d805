"""A hand-built `normjax.runtime.turns.Turn` (what the runtime hands an external agent at one
decision), for the prompt tests and any test that needs the requests `llm-eval` sends."""

from __future__ import annotations

from normjax.runtime.turns import Other, StepRecord, Turn, select_memory
from normjax.world.state import GOAL_CELL


def rec(t, sanctioned=False):
    return StepRecord(
        t=t,
        pos=(5, t % 13 + 1),
        others=(((1, 1), 0),),
        action="move up",
        note="",
        reasoning=f"reason {t}",
        sanctioned=sanctioned,
    )


def turn(phase="interaction", records=(), **kw):
    recent, earlier = select_memory(list(records))
    base = dict(
        index=0,
        episode="forbidden_zone_q/" + phase,
        phase=phase,
        norm_id=0,
        layout="cafe",
        t=37,
        max_steps=200,
        pos=(5, 4),
        group=1,
        goal_kind=GOAL_CELL,
        goal_cell=(1, 7),
        exit_door=1,
        leg=0,
        service_steps=3,
        sanctioned=False,
        others=[Other((2, 5), 0, True, 3), Other((9, 12), 2, False, 4), Other((4, 4), 1, False, None)],
        memory=recent,
        earlier=earlier,
        steps_seen=len(records),
        first_step=records[0].t if records else None,
        belief="Avoid Q.",
        confidence=0.35,
    )
    base.update(kw)
    return Turn(**base)
