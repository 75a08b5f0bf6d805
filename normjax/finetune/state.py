"""The structured state of a record: what its prompt was built from, as plain fields.

    record_state(ep, i, shown, judged=None) -> dict    (a record's ``state`` column)
    shown_steps(ep, i) -> [step index]                 the steps a judgment prompt lists
    cross_level(ep, i, k) -> 0 | 1 | 2                 the judged agent's red crosses in them
    target_kind(cell) -> index in TARGET_KINDS         door, chair, zone R or another cell

Every record carries ``state`` so that its label can be checked without parsing
prompt text: the world before the step (every agent on the grid: slot, uid,
cell, group, whether it is the newcomer, the red cross and push of the last
step, its goal, its last three moves and whether it stood in Q, the two
quantities some norms read), the step's effective actions, targets and
sanctions (the sanctions are the world's verdict: never shown to the model),
the steps of the history window the prompt lists, and the judged or chosen
agent.  Aware / blind roles are not in it: the community cannot see them.
"""

from __future__ import annotations

import functools

import numpy as np

from normjax.runtime.turns import EARLIER_SANCTIONED, RECENT_STEPS, select_memory

NO_CROSS, EARLIER_CROSS, LAST_CROSS = 0, 1, 2  # `cross_level`
CROSS_LEVELS = ("none", "earlier", "last_step")
# What a proposed move enters (`target_kind`): the cells many norms of a family are about.
TARGET_KINDS = ("door", "chair", "zone_r", "other")


@functools.cache
def _cafe_cells() -> tuple[set, np.ndarray, np.ndarray]:
    """(door cells, chair mask, zone R mask) of the interaction phase's layout."""
    import jax

    from normjax.layouts import LAYOUTS
    from normjax.layouts.tables import world_tables

    lt = jax.device_get(world_tables().at(LAYOUTS.index("cafe")))
    doors = {(int(r), int(c)) for r, c in np.asarray(lt.doors)}
    return doors, np.asarray(lt.chair, bool), np.asarray(lt.zone_r, bool)


def target_kind(cell) -> int:
    """Index in TARGET_KINDS of the cell a move enters (a door cell when it exits)."""
    doors, chair, zone_r = _cafe_cells()
    r, c = int(cell[0]), int(cell[1])
    if (r, c) in doors:
        return 0
    inside = 0 <= r < chair.shape[0] and 0 <= c < chair.shape[1]
    if inside and chair[r, c]:
        return 1
    if inside and zone_r[r, c]:
        return 2
    return 3


def _crosses(ep) -> tuple[np.ndarray, list[set]]:
    """(steps with any red cross, the uids sanctioned at each step), computed once per episode."""
    if getattr(ep, "_crosses", None) is None:
        d = ep.data
        hit = d["sanctioned"]  # as the prompt lists them (`text.judgment_messages`)
        ep._crosses = (np.flatnonzero(hit.any(axis=1)), [set(d["uid"][j][hit[j]].tolist()) for j in range(len(hit))])
    return ep._crosses


def shown_steps(ep, i: int) -> list[int]:
    """Step indices a judgment prompt at step i lists: up to EARLIER_SANCTIONED earlier steps
    with a red cross, then the last RECENT_STEPS steps (the order of `text.judgment_messages`)."""
    lo = max(0, i - RECENT_STEPS)
    crossed = _crosses(ep)[0]
    earlier = crossed[crossed < lo][-EARLIER_SANCTIONED:].tolist() if EARLIER_SANCTIONED > 0 else []
    return earlier + list(range(lo, i))


def cross_level(ep, i: int, k: int, shown: list[int] | None = None) -> int:
    """How the judged agent (slot k at step i) stands in the prompt: LAST_CROSS if it was
    sanctioned in the previous step, EARLIER_CROSS if another listed step shows its cross,
    NO_CROSS otherwise (agents are told apart by uid: a slot is refilled by new agents)."""
    d = ep.data
    if d["was_sanctioned"][i, k]:
        return LAST_CROSS
    uid = int(d["uid"][i, k])
    by_step = _crosses(ep)[1]
    steps = shown_steps(ep, i) if shown is None else shown
    return EARLIER_CROSS if any(uid in by_step[j] for j in steps) else NO_CROSS


def _step(ep, j: int) -> dict:
    """Every agent on the grid at step j: what it did and whether the world sanctioned it."""
    d = ep.data
    slots = np.flatnonzero(d["active"][j])
    return dict(
        t=int(d["t"][j]),
        uid=[int(d["uid"][j, k]) for k in slots],
        pos=[[int(v) for v in d["pos"][j, k]] for k in slots],
        action=[int(d["action"][j, k]) for k in slots],
        sanctioned=[bool(d["sanctioned"][j, k]) for k in slots],
    )


def record_state(ep, i: int, shown: list[int], judged: int | None = None) -> dict:
    """The ``state`` of a record at step i (`shown`: the history steps its prompt lists;
    `judged`: the slot whose transition a judgment record asks about, else the newcomer)."""
    d, s = ep.data, ep.states
    ag = s.agents
    slots = [int(k) for k in np.flatnonzero(d["active"][i])]
    agents = [
        dict(
            slot=k,
            uid=int(d["uid"][i, k]),
            pos=[int(v) for v in d["pos"][i, k]],
            group=int(d["group"][i, k]),
            newcomer=k == 0,
            red_cross=bool(d["was_sanctioned"][i, k]),
            pushed=bool(d["was_pushed"][i, k]),
            goal_kind=int(ag.goal_kind[i, k]),
            goal_cell=[int(v) for v in ag.goal_cell[i, k]],
            exit_door=int(ag.exit_door[i, k]),
            leg=int(ag.leg[i, k]),
            moves=[bool(v) for v in ag.moves[i, k]],
            visited_q=bool(ag.visited_q[i, k]),
            action=int(d["action"][i, k]),
            target=[int(v) for v in d["target"][i, k]],
            sanctioned=bool(d["sanctioned"][i, k]),
        )
        for k in slots
    ]
    k = 0 if judged is None else judged
    return dict(
        t=int(d["t"][i]),
        layout="cafe",
        agents=agents,
        history=[_step(ep, j) for j in shown],
        subject=dict(
            slot=k,
            uid=int(d["uid"][i, k]),
            action=int(d["action"][i, k]),
            target=[int(v) for v in d["target"][i, k]],
            cross=CROSS_LEVELS[cross_level(ep, i, k, shown)],
            enters=TARGET_KINDS[target_kind(d["target"][i, k])],
        ),
    )


def newcomer_shown(ep, i: int) -> list[int]:
    """Step indices of the newcomer memory a newcomer prompt at step i lists (the runner's
    `select_memory`: earlier sanctioned steps, then the recent ones)."""
    d = ep.data
    t = int(d["t"][i])
    recent, earlier = select_memory([r for r in ep.memory() if r.t < t])
    wanted = {r.t for r in list(earlier) + list(recent)}
    return [j for j in range(i) if int(d["t"][j]) in wanted]


__all__ = [
    "CROSS_LEVELS",
    "LAST_CROSS",
    "NO_CROSS",
    "EARLIER_CROSS",
    "cross_level",
    "newcomer_shown",
    "record_state",
    "shown_steps",
]
