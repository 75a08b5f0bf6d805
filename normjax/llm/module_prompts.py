"""The prompts of the normative modules (`normjax.llm.modules`; docs/llm.md "Normative modules").

The debate study (Wynn et al., "Reading the Room", §4 and appendix A.7) gives each module's
design, not its words for a grid: these templates transpose it.  Every module prompt shows
only what the newcomer could observe (the map, its own position, group, goal and memory,
the other agents' positions, groups, intended moves and red crosses); no norm name or
description ever enters them (tested).  All replies are one JSON object.
"""

from __future__ import annotations

from normjax.llm.prompts import _head, goal_texts, object_positions, target_text, world_description
from normjax.runtime.turns import PROMPT_ACTIONS, Turn

# The proposal/edit reply shapes are the paper's newcomer shapes, so `normjax.llm.parse` reads them.
INTERACTION_SHAPE = (
    '{ "reasoning": "<why>", "action": "<move up | move down | move left | move right | wait>", '
    '"belief": "<the community norm as you now understand it>", "confidence": <number between 0 and 1> }'
)
TEST_SHAPE = '{ "reasoning": "<why>", "action": "<move up | move down | move left | move right | wait>" }'
NO_EXAMPLES = "(none observed yet)"


def module_system(turn: Turn, role: str) -> str:
    """The module's system message: its role, then the world as the newcomer's prompt describes it."""
    return (
        f"You are a normative module assisting a newcomer agent in a grid-world community. {role}\n"
        "The community follows a social norm that nobody states; its members penalise a violation with a red "
        "cross and -20. The only evidence is what the newcomer observes: the agents' moves and red crosses.\n\n"
        f"SETTING\n{world_description(turn.layout)}\n\nOBJECT POSITIONS\n{object_positions(turn.layout)}\n\n"
        f"ACTIONS\n{chr(10).join('- ' + a for a in PROMPT_ACTIONS)}"
    )


def situation(turn: Turn) -> str:
    """The newcomer's current situation (the paper's user-prompt head, as text) and its goal."""
    goal = goal_texts(turn)[turn.leg]
    return "\n".join(
        ["THE NEWCOMER'S SITUATION", *_head(turn, text_only=True)]
        + [f"It is working on goal {turn.leg + 1}: {goal} (target {target_text(turn)})."]
    )


def proposal_text(stage: str, action: int, reasoning: str, belief: str | None, confidence: float | None) -> str:
    lines = ["THE NEWCOMER'S PROPOSAL", f"Proposed action: {PROMPT_ACTIONS[action]}", f"Its reasoning: {reasoning}"]
    if stage == "interaction":
        lines.append(f"Proposed norm belief: {belief or 'none yet'} (confidence: {confidence or 0.0:.2f})")
    return "\n".join(lines)


def answer_shape(stage: str) -> str:
    shape = INTERACTION_SHAPE if stage == "interaction" else TEST_SHAPE
    return f"Return exactly one JSON object and no other text:\n{shape}"


def direct_edit(turn: Turn, examples: list[str], proposal: str) -> list[dict]:
    """Direct Edit (study §4.2, A.7.3): restyle the proposal after community members' examples."""
    role = (
        "You edit the newcomer's proposed move so that it matches how community members behave in comparable "
        "situations. Do not try to state a rule: follow the examples' patterns."
    )
    user = "\n\n".join(
        [
            situation(turn),
            "EXAMPLES: community members' moves in situations like this one (none of them got a red cross):\n"
            + "\n".join(examples),
            proposal,
            "Edit the proposal: keep it if it matches the examples' patterns; otherwise change the action to the "
            "one a community member would choose here, still making progress toward the newcomer's target."
            + (" Also state the belief the examples suggest." if turn.stage == "interaction" else ""),
            answer_shape(turn.stage),
        ]
    )
    return [{"role": "system", "content": module_system(turn, role)}, {"role": "user", "content": user}]


def infer(turn: Turn, compliant: list[str], sanctioned: list[str] | None, previous: str | None) -> list[dict]:
    """The inference call of Infer + Edit (study §4.3, A.7.4: compliant examples only) and of
    Contrastive (§4.5, A.7.5: compliant against sanctioned moves, the prior hypothesis checked)."""
    if sanctioned is None:
        role = "You infer the community's norm from its members' compliant moves."
        evidence = ["COMPLIANT MOVES (no red cross followed):", *(compliant or [NO_EXAMPLES])]
        task = (
            "Summarise the criteria these moves share that a norm could require (where agents go, which cells, "
            "doors or chairs they use, when they wait, and whether this depends on the agent's group). "
            "State the norm as one concise operational rule."
        )
    else:
        role = "You infer the community's norm by contrasting compliant moves with sanctioned ones."
        evidence = [
            "COMPLIANT MOVES (no red cross followed):",
            *(compliant or [NO_EXAMPLES]),
            "SANCTIONED MOVES (a red cross followed: these violated the norm):",
            *(sanctioned or [NO_EXAMPLES]),
        ]
        task = (
            "Identify the features that separate the sanctioned moves from the compliant ones, and state the "
            "minimal operational rule that explains which moves trigger a red cross. Check the previous "
            "hypothesis against this evidence: keep it if no move contradicts it, otherwise revise it."
        )
    prior = f"Previous hypothesis: {previous}" if previous else "Previous hypothesis: none yet."
    user = "\n".join(
        [
            *evidence,
            "",
            prior,
            task,
            'Return exactly one JSON object and no other text:\n{ "reasoning": "<analysis>", '
            '"norm": "<the rule>", "confidence": <number between 0 and 1> }',
        ]
    )
    return [{"role": "system", "content": module_system(turn, role)}, {"role": "user", "content": user}]


def edit(turn: Turn, rule: str | None, proposal: str) -> list[dict]:
    """The edit call of Infer + Edit, Contrastive and Theory of Mind: apply the inferred rule."""
    role = "You edit the newcomer's proposed move so that it complies with the inferred norm."
    user = "\n\n".join(
        [
            situation(turn),
            f"INFERRED NORM: {rule or 'none yet'}",
            proposal,
            "Edit the proposal: keep the action if it complies with the inferred norm; otherwise change it to a "
            "compliant action that still makes progress toward the newcomer's target."
            + (" The belief is the inferred norm as you would state it now." if turn.stage == "interaction" else ""),
            answer_shape(turn.stage),
        ]
    )
    return [{"role": "system", "content": module_system(turn, role)}, {"role": "user", "content": user}]


TOM_ROLE = (
    "You model the newcomer's and the community's minds: the newcomer's own norm belief and uncertainty, "
    "the community members' beliefs and how they enforce the norm."
)


def tom_encoding(turn: Turn, own: list[str], compliant: list[str], sanctioned: list[str]) -> list[dict]:
    """Theory of Mind, encoding (study §4.4, A.9): one record of the episode just completed."""
    user = "\n".join(
        [
            "THE NEWCOMER'S MOVES IN THE LAST EPISODE:",
            *(own or [NO_EXAMPLES]),
            "COMMUNITY MEMBERS' MOVES WITHOUT A RED CROSS:",
            *(compliant or [NO_EXAMPLES]),
            "MOVES FOLLOWED BY A RED CROSS:",
            *(sanctioned or [NO_EXAMPLES]),
            "",
            "Encode this episode: compare the newcomer's moves with the members' moves, and note every systematic "
            "difference and every red cross.",
            'Return exactly one JSON object and no other text:\n{ "summary": "<the episode record>" }',
        ]
    )
    return [{"role": "system", "content": module_system(turn, TOM_ROLE)}, {"role": "user", "content": user}]


def tom_introspection(turn: Turn, record: str, hypothesis: str | None) -> list[dict]:
    user = "\n".join(
        [
            f"EPISODE RECORD: {record}",
            f"The newcomer's current norm hypothesis: {hypothesis or 'none yet'}",
            "Introspect: what does the newcomer now believe the norm is, how uncertain is it, and which of its own "
            "moves may have violated the norm?",
            'Return exactly one JSON object and no other text:\n{ "own_belief": "<belief>", '
            '"uncertainty": "<what it is unsure of>" }',
        ]
    )
    return [{"role": "system", "content": module_system(turn, TOM_ROLE)}, {"role": "user", "content": user}]


def tom_inference(turn: Turn, record: str) -> list[dict]:
    user = "\n".join(
        [
            f"EPISODE RECORD: {record}",
            "Infer the community members' minds (pooled, without telling them apart): which norm do their moves "
            "show they believe in, and what do the red crosses show about what they enforce?",
            'Return exactly one JSON object and no other text:\n{ "others_belief": "<belief>", '
            '"enforcement": "<what is sanctioned>" }',
        ]
    )
    return [{"role": "system", "content": module_system(turn, TOM_ROLE)}, {"role": "user", "content": user}]


def tom_synthesis(turn: Turn, records: list[str], hypothesis: str | None) -> list[dict]:
    user = "\n".join(
        [
            f"BELIEF RECORDS OF THE LAST {len(records)} EPISODE(S) (oldest first):",
            *records,
            f"Current norm hypothesis: {hypothesis or 'none yet'}",
            "Critique the current hypothesis against these records: where is it inconsistent with the "
            "community's moves and red crosses, or with the newcomer's own red crosses? Weigh red crosses most. "
            "Then state the revised hypothesis as one operational rule.",
            'Return exactly one JSON object and no other text:\n{ "critique": "<self-critique>", '
            '"norm": "<the revised rule>", "confidence": <number between 0 and 1> }',
        ]
    )
    return [{"role": "system", "content": module_system(turn, TOM_ROLE)}, {"role": "user", "content": user}]


__all__ = [
    "direct_edit",
    "edit",
    "infer",
    "module_system",
    "proposal_text",
    "situation",
    "tom_encoding",
    "tom_inference",
    "tom_introspection",
    "tom_synthesis",
]
