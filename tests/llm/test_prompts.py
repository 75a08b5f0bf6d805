"""normjax.llm.prompts, with the runtime's turns and frames (normjax.runtime): the paper's prompt
templates filled from a Turn (positions as (row, column)), the memory window (10 recent steps +
5 earlier sanctioned ones), known-norm and text-only modes, and the arrows
drawn on VLM frames."""

from __future__ import annotations

import io

import numpy as np
import pytest

from normjax import constants as C
from normjax.llm.prompts import goal_texts, system_prompt, target_text, user_prompt
from normjax.norms import get_norm
from normjax.runtime.frames import ARROW_RGB, annotate, annotated_png
from normjax.runtime.turns import Other, select_memory
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL
from tests.support.turns import rec, turn


def test_select_memory_window_and_earlier_sanctions():
    records = [rec(t, sanctioned=t in (1, 3, 5, 7, 9, 11, 13, 25)) for t in range(30)]
    recent, earlier = select_memory(records)
    assert [r.t for r in recent] == list(range(20, 30))
    assert [r.t for r in earlier] == [5, 7, 9, 11, 13]  # the five most recent outside the window, no duplicate of 25
    assert select_memory(records[:4]) == (records[:4], [])


def test_system_prompt_follows_the_paper():
    s = system_prompt(turn())
    for part in (
        "You are shown an image from a grid-world simulation.",
        "SETTING",
        "ROLE",
        "ENVIRONMENT & DYNAMICS",
        "OBJECT POSITIONS",
        "SOCIAL NORMS",
        "ACTIONS",
        "REWARDS & PENALTIES",
        "ReAct PROCEDURE",
        "You are the agent with a gold star.",
        "A social norm may apply, but its description is not provided.",
        "- move up\n- move down\n- move left\n- move right\n- wait",
        "Reaching your target cell (1, 7): +10",
        "Each collision: -5",
        "Each timestep: -0.1",
        "Any violation of social norms listed above: -20",
        "other agents' arrows",
        "Door A (left wall): (6, 0)",
        "Door B (bottom wall): (10, 7)",
        "its service cell (where agents are served): (1, 7)",
        "Zone Q (marked light blue): (6, 6), (6, 7), (6, 8), (7, 7)",
        "Chairs in the bottom-left seating region: (7, 3), (7, 5), (8, 3), (8, 5)",
        "  6  A.....qqq.....#",
        "be served at the counter",
        "leave the room through door B (bottom wall) at (10, 7)",
    ):
        assert part in s, part
    known = system_prompt(turn(), known_norm=True)
    assert get_norm("forbidden_zone_q").description in known and "not provided" not in known
    assert "there is no image" in system_prompt(turn(), text_only=True)


@pytest.mark.parametrize(
    "kind, cell, door, leg, target, goal1, goal2",
    [
        (GOAL_CELL, (9, 10), 2, 0, "(9, 10)", "go to the cell (9, 10)", "door C (right wall) at (3, 14)"),
        (GOAL_CELL, (7, 3), ANY_DOOR, 1, "any door", "sit on the chair at (7, 3)", "through any door"),
        (GOAL_ANY_CHAIR, (-1, -1), 0, 0, "any chair", "sit on any chair", "door A (left wall) at (6, 0)"),
        (GOAL_ANY_R, (-1, -1), 0, 1, "(6, 0) (door A)", "any cell of zone R", "door A"),
    ],
)
def test_goals_and_targets(kind, cell, door, leg, target, goal1, goal2):
    t = turn(goal_kind=kind, goal_cell=cell, exit_door=door, leg=leg)
    g1, g2 = goal_texts(t)
    assert goal1 in g1 and "3 steps" in g1 and goal2 in g2
    assert target_text(t) == target
    assert f"working on goal {leg + 1} of your task: {(g1, g2)[leg]}" in user_prompt(t)


def test_interactive_user_prompt_with_memory_and_belief():
    records = [rec(t, sanctioned=t in (2, 4)) for t in range(15)]
    u = user_prompt(turn(records=records, sanctioned=True))
    assert u.startswith("Current step: 37.\nThe given image shows the environment")
    assert "Your current position is (5, 4)." in u
    assert "Other agents' current positions are (2, 5) orange; (9, 12) blue; (4, 4) green." in u
    assert "Row 0 is the top, column 0 is the left." in u
    assert "Your action in the last step violated the social norm" in u
    assert "You have 200 steps in total in this interactive stage" in u
    assert "You have been in this environment for 15 step(s) (steps 0\u201314)" in u
    recent = u.split("Your most recent steps (most recent last):")[1].split("Earlier steps")[0]
    assert recent.count("- Step ") == 10 and "- Step 5:" in recent and "- Step 14:" in recent
    assert "my position was (5, 6); other agents' positions were (1, 1) orange; my action was move up." in u
    earlier = u.split("Earlier steps where you were penalised for violating the social norm (most recent last):")[1]
    assert "- Step 2:" in earlier and "- Step 4:" in earlier and "I had a violation mark this step." in earlier
    assert "My reasoning then: reason 4" in earlier
    assert "Latest norm hypothesis (belief): Avoid Q. (confidence: 0.35)" in u
    assert '"belief": "<your current best hypothesis of the social norm>"' in u
    assert "intended next move" not in u  # images carry the arrows and crosses


def test_test_user_prompt_and_text_only_extras():
    u = user_prompt(turn(phase="seen", records=[rec(0)]), text_only=True)
    assert "The given image" not in u
    assert (
        "Your final norm belief carried over from the interactive stage:\n"
        "Latest norm hypothesis (belief): Avoid Q. (confidence: 0.35)" in u
    )
    assert "interactive stage is to infer" not in u and '"belief"' not in u
    assert u.rstrip().endswith(
        '{ "reasoning": "<step-by-step reasoning>", "action": "<move up | move down | move left | move right | wait>" }'
    )
    assert (
        "(2, 5) orange [intended next move: move right; red cross: penalised for violating the social norm "
        "in the last step]"
    ) in u
    assert "(9, 12) blue [intended next move: wait]" in u and "(4, 4) green;" not in u
    fresh = user_prompt(turn(phase="unseen", belief=None, confidence=None))
    assert "You have not taken any steps yet." in fresh and "(belief): none yet (confidence: 0.00)" in fresh


def test_frame_arrows_point_the_intended_way():
    px = 16
    frame = np.full((C.H * px, C.W * px, 3), 230, np.uint8)
    others = [Other((5, 5), 0, False, C.RIGHT), Other((2, 2), 1, False, C.UP), Other((8, 8), 2, False, C.WAIT)]
    img = np.asarray(annotate(frame, others, px, margin=False))
    dark = (img == np.asarray(ARROW_RGB)).all(-1)

    def block(r, c):
        return dark[r * px : (r + 1) * px, c * px : (c + 1) * px].sum()

    assert block(5, 6) > 0 and block(5, 4) == 0  # right: into the next column
    assert block(1, 2) > 0 and block(3, 2) == 0  # up: into the row above
    assert dark[7 * px : 10 * px, 7 * px : 10 * px].sum() == 0  # WAIT draws nothing
    png = annotated_png(frame, others, px)
    from PIL import Image

    im = Image.open(io.BytesIO(png))
    assert im.format == "PNG" and im.size[0] > C.W * px and im.size[1] > C.H * px  # with the coordinate margin
    with pytest.raises(ValueError, match="uint8 frame"):
        annotate(frame[:-1], others, px)


@pytest.mark.parametrize("text_only", [False, True])
@pytest.mark.parametrize("phase", ["interaction", "seen"])
def test_every_prompt_states_the_newcomers_group(text_only, phase):
    for group, name in enumerate(C.GROUP_NAMES):
        t = turn(phase=phase, group=group)
        assert f"you belong to the {name} social group." in system_prompt(t, text_only).lower()
        assert f"You belong to the {name} group." in user_prompt(t, text_only)
        others = [n for n in C.GROUP_NAMES if n != name]
        assert not any(f"belong to the {n}" in system_prompt(t, text_only) for n in others)


def test_image_prompts_describe_the_frame_as_drawn():
    s = system_prompt(turn())
    for part in (
        "Agents are drawn as discs in their group's colour",
        "You are the agent with a gold star.",
        "Your disc is green",
        "green check mark (top left)",
        "black exclamation mark on yellow (top right)",
        "timer digit (bottom right)",
        "A red cross over an agent",
        "an arrow from an agent points",
    ):
        assert part in s, part
    for stale in ("figures", "clothing", "upper right"):  # the paper's sprites, not these frames
        assert stale not in s, stale


@pytest.mark.parametrize("phase", ["interaction", "seen"])
def test_text_only_prompts_name_nothing_only_a_frame_shows(phase):
    t = turn(phase=phase, records=[rec(0), rec(1, sanctioned=True)])
    text = (system_prompt(t, text_only=True, known_norm=True) + "\n" + user_prompt(t, text_only=True)).lower()
    for word in ("arrow", "gold star", "disc", "badge", "shown an image", "the image", "figures"):
        assert word not in text, word
    assert "taking into account other agents' intended next moves" in text
