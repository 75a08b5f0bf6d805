"""The normative modules (normjax.llm.modules) on scripted turns, without the world.

A fake client records every chat call; turns are built by hand, so each test checks
which prompts a module sends, at which steps, with which evidence window, what it
records, and what reaches the decision.  The modules in the protocol, behind the CLI
and the fake server: tests/llm/test_module_runs.py.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from normjax import constants as C
from normjax.layouts import load_layout
from normjax.llm.client import ChatResult
from normjax.llm.modules import BLOCK, WINDOW, ModuleAgent, window_start
from normjax.runtime.turns import Other, StepRecord, Turn
from normjax.world.state import GOAL_CELL

BASE = {"reasoning": "shortest path", "action": "move right", "belief": "base belief", "confidence": 0.3}


class FakeClient:
    """Answers the newcomer's prompts with BASE and the module's by the step its prompt asks for."""

    def __init__(self, edit_action="wait"):
        self.calls, self.edit_action = [], edit_action

    async def chat(self, messages, **kw):
        system, user = messages[0]["content"], messages[-1]["content"]
        self.calls.append((step_of(system, user), user))
        if "normative module" not in system:
            reply = dict(BASE)
        elif "Edit the proposal" in user:
            reply = {"reasoning": "edited", "action": self.edit_action, "belief": "edited belief", "confidence": 0.9}
        elif "Encode this episode" in user:
            reply = {"summary": f"record {user.count('- step')}"}
        elif "Introspect" in user:
            reply = {"own_belief": "mine", "uncertainty": "much"}
        elif "Infer the community members' minds" in user:
            reply = {"others_belief": "theirs", "enforcement": "crosses"}
        else:
            reply = {"reasoning": "r", "norm": f"rule {len(self.calls)}", "confidence": 0.5}
        text = json.dumps(reply)
        return ChatResult(text=text, tokens_in=len(user) // 4, tokens_out=len(text) // 4)


def step_of(system: str, user: str) -> str:
    if "normative module" not in system:
        return "base"
    for key, step in (
        ("Edit the proposal", "edit"),
        ("Encode this episode", "encoding"),
        ("Introspect", "introspection"),
        ("Infer the community members' minds", "inference"),
        ("BELIEF RECORDS", "synthesis"),
    ):
        if key in user:
            return step
    return "infer"


def turn(t: int, others, memory=(), phase="interaction", belief=None, episode="e/interaction") -> Turn:
    lay = load_layout("cafe")
    return Turn(
        index=0,
        episode=episode,
        phase=phase,
        norm_id=0,
        layout="cafe",
        t=t,
        max_steps=200,
        pos=(5, 7),
        group=0,
        goal_kind=GOAL_CELL,
        goal_cell=tuple(int(x) for x in lay.service),
        exit_door=0,
        leg=0,
        service_steps=3,
        sanctioned=False,
        others=list(others),
        memory=list(memory),
        earlier=[],
        steps_seen=len(memory),
        first_step=memory[0].t if memory else None,
        belief=belief,
        confidence=None,
    )


def walkers(t: int) -> list[Other]:
    """An orange agent walking right along row 3 (never sanctioned) and a green one walking up
    column 10 (sanctioned every step after its first): both seen at every step."""
    return [
        Other((3, 1 + t % 12), 0, False, C.RIGHT),
        Other((9 - t % 7, 10), 1, t % 7 > 0, C.UP),
    ]


def own(t: int) -> StepRecord:
    return StepRecord(t, (5, 7), (), "move left", "", "r", sanctioned=t % 5 == 4)


def play(agent, ts, phase="interaction", belief=None):
    out = []
    for t in ts:
        memory = [own(s) for s in range(max(0, t - 10), t)]
        (d,) = asyncio.run(agent.act([turn(t, walkers(t), memory, phase, belief)], None))
        out.append(d)
    return out


def test_direct_edit_edits_each_decision_after_its_nearest_compliant_examples():
    base, module = FakeClient(), FakeClient()
    agent = ModuleAgent(base, module, "direct_edit", text_only=True)
    (first,) = play(agent, [0])
    assert module.calls == [] and first.module["calls"] == []  # nothing observed yet: the proposal passes
    assert (first.action, first.belief) == (C.RIGHT, "base belief")
    (second,) = play(agent, [1])
    (step, prompt) = module.calls[0]
    assert step == "edit" and len(module.calls) == 1
    assert "- step 0: an orange agent at (3, 1) chose move right" in prompt  # compliant: no cross at step 1
    assert "green agent" not in prompt  # moves followed by a red cross are no examples
    assert "Proposed action: move right" in prompt and "Proposed norm belief: base belief" in prompt
    assert (second.action, second.belief, second.confidence) == (C.WAIT, "edited belief", 0.9)
    assert second.reasoning == "shortest path [The normative module changed my action to wait: edited]"
    assert second.module["proposal"]["action"] == C.RIGHT and second.module["calls"][0]["step"] == "edit"
    assert second.module["calls"][0]["tokens_in"] > 0 and second.module["calls"][0]["messages"][1]["content"] == prompt
    third = play(agent, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])[-1]  # at most EXAMPLES, nearest first
    prompt = module.calls[-1][1]
    assert prompt.count("an orange agent") == 10 and third.action == C.WAIT


@pytest.mark.parametrize("kind", ["infer_edit", "contrastive"])
def test_inference_runs_after_each_grid_episode_over_a_window_of_ten(kind):
    base, module = FakeClient("move right"), FakeClient("move right")
    agent = ModuleAgent(base, module, kind, text_only=True)
    decisions = play(agent, range(0, 12 * BLOCK + 1))
    infers = [
        (d.module["calls"], i) for i, d in enumerate(decisions) if any(c["step"] == "infer" for c in d.module["calls"])
    ]
    assert [i for _, i in infers] == [b * BLOCK for b in range(1, 13)]  # once per completed grid episode
    assert all(len(d.module["calls"]) == 1 and d.module["calls"][0]["step"] == "edit" for d in decisions[1:BLOCK])
    calls, t = infers[-1]
    infer = calls[0]["messages"][1]["content"]
    assert calls[0]["step"] == "infer" and calls[1]["step"] == "edit"
    steps = [int(x.split(":")[0]) for x in infer.split("- step ")[1:]]
    assert min(steps) >= window_start(t - BLOCK) == (t // BLOCK - WINDOW) * BLOCK and max(steps) < t
    assert "Previous hypothesis: rule" in infer  # the previous rule is given back
    edit = calls[1]["messages"][1]["content"]
    assert "INFERRED NORM: rule" in edit
    if kind == "contrastive":
        assert "SANCTIONED MOVES" in infer and "a green agent" in infer and "the newcomer at (5, 7)" in infer
    else:
        assert (
            "SANCTIONED" not in infer
            and "green agent" not in infer
            and "the newcomer" not in infer.split("Previous")[0]
        )


def test_theory_of_mind_updates_with_four_calls_and_a_window_of_ten_records():
    base, module = FakeClient("move right"), FakeClient("move right")
    agent = ModuleAgent(base, module, "theory_of_mind", text_only=True)
    decisions = play(agent, range(0, 12 * BLOCK + 1))
    for i, d in enumerate(decisions):
        steps = [c["step"] for c in d.module["calls"]]
        if i and i % BLOCK == 0:
            assert steps[0] == "encoding" and sorted(steps[1:3]) == ["inference", "introspection"]
            assert steps[3:] == ["synthesis", "edit"]
        else:
            assert steps == ["edit"]
    synthesis = decisions[-1].module["calls"][3]["messages"][1]["content"]
    assert "BELIEF RECORDS OF THE LAST 10 EPISODE(S)" in synthesis
    assert "steps 20-29:" in synthesis and "steps 10-19:" not in synthesis and "steps 110-119:" in synthesis
    assert "own belief: mine" in synthesis and "enforcement: crosses" in synthesis
    encoding = decisions[-1].module["calls"][0]["messages"][1]["content"]
    ts = [int(x.split(":")[0]) for x in encoding.split("- step ")[1:]]
    assert ts and min(ts) >= 110 and max(ts) <= 119  # the completed grid episode only


@pytest.mark.parametrize("kind", ["infer_edit", "contrastive", "theory_of_mind"])
def test_the_test_stage_edits_after_the_frozen_belief_without_inference(kind):
    base, module = FakeClient("move up"), FakeClient("move up")
    agent = ModuleAgent(base, module, kind, text_only=True)
    decisions = play(agent, range(0, 2 * BLOCK + 1), phase="seen", belief="frozen rule")
    assert all([c["step"] for c in d.module["calls"]] == ["edit"] for d in decisions)
    assert all("INFERRED NORM: frozen rule" in c for s, c in module.calls)
    assert all(d.action == C.UP and d.belief is None for d in decisions)  # test replies carry no belief


def test_an_unusable_or_failed_module_reply_leaves_the_proposal():
    class Broken(FakeClient):
        async def chat(self, messages, **kw):
            self.calls.append(("edit", messages[-1]["content"]))
            if len(self.calls) == 1:
                return ChatResult(error="HTTP 500: down")
            return ChatResult(text="no json here", tokens_in=3, tokens_out=2)

    agent = ModuleAgent(FakeClient(), Broken(), "infer_edit", text_only=True)
    first, second = play(agent, [0, 1])
    assert first.action == second.action == C.RIGHT and first.belief == "base belief"
    assert "module edit failed" in first.warnings[-1] and "module edit unusable" in second.warnings[-1]
    assert first.module["calls"][0]["error"] == "HTTP 500: down"


def test_memory_is_no_module_and_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="'memory' has no module; allowed: direct_edit, infer_edit"):
        ModuleAgent(FakeClient(), FakeClient(), "memory")
    with pytest.raises(ValueError, match="'tom'"):
        ModuleAgent(FakeClient(), FakeClient(), "tom")
