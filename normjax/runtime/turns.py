"""What the runner hands an external agent each step, and what it gets back.

* `Turn`: one newcomer's decision point: where it is, its goals, the other
  agents (position, group, public sanction of the last step, intended next
  move when the agent asked for intents), its own sanction of the last step,
  its memory and its norm belief, and optionally the rendered frame (PNG).
* `StepRecord`: one step of the newcomer's memory (paper appendix, "Memory
  text"): its position, the other agents' positions, its action, its
  reasoning, and whether it was sanctioned.
* `Decision`: the agent's answer for one `Turn`: an action id and, for LLM
  agents, everything worth keeping in a transcript.

Memory (paper §4.1 and appendix): the 10 most recent steps plus up to 5
earlier steps in which the newcomer was sanctioned (the most recent ones
outside the window, never duplicating a recent step) - `select_memory`.
In the interaction phase one memory spans all successive newcomers; each test
episode starts with an empty memory.
"""

from __future__ import annotations

import dataclasses

from normjax import constants as C

RECENT_STEPS = 10
EARLIER_SANCTIONED = 5
# The prompt's spelling of each action id (paper appendix), as the memory records it.
PROMPT_ACTIONS = ("move up", "move down", "move left", "move right", "wait")

Cell = tuple[int, int]


@dataclasses.dataclass(frozen=True)
class Other:
    """Another agent on the grid at the start of the step."""

    pos: Cell
    group: int  # 0 orange, 1 green, 2 blue
    sanctioned: bool  # public sanction (red cross) for its action in the last step
    intent: int | None = None  # its intended next move (action id), when computed


@dataclasses.dataclass(frozen=True)
class StepRecord:
    """One remembered step of the newcomer."""

    t: int
    pos: Cell
    others: tuple[tuple[Cell, int], ...]  # (position, group)
    action: str  # the action as the prompt names it ("move up", ..., "wait")
    note: str  # why the executed move differs from the choice, or ""
    reasoning: str
    sanctioned: bool


@dataclasses.dataclass
class Turn:
    """One decision point of one episode (host data only; JSON-friendly)."""

    index: int  # the episode's index in the runner's batch
    episode: str  # e.g. "forbidden_zone_q/seen_1"
    phase: str  # "interaction", "seen" or "unseen"
    norm_id: int
    layout: str
    t: int  # the global step index (the one the norms use)
    max_steps: int
    pos: Cell
    group: int
    goal_kind: int
    goal_cell: Cell
    exit_door: int
    leg: int  # 0: working on goal 1, 1: on goal 2
    service_steps: int
    sanctioned: bool  # the newcomer itself was sanctioned in the last step
    others: list[Other]
    memory: list[StepRecord]  # the recent window, oldest first
    earlier: list[StepRecord]  # earlier sanctioned steps, oldest first
    steps_seen: int  # steps in this memory so far
    first_step: int | None
    belief: str | None  # latest (interaction) or frozen (test) belief
    confidence: float | None
    frame: bytes | None = None  # PNG of the state (with arrows), for VLMs
    frame_file: str | None = None  # where the runner saved it (relative to the transcript)

    @property
    def stage(self) -> str:
        return "interaction" if self.phase == "interaction" else "test"


@dataclasses.dataclass
class Decision:
    """An agent's answer to a Turn.  `action` is always a valid id (WAIT on errors)."""

    action: int = C.WAIT
    error: str | None = None
    reasoning: str = ""
    belief: str | None = None
    confidence: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    reply: str | None = None  # raw model text
    messages: list | None = None  # the request, images replaced by their frame files
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    latency_s: float = 0.0
    failed_request: bool = False  # the error is the endpoint's (no reply), not the model's
    attempt_errors: list = dataclasses.field(default_factory=list)  # why each failed attempt failed
    module: dict | None = None  # a normative module's proposal and calls (normjax.llm.modules); None without one


MODULE_COUNTERS = ("module_calls", "module_errors", "module_tokens_in", "module_tokens_out")


def module_counts(decision: Decision) -> dict:
    """The per-episode counters (`MODULE_COUNTERS`) of one decision's normative-module calls."""
    calls = decision.module["calls"] if decision.module is not None else []
    return dict(
        module_calls=len(calls),
        module_errors=sum(c["error"] is not None for c in calls),
        module_tokens_in=sum(c["tokens_in"] for c in calls),
        module_tokens_out=sum(c["tokens_out"] for c in calls),
    )


def select_memory(
    records: list[StepRecord], recent: int = RECENT_STEPS, earlier: int = EARLIER_SANCTIONED
) -> tuple[list[StepRecord], list[StepRecord]]:
    """(recent window, earlier sanctioned steps outside it), both oldest first."""
    window = records[-recent:] if recent > 0 else []
    older = records[: len(records) - len(window)]
    return window, [r for r in older if r.sanctioned][-earlier:] if earlier > 0 else []


__all__ = [
    "Cell",
    "Decision",
    "EARLIER_SANCTIONED",
    "MODULE_COUNTERS",
    "Other",
    "PROMPT_ACTIONS",
    "RECENT_STEPS",
    "StepRecord",
    "Turn",
    "module_counts",
    "select_memory",
]
