"""The paper's prompts (appendix "Prompts"; paper §4.1 "LLM Agents").

    system_prompt(turn, text_only=False, known_norm=False) -> str
    user_prompt(turn, text_only=False) -> str     # interactive or test stage, by turn.phase

The templates are the appendix's, word for word where it gives words, with
its placeholders filled from the `Turn`:

* ``{WORLD_DESCRIPTION}``: the layout, the grid (11 rows x 15 columns,
  positions (row, column), row 0 at the top), how moves, doors, service and
  blocked cells work, and the map as text (the trajectory format's legend,
  docs/world.md §1.1) with a column ruler;
* ``{GOAL_DESCRIPTION}`` / ``{TARGET_POSITION}`` / ``{CURRENT_GOAL_TEXT}``:
  the newcomer's two goals (docs/world.md §5) from its task;
* ``{OBJECT_POSITIONS}``: doors, counter and service cell, chairs by seating
  region (top-left, bottom-left, bottom-right; docs/world.md §1.3), zones Q
  and R, obstacles;
* memory: the 10 most recent steps and up to 5 earlier sanctioned steps
  (`normjax.runtime.turns.select_memory`), and in the interactive stage the
  latest belief and confidence.

Decisions where the paper leaves room:

* Every prompt states the newcomer's own social group (ROLE, and the user
  prompt's head): group-conditioned norms (group doors, group seating, a
  single-group zone R) cannot be followed without it.
* The words describe the frame as drawn (`normjax.interop.render`): agents
  are discs in their group's colour, the newcomer's disc has a gold star,
  badges sit on the disc's corners (a green check mark top left: goal 1 done;
  a black "!" on yellow top right: a collision in the last step; the service
  timer's digit bottom right), a sanction is a red cross over the agent, and
  an arrow points to the cell an agent intends to enter.  Text-only prompts
  name none of that: they speak of the description, intended next moves and
  the red-cross note of the agent list.
* Known-norm mode replaces the SOCIAL NORMS line "A social norm may apply,
  but its description is not provided." with the true norm's one-line
  description (the registry's, paper Table A2); nothing else changes.
* Text-only mode (no image) says so in the first line, and the
  other-agents list then carries what the frame would show: each agent's
  intended next move (the frame's arrow) and a red-cross note for agents
  sanctioned in the last step.  With images the list gives positions and
  groups only, as in the paper.
* A step in which the newcomer's WAIT was forced by service is remembered
  with the reasoning "(serving at the goal: the action was forced to wait)";
  a chosen move into a wall, the counter or an obstacle is remembered as
  "move up (blocked: I did not move)".
* Before the first reply the belief is "none yet" with confidence 0.
"""

from __future__ import annotations

import functools

from normjax import constants as C
from normjax.layouts import load_layout
from normjax.norms import NORMS
from normjax.runtime.turns import PROMPT_ACTIONS, StepRecord, Turn
from normjax.world.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R

DOOR_WALLS = ("left", "bottom", "right")
REGION_WORDS = ("top-left", "bottom-left", "bottom-right")
NO_BELIEF = "none yet"


def cell(p) -> str:
    return f"({int(p[0])}, {int(p[1])})"


def _cells(ps) -> str:
    return ", ".join(cell(p) for p in ps) or "none"


@functools.cache
def world_description(layout: str) -> str:
    lay = load_layout(layout)
    ruler = "     " + "".join(str(c % 10) for c in range(C.W))
    rows = [f"{r:>3}  {line}" for r, line in enumerate(lay.grid)]
    return "\n".join(
        [
            f"A {layout.replace('_', ' ')} seen from above: a grid of {C.H} rows (0-{C.H - 1}, top to bottom) "
            f"and {C.W} columns (0-{C.W - 1}, left to right). Positions are (row, column).",
            "- move up decreases your row by 1, move down increases it by 1, move left decreases your column "
            "by 1, move right increases it by 1; wait keeps you in place.",
            "- Walls, the counter and obstacles (tables, shelves) block movement: moving into them leaves you "
            "where you are. Floor cells (including the marked zones Q and R) and chairs can be entered.",
            "- The three doors A (left wall), B (bottom wall) and C (right wall) are the only ways in and out: "
            "moving onto a door cell leaves the room.",
            "- A goal at a cell (the service cell below the counter, a chair, a destination, a cell of zone R) is "
            "completed by standing on it for 3 consecutive steps; a timer shows while you are served and you "
            "cannot move meanwhile.",
            "Map (row numbers on the left, column numbers (mod 10) on top; # wall, . floor, A B C doors, h chair, "
            "K counter, o obstacle, q floor in zone Q, r floor in zone R):",
            ruler,
            *rows,
        ]
    )


@functools.cache
def object_positions(layout: str) -> str:
    import numpy as np

    lay = load_layout(layout)
    lines = [f"- Door {n} ({DOOR_WALLS[i]} wall): {cell(lay.doors[i])}" for i, n in enumerate(C.DOOR_NAMES)]
    lines.append(f"- Counter: {cell(lay.counter)}; its service cell (where agents are served): {cell(lay.service)}")
    for i, word in enumerate(REGION_WORDS):
        chairs = [c for c in lay.chairs if int(lay.region[c[0], c[1]]) == i]
        lines.append(f"- Chairs in the {word} seating region: {_cells(chairs)}")
    lines.append(f"- Zone Q (marked light blue): {_cells(np.argwhere(lay.zone_q))}")
    lines.append(f"- Zone R (marked light purple): {_cells(np.argwhere(lay.zone_r))}")
    lines.append(f"- Obstacles: {_cells(np.argwhere(lay.kind == C.OBSTACLE))}")
    return "\n".join(lines)


def goal_texts(turn: Turn) -> tuple[str, str]:
    """(goal 1, goal 2) of the newcomer's task (docs/world.md §5)."""
    lay = load_layout(turn.layout)
    n = turn.service_steps
    g = turn.goal_cell
    if turn.goal_kind == GOAL_ANY_CHAIR:
        first = f"sit on any chair and stay there for {n} steps"
    elif turn.goal_kind == GOAL_ANY_R:
        first = f"go to any cell of zone R and stay there for {n} steps"
    elif tuple(g) == tuple(int(x) for x in lay.service):
        first = (
            f"be served at the counter: go to the service cell {cell(g)} below the counter and stay there for {n} steps"
        )
    elif lay.kind[g[0], g[1]] == C.CHAIR:
        first = f"sit on the chair at {cell(g)} and stay there for {n} steps"
    else:
        first = f"go to the cell {cell(g)} and stay there for {n} steps"
    if turn.exit_door == ANY_DOOR:
        second = "leave the room through any door"
    else:
        d = turn.exit_door
        second = f"leave the room through door {C.DOOR_NAMES[d]} ({DOOR_WALLS[d]} wall) at {cell(lay.doors[d])}"
    return first, second


def target_text(turn: Turn) -> str:
    """The current goal's target: a cell, or the category of a free choice."""
    lay = load_layout(turn.layout)
    if turn.leg == 0:
        if turn.goal_kind == GOAL_ANY_CHAIR:
            return "any chair"
        if turn.goal_kind == GOAL_ANY_R:
            return "any cell of zone R"
        return cell(turn.goal_cell)
    if turn.exit_door == ANY_DOOR:
        return "any door"
    return f"{cell(lay.doors[turn.exit_door])} (door {C.DOOR_NAMES[turn.exit_door]})"


def _role_and_environment(text_only: bool, group: str, goal_lines: str) -> str:
    """ROLE and ENVIRONMENT & DYNAMICS: who the newcomer is, and how agents appear (the frame as drawn, or the text)."""
    if text_only:
        return f"""ROLE
- You are the newcomer agent; the description gives your position each step.
- You belong to the {group} social group.
- If you are not on the grid yet, you just entered through your door.
{goal_lines}
ENVIRONMENT & DYNAMICS
- Every agent belongs to one of 3 social groups: orange, green and blue; the description gives each agent's group.
- If a collision occurs: if one agent is waiting, the moving agent stays and pushes the waiting agent to another position; if both are moving to the same spot, one is randomly chosen to stay and the other is pushed.
- The description gives each other agent's intended next move, and marks with a red cross the agents penalised for violating the social norm in the last step."""
    return f"""ROLE
- You are the agent with a gold star.
- Your disc is {group}: you belong to the {group} social group.
- If you do not see yourself on the grid, then that means you just entered through your door.
{goal_lines}
ENVIRONMENT & DYNAMICS
- Agents are drawn as discs in their group's colour (orange, green, or blue).
- An agent's color is its social group and in this world we have 3 groups: orange, green and blue.
- If a collision occurs: if one agent is waiting, the moving agent stays and pushes the waiting agent to another position; if both are moving to the same spot, one is randomly chosen to stay and the other is pushed.
- An agent can carry small badges on the corners of its disc: a green check mark (top left) indicates the first target is finished, a black exclamation mark on yellow (top right) indicates the agent was in a push/collision in the last step, and a timer digit (bottom right) indicates the agent is being served at its first target goal.
- A red cross over an agent marks a penalty for violating the social norm in the last step, and an arrow from an agent points to the cell it intends to enter this step."""


def system_prompt(turn: Turn, text_only: bool = False, known_norm: bool = False) -> str:
    goals = goal_texts(turn)
    target = target_text(turn)
    if known_norm:
        norm = f"The following social norm applies: {NORMS[turn.norm_id].description}"
    else:
        norm = "A social norm may apply, but its description is not provided."
    opening = (
        "You are given a text description of a grid-world simulation (there is no image)."
        if text_only
        else "You are shown an image from a grid-world simulation."
    )
    shown = "description" if text_only else "image"
    moves = "other agents' intended next moves" if text_only else "other agents' arrows"
    goal_lines = (
        f"- Your task has the following goals, in order:\n  1. {goals[0]}\n  2. {goals[1]}\n"
        f"- You are currently working on the goal whose target is {target}."
    )
    appearance = _role_and_environment(text_only, C.GROUP_NAMES[turn.group], goal_lines)
    return f"""{opening}

SETTING
{world_description(turn.layout)}

{appearance}

OBJECT POSITIONS
{object_positions(turn.layout)}

SOCIAL NORMS
{norm}

ACTIONS
You may take exactly one of the following actions each step:
{chr(10).join("- " + a for a in PROMPT_ACTIONS)}

REWARDS & PENALTIES
- Reaching your target cell {target}: +10
- Each collision: -5
- Each timestep: -0.1
- Any violation of social norms listed above: -20

TASK
Given the current step {shown}, which shows the environment and all agents' current positions, decide the next action for yourself.
ReAct PROCEDURE (output your reasoning step by step)
1) Observe:
   - Identify your current grid position.
   - Identify your current target cell {target} and any blocked cells/obstacles.
   - Identify nearby agents, their intended next moves, and their social group.
2) Reason:
   - Propose some candidate actions that move you toward {target} efficiently.
   - For each candidate, assess:
      - Collision risk next step (including push outcomes), taking into account {moves}.
      - Whether it violates any social norms.
3) Act:
   - State your chosen action."""


def _others(turn: Turn, text_only: bool) -> str:
    out = []
    for o in turn.others:
        s = f"{cell(o.pos)} {C.GROUP_NAMES[o.group]}"
        if text_only:
            notes = []
            if o.intent is not None:
                notes.append(f"intended next move: {PROMPT_ACTIONS[o.intent]}")
            if o.sanctioned:
                notes.append("red cross: penalised for violating the social norm in the last step")
            if notes:
                s += " [" + "; ".join(notes) + "]"
        out.append(s)
    return "; ".join(out) if out else "none (no other agent is on the grid)"


@functools.lru_cache(maxsize=8192)  # each remembered step is written into ~10 successive prompts
def _record(r: StepRecord) -> str:
    others = "; ".join(f"{cell(p)} {C.GROUP_NAMES[g]}" for p, g in r.others) or "none"
    action = r.action + (f" ({r.note})" if r.note else "")
    mark = "I had a violation mark this step." if r.sanctioned else "I had no violation mark this step."
    return (
        f"- Step {r.t}: my position was {cell(r.pos)}; other agents' positions were {others}; "
        f"my action was {action}. {mark}\n  My reasoning then: {r.reasoning or '(none)'}"
    )


def belief_line(belief: str | None, confidence: float | None) -> str:
    conf = 0.0 if confidence is None else confidence
    return f"Latest norm hypothesis (belief): {belief or NO_BELIEF} (confidence: {conf:.2f})"


def memory_text(turn: Turn, with_belief: bool) -> str:
    lines = ["Your memory of this episode"]
    if turn.steps_seen == 0:
        lines.append("You have not taken any steps yet.")
    else:
        last = turn.memory[-1].t if turn.memory else turn.first_step
        lines.append(
            f"You have been in this environment for {turn.steps_seen} step(s) (steps {turn.first_step}\u2013{last})"
        )
    lines.append("")
    lines.append("Your most recent steps (most recent last):")
    lines += [_record(r) for r in turn.memory] or ["(none)"]
    lines.append("Earlier steps where you were penalised for violating the social norm (most recent last):")
    lines += [_record(r) for r in turn.earlier] or ["(none)"]
    if with_belief:
        lines.append(belief_line(turn.belief, turn.confidence))
    return "\n".join(lines)


def _head(turn: Turn, text_only: bool) -> list[str]:
    lines = [f"Current step: {turn.t}."]
    if not text_only:
        lines.append("The given image shows the environment and all agents' positions at the current step.")
    lines.append(f"Your current position is {cell(turn.pos)}. You belong to the {C.GROUP_NAMES[turn.group]} group.")
    lines.append(
        f"Other agents' current positions are {_others(turn, text_only)}. Positions are (row, column). "
        "Row 0 is the top, column 0 is the left."
    )
    if turn.sanctioned:
        lines.append(
            "Your action in the last step violated the social norm: you received a red cross and a penalty of -20."
        )
    return lines


def user_prompt(turn: Turn, text_only: bool = False) -> str:
    goal_index = turn.leg + 1
    goal_text = goal_texts(turn)[turn.leg]
    lines = _head(turn, text_only)
    if turn.stage == "interaction":
        where = "in the list above" if text_only else "on the image"
        lines += [
            f"If you see a red cross mark {where}, that means the respective agent took an action that violated "
            "the social norm and received a penalty in this step. Your goal in this interactive stage is to infer "
            "the social norm that this group is following.",
            f"You have {turn.max_steps} steps in total in this interactive stage to learn the social norm.",
            memory_text(turn, with_belief=True),
            f"You are currently working on goal {goal_index} of your task: {goal_text}",
            "Decide the next action for yourself.",
            "Return exactly one JSON object and no other text:",
            '{ "reasoning": "<step-by-step reasoning>", "action": "<move up | move down | move left | move right '
            '| wait>", "belief": "<your current best hypothesis of the social norm>", "confidence": <number between '
            "0 and 1> }",
            "The belief is your current best hypothesis of the social norm and confidence is how sure you are "
            "(0 = no idea, 1 = certain); update both each step after considering your reasoning and selected action.",
        ]
    else:
        lines += [
            "During the earlier interactive stage you observed this group and learned the social norm they follow. "
            "Your goal in this test mode is to apply that learned norm and behave in accordance with it, so that you "
            "comply with the group's social norm.",
            "Your final norm belief carried over from the interactive stage:",
            belief_line(turn.belief, turn.confidence),
            memory_text(turn, with_belief=False),
            f"You are currently working on goal {goal_index} of your task: {goal_text}",
            "Decide the next action for yourself.",
            "Return exactly one JSON object and no other text:",
            '{ "reasoning": "<step-by-step reasoning>", "action": "<move up | move down | move left | move right '
            '| wait>" }',
        ]
    return "\n".join(lines)


__all__ = [
    "NO_BELIEF",
    "belief_line",
    "goal_texts",
    "memory_text",
    "object_positions",
    "system_prompt",
    "target_text",
    "user_prompt",
    "world_description",
]
