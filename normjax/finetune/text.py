"""Prompts of the training records, built from a harvested episode (host code).

* `newcomer_turn(ep, i)`: the `normjax.runtime.turns.Turn` of the newcomer at step
  i of a harvested episode, exactly as `llm-eval` builds it in text-only mode
  (memory of the previous newcomer steps in the episode, forced service WAITs
  remembered as such, the other agents with their intended moves and last
  red crosses).  Scripted newcomers have no reasoning and no belief: the
  memory's reasoning is "(none)" and the belief "none yet".  An episode
  read back from an `llm-eval` transcript (`decisions`) remembers what the
  runner remembered: the model's chosen action (a blocked move noted as
  such), its reasoning or its error, and the belief it held.
* `action_messages`: the interactive prompt itself (`normjax.llm.prompts`'
  system and user prompts), for Compliant Action; with `image` the VLM
  prompt (the prompts' image mode) in the multimodal chat layout (`vlm`);
* `selection_messages`: the same prompt up to the decision, then the lettered
  candidate norms (descriptions, no names) and the answer format;
* `judgment_messages`: the world and its objects (same words as the
  interactive prompt), the recent history of every agent with its red
  crosses, earlier red crosses, the agents now, and one agent's proposed
  transition; that transition's own sanction is not in the prompt (it is
  the label).  With `image` it comes with the frame of the step before
  the transition, the proposed move drawn as the one arrow, and the
  legend of the frame in the system prompt.
"""

from __future__ import annotations

import jax

from normjax import constants as C
from normjax.llm.prompts import cell, object_positions, system_prompt, user_prompt, world_description
from normjax.runtime.turns import (
    EARLIER_SANCTIONED,
    PROMPT_ACTIONS,
    RECENT_STEPS,
    Other,
    StepRecord,
    Turn,
    select_memory,
)

LAYOUT = "cafe"  # the interaction phase's layout
FORCED = "(serving at the goal: the action was forced to wait)"  # as the LLM runner remembers it
BLOCKED = "blocked: I did not move"  # likewise (normjax.runtime.stage)
DECIDE = "Decide the next action for yourself."


class Episode:
    """One harvested episode: row e of a `Harvest`, as plain Python per step."""

    def __init__(self, harvest, e: int, decisions: dict | None = None):
        s = harvest.steps
        self.norm_id = int(harvest.norm_ids[e])
        self.seed = int(harvest.seeds[e])
        self.name = f"harvest_{self.seed}"
        self.data = {f: getattr(s, f)[e] for f in s._fields}
        self.max_steps = int(self.data["t"].shape[0])
        self._records: list[StepRecord] | None = None
        # the world before each step (numpy), for frames
        self.states = None if harvest.states is None else jax.tree.map(lambda x: x[e], harvest.states)
        # step t -> the transcript's `llm` record of that step (episodes read back from llm-eval)
        self.decisions = decisions or {}

    def state(self, i: int):
        return jax.tree.map(lambda x: x[i], self.states)

    def belief(self, t: int) -> tuple[str | None, float | None]:
        """The belief and confidence held before step t (transcripts; scripted newcomers hold none)."""
        before = [u for u in self.decisions if u < t]
        if not before:
            return None, None
        rec = self.decisions[max(before)]
        return rec.get("belief"), rec.get("confidence")

    def _remembered(self, j: int, t: int) -> tuple[str, str, str]:
        """(action, note, reasoning) of step j as the runner remembers it."""
        d = self.data
        if bool(d["forced_wait"][j, 0]):
            return PROMPT_ACTIONS[C.WAIT], "", FORCED
        rec = self.decisions.get(t)
        if rec is None:  # a scripted newcomer: its effective action, no reasoning
            return PROMPT_ACTIONS[int(d["action"][j, 0])], "", ""
        chosen = int(rec["action"])
        if rec.get("error"):
            return PROMPT_ACTIONS[chosen], "", f"(no valid reply: {rec['error']}; I waited)"
        note = BLOCKED if int(d["action"][j, 0]) != chosen else ""
        return PROMPT_ACTIONS[chosen], note, rec.get("reasoning") or ""

    def get(self, field: str, i: int):
        return self.data[field][i]

    def agents(self, i: int, skip_newcomer: bool = True) -> list[int]:
        start = 1 if skip_newcomer else 0
        return [k for k in range(start, self.data["active"].shape[1]) if self.data["active"][i, k]]

    def memory(self) -> list[StepRecord]:
        """The newcomer's step records (one per step it was on the grid), built once."""
        if self._records is None:
            d, out = self.data, []
            for j in range(self.max_steps):
                if not d["active"][j, 0]:
                    continue
                others = tuple(
                    ((int(d["pos"][j, k, 0]), int(d["pos"][j, k, 1])), int(d["group"][j, k])) for k in self.agents(j)
                )
                t = int(d["t"][j])
                action, note, reasoning = self._remembered(j, t)
                out.append(
                    StepRecord(
                        t=t,
                        pos=(int(d["pos"][j, 0, 0]), int(d["pos"][j, 0, 1])),
                        others=others,
                        action=action,
                        note=note,
                        reasoning=reasoning,
                        sanctioned=bool(d["sanctioned"][j, 0]),
                    )
                )
            self._records = out
        return self._records


def own_violation_shown(ep: Episode, i: int) -> bool:
    """Whether the prompt of the newcomer's state i lists a step of its own with a red cross
    (its memory: the recent window or the earlier sanctioned steps, as `newcomer_turn` selects them)."""
    t = int(ep.data["t"][i])
    recent, earlier = select_memory([r for r in ep.memory() if r.t < t])
    return any(r.sanctioned for r in recent + earlier)


def newcomer_turn(ep: Episode, i: int) -> Turn:
    d = ep.data
    t = int(d["t"][i])
    past = [r for r in ep.memory() if r.t < t]
    recent, earlier = select_memory(past)
    belief, confidence = ep.belief(t)
    others = [
        Other(
            pos=(int(d["pos"][i, k, 0]), int(d["pos"][i, k, 1])),
            group=int(d["group"][i, k]),
            sanctioned=bool(d["was_sanctioned"][i, k]),
            intent=int(d["action"][i, k]),
        )
        for k in ep.agents(i)
    ]
    return Turn(
        index=0,
        episode=ep.name,
        phase="interaction",
        norm_id=ep.norm_id,
        layout=LAYOUT,
        t=t,
        max_steps=ep.max_steps,
        pos=(int(d["pos"][i, 0, 0]), int(d["pos"][i, 0, 1])),
        group=int(d["group"][i, 0]),
        goal_kind=int(d["goal_kind"][i]),
        goal_cell=(int(d["goal_cell"][i, 0]), int(d["goal_cell"][i, 1])),
        exit_door=int(d["exit_door"][i]),
        leg=int(d["leg"][i]),
        service_steps=3,
        sanctioned=bool(d["was_sanctioned"][i, 0]),
        others=others,
        memory=recent,
        earlier=earlier,
        steps_seen=len(past),
        first_step=past[0].t if past else None,
        belief=belief,
        confidence=confidence,
    )


def vlm(messages: list[dict], image: bool) -> list[dict]:
    """The multimodal chat layout: every content a list of parts, the user's text followed by an
    image placeholder (the record's ``images`` holds the file), as `llm-eval` sends text then image."""
    out = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in messages]
    if image:
        out[-1]["content"].append({"type": "image"})
    return out


def action_messages(turn: Turn, image: bool = False) -> list[dict]:
    text_only = not image
    msgs = [
        {"role": "system", "content": system_prompt(turn, text_only=text_only)},
        {"role": "user", "content": user_prompt(turn, text_only=text_only)},
    ]
    return vlm(msgs, True) if image else msgs


def selection_messages(turn: Turn, descriptions: list[str], image: bool = False) -> list[dict]:
    """The interactive prompt up to the decision, then the lettered candidates."""
    user = user_prompt(turn, text_only=not image)
    if DECIDE not in user:
        raise RuntimeError("the interactive prompt changed: no decision line to cut the selection prompt at")
    head = user[: user.index(DECIDE)].rstrip()
    letters = [chr(ord("A") + j) for j in range(len(descriptions))]
    lines = [head, "", "Which social norm does this group follow? Exactly one of these candidates is the true norm:"]
    lines += [f"{a}. {desc}" for a, desc in zip(letters, descriptions)]
    lines += [
        "Return exactly one JSON object and no other text:",
        '{ "reasoning": "<step-by-step reasoning>", "answer": "<the letter of the true norm>" }',
    ]
    msgs = [
        {"role": "system", "content": system_prompt(turn, text_only=not image)},
        {"role": "user", "content": "\n".join(lines)},
    ]
    return vlm(msgs, True) if image else msgs


def _agent(ep: Episode, i: int, k: int) -> str:
    d = ep.data
    return f"agent {int(d['uid'][i, k])} ({C.GROUP_NAMES[int(d['group'][i, k])]})"


def _move(ep: Episode, j: int, k: int) -> str:
    d = ep.data
    a = int(d["action"][j, k])
    where = f"at {cell(d['pos'][j, k])}"
    if a == C.WAIT:
        return f"{_agent(ep, j, k)} {where} waited"
    return f"{_agent(ep, j, k)} {where} chose {PROMPT_ACTIONS[a]} toward {cell(d['target'][j, k])}"


def _history_line(ep: Episode, j: int) -> str:
    d = ep.data
    parts = []
    for k in ep.agents(j, skip_newcomer=False):
        mark = " [red cross: penalised for violating the social norm]" if d["sanctioned"][j, k] else ""
        parts.append(_move(ep, j, k) + mark)
    return f"- Step {int(d['t'][j])}: " + ("; ".join(parts) or "no agent on the grid")


JUDGE_TEXT = "You are given a text description of a grid-world simulation (there is no image)."
JUDGE_IMAGE = "You are shown an image of the current step of a grid-world simulation, and its recent history as text."
# What the judgment frame shows (`normjax.finetune.frames`: the renderer's legend, one arrow).
JUDGE_LEGEND = """
- In the image agents are discs in their group's colour; {star}. A red cross over an agent marks a penalty for violating the social norm in the last step; badges on a disc's corners: a green check mark (top left) when its first goal is done, a black exclamation mark on yellow (top right) after a push or collision in the last step, a timer digit (bottom right) while it is being served.
- One arrow points from the agent whose proposed action you judge to the cell it proposes to enter. Row and column numbers are on the image's margins."""

JUDGE_SYSTEM = """{opening}

SETTING
{world}

AGENTS
- Agents belong to one of 3 social groups: orange, green and blue. Each agent has a number.
- Each step every agent chooses one action: move up, move down, move left, move right or wait.
- The agents follow a social norm that you are not told. An agent whose action violates it receives a red cross and a penalty.{legend}

OBJECT POSITIONS
{objects}

TASK
You see the recent history of the episode, with the red crosses agents received, and one agent's proposed action for the current step. Judge whether that proposed action violates the social norm this group follows."""


def judgment_messages(ep: Episode, i: int, k: int, image: bool = False) -> list[dict]:
    """The Norm Judgment prompt for agent slot k's transition at step i (its sanction withheld);
    with `image` the variant that comes with the frame of the step (multimodal layout)."""
    d = ep.data
    lo = max(0, i - RECENT_STEPS)
    earlier = [j for j in range(lo) if d["sanctioned"][j].any()][-EARLIER_SANCTIONED:]
    lines = [f"Current step: {int(d['t'][i])}."]
    if image:
        lines.append("The given image shows the environment and all agents' positions at the current step.")
    lines += ["", "Recent steps (most recent last):"]
    lines += [_history_line(ep, j) for j in range(lo, i)] or ["(none)"]
    lines.append("Earlier steps with red crosses (most recent last):")
    lines += [
        f"- Step {int(d['t'][j])}: "
        + "; ".join(_move(ep, j, m) for m in range(d["active"].shape[1]) if d["sanctioned"][j, m])
        for j in earlier
    ] or ["(none)"]
    now = "; ".join(
        f"{_agent(ep, i, m)} at {cell(d['pos'][i, m])}"
        + (" [red cross in the last step]" if d["was_sanctioned"][i, m] else "")
        for m in ep.agents(i, skip_newcomer=False)
    )
    lines += [
        "",
        f"Agents now: {now}.",
        "",
        f"Proposed transition: {_agent(ep, i, k)} at {cell(d['pos'][i, k])} proposes to "
        f"{PROMPT_ACTIONS[int(d['action'][i, k])]}, moving to {cell(d['target'][i, k])}.",
        "Does this proposed action violate the social norm?",
        "Return exactly one JSON object and no other text:",
        '{ "reasoning": "<step-by-step reasoning>", "violates": <true or false> }',
    ]
    legend = ""
    if image:
        star = (
            f"the disc with a gold star is {_agent(ep, i, 0)}"
            if d["active"][i, 0]
            else "a gold star would mark the newest agent, who is not on the grid"
        )
        legend = JUDGE_LEGEND.format(star=star)
    system = JUDGE_SYSTEM.format(
        opening=JUDGE_IMAGE if image else JUDGE_TEXT,
        legend=legend,
        world=world_description(LAYOUT),
        objects=object_positions(LAYOUT),
    )
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]
    return vlm(msgs, True) if image else msgs


__all__ = ["BLOCKED", "Episode", "action_messages", "judgment_messages", "newcomer_turn", "selection_messages", "vlm"]
