"""Normative modules for the LLM newcomer (``llm-eval --newcomer``; docs/llm.md "Normative modules").

The debate study (Wynn et al., §4-5, appendix A.7-A.9) wraps a memory newcomer with a
module that edits its proposed response after an inferred norm, possibly with another
model.  `ModuleAgent` does that on the grid: the paper's newcomer call (`LLMAgent`, the
base client) proposes an action and a belief; the module's calls (the module client)
edit them.  The kinds (`NEWCOMERS`):

* ``memory``: no module (`LLMAgent` itself; byte-identical runs);
* ``direct_edit``: each decision, one edit call with the community members' compliant
  moves nearest the newcomer's position as examples (none observed yet: no call);
* ``infer_edit``: after each completed grid episode, one inference call (compliant moves
  and the previous rule); each decision, one edit call applying the rule;
* ``contrastive``: as ``infer_edit``, the inference contrasting compliant moves with
  sanctioned ones (other agents' and the newcomer's own);
* ``theory_of_mind``: after each completed grid episode, encoding, introspection and
  first-order inference (others pooled) and a synthesis with self-critique over the
  records of the last 10 episodes; each decision, one edit call.

A grid "episode" (the study's debate) is a block of `BLOCK` consecutive steps of one
protocol episode (``t // BLOCK``), and the evidence window is the last `WINDOW` of them,
as the study's sliding window of 10 debates.  Evidence is only what the newcomer sees
(`Turn.others` and its own memory), kept per protocol episode inside the agent: a
member's move is its intended move at step t (the frame's arrow), labelled by whether
an agent of its group stands on the cell it moved to at step t + 1 with or without a red
cross (moves not seen at both steps are left out).  The test stage freezes the belief,
as the protocol does: modules then edit only, with the frozen belief as the rule.  When an
edit changes the action, the newcomer's remembered reasoning says so (its next prompts show
the executed action with the module's reason).
"""

from __future__ import annotations

import asyncio
import dataclasses

from normjax import constants as C
from normjax.cli_names import NEWCOMERS
from normjax.llm import module_prompts as P
from normjax.llm.agents import LLMAgent
from normjax.llm.parse import find_objects, parse_confidence, parse_reply
from normjax.llm.prompts import cell
from normjax.runtime.turns import MODULE_COUNTERS, PROMPT_ACTIONS, Decision, Turn

MODULE_KEY_ENV = "NORMJAX_MODULE_API_KEY"  # the module endpoint's API key, before the main one's
BLOCK = 10  # steps per grid episode
WINDOW = 10  # grid episodes of evidence (the study's sliding window)
EXAMPLES = 10  # nearest compliant examples per Direct Edit call
EVIDENCE = 20  # most recent moves of each kind per inference call
DELTA = {C.UP: (-1, 0), C.DOWN: (1, 0), C.LEFT: (0, -1), C.RIGHT: (0, 1), C.WAIT: (0, 0)}


@dataclasses.dataclass(frozen=True)
class Move:
    """An observed move: at step t an agent of `group` at `pos` took `action`."""

    t: int
    pos: tuple
    group: int
    action: int
    sanctioned: bool
    own: bool = False

    def text(self) -> str:
        name = C.GROUP_NAMES[self.group]
        who = "the newcomer" if self.own else f"{'an' if name[0] in 'aeiou' else 'a'} {name} agent"
        return f"- step {self.t}: {who} at {cell(self.pos)} chose {PROMPT_ACTIONS[self.action]}"


@dataclasses.dataclass
class EpisodeState:
    """What the module has seen of one protocol episode, and its state there."""

    last_t: int = -1
    last_others: list = dataclasses.field(default_factory=list)
    moves: list = dataclasses.field(default_factory=list)  # members' labelled moves
    block: int = -1  # the grid episode of the last decision
    rule: str | None = None  # the module's current norm hypothesis
    confidence: float | None = None
    records: list = dataclasses.field(default_factory=list)  # ToM belief records (block, text)


def observe(state: EpisodeState, turn: Turn) -> None:
    """Label the members' moves of the previous observed step, if it was step t - 1."""
    others = list(turn.others)
    if state.last_t == turn.t - 1:
        for o in state.last_others:
            if o.intent is None:
                continue
            dr, dc = DELTA.get(int(o.intent), (0, 0))
            dest = (int(o.pos[0]) + dr, int(o.pos[1]) + dc)
            now = [x for x in others if int(x.group) == int(o.group) and tuple(map(int, x.pos)) == dest]
            if now:
                state.moves.append(
                    Move(state.last_t, tuple(map(int, o.pos)), int(o.group), int(o.intent), bool(now[0].sanctioned))
                )
    state.last_t, state.last_others = turn.t, others


def window_start(t: int) -> int:
    """The first step of the evidence window at step t (the last WINDOW grid episodes, this one included)."""
    return max(0, (t // BLOCK - WINDOW + 1) * BLOCK)


def own_moves(turn: Turn, since: int, until: int | None = None) -> list[Move]:
    """The newcomer's remembered steps in [since, until) (recent window and earlier sanctioned)."""
    out = {}
    for r in list(turn.earlier) + list(turn.memory):
        if r.t >= since and (until is None or r.t < until) and r.action in PROMPT_ACTIONS:
            out[r.t] = Move(
                r.t, tuple(map(int, r.pos)), int(turn.group), PROMPT_ACTIONS.index(r.action), r.sanctioned, True
            )
    return [out[t] for t in sorted(out)]


def evidence(state: EpisodeState, turn: Turn, since: int, until: int | None = None):
    """(compliant members' moves, sanctioned moves: members' and the newcomer's), oldest first."""
    moves = [m for m in state.moves if m.t >= since and (until is None or m.t < until)]
    compliant = [m for m in moves if not m.sanctioned]
    sanctioned = sorted(
        [m for m in moves if m.sanctioned] + [m for m in own_moves(turn, since, until) if m.sanctioned],
        key=lambda m: m.t,
    )
    return compliant, sanctioned


def nearest(moves: list[Move], pos, k: int = EXAMPLES) -> list[Move]:
    """The k moves nearest `pos` (Manhattan distance, then most recent), nearest first."""
    key = lambda m: (abs(m.pos[0] - int(pos[0])) + abs(m.pos[1] - int(pos[1])), -m.t)
    return sorted(moves, key=key)[:k]


def reply_object(res) -> dict | None:
    """The last JSON object of a module reply (its own keys, not the newcomer's aliases), or None."""
    if res.error is not None:
        return None
    objects = [o for o in find_objects(res.text) if isinstance(o, dict)]
    return objects[-1] if objects else None


def texts(moves) -> list[str]:
    return [m.text() for m in moves]


def module_call_record(step: str, messages: list[dict], res) -> dict:
    return dict(
        step=step,
        messages=messages,
        reply=res.text,
        error=res.error,
        tokens_in=res.tokens_in,
        tokens_out=res.tokens_out,
        retries=res.retries,
        latency_s=round(res.latency_s, 4),
    )


class ModuleAgent(LLMAgent):
    """`LLMAgent` whose proposals a normative module edits (see the module docstring).

    `module_client` answers the module's calls (another `ChatClient`, possibly another model)."""

    def __init__(self, client, module_client, kind: str, text_only: bool = False, known_norm: bool = False):
        if kind not in NEWCOMERS or kind == "memory":
            raise ValueError(f"newcomer {kind!r} has no module; allowed: {', '.join(NEWCOMERS[1:])}")
        super().__init__(client, text_only=text_only, known_norm=known_norm)
        self.module_client, self.kind = module_client, kind
        self.states: dict[str, EpisodeState] = {}

    def state(self, turn: Turn) -> EpisodeState:
        s = self.states.get(turn.episode)
        if s is None or turn.t < s.last_t:  # a new (or rerun) episode
            s = self.states[turn.episode] = EpisodeState()
            if turn.stage == "test":
                s.rule, s.confidence = turn.belief, turn.confidence
        return s

    async def _call(self, calls: list, step: str, messages: list[dict]):
        res = await self.module_client.chat(messages)
        calls.append(module_call_record(step, messages, res))
        return res

    async def _one(self, turn: Turn) -> Decision:
        s = self.state(turn)
        observe(s, turn)
        d = await super()._one(turn)
        calls: list = []
        d.module = dict(kind=self.kind, calls=calls)
        if d.error is not None:  # no proposal to edit: the newcomer waits, as without a module
            return d
        d.module["proposal"] = dict(action=d.action, belief=d.belief, confidence=d.confidence, reasoning=d.reasoning)
        block = turn.t // BLOCK
        if turn.stage == "interaction" and self.kind != "direct_edit" and s.block >= 0 and block > s.block:
            await self._update(turn, s, calls)
        s.block = block
        proposal = P.proposal_text(turn.stage, d.action, d.reasoning, d.belief, d.confidence)
        if self.kind == "direct_edit":
            compliant, _ = evidence(s, turn, window_start(turn.t))
            if not compliant:  # the study: nothing observed, the proposal passes unedited
                return d
            messages = P.direct_edit(turn, texts(nearest(compliant, turn.pos)), proposal)
        else:
            messages = P.edit(turn, s.rule, proposal)
        res = await self._call(calls, "edit", messages)
        if res.error is not None:
            d.warnings.append(f"module edit failed ({res.error[:200]}): the proposal stands")
            return d
        edited = parse_reply(res.text, turn.stage)
        if edited.error is not None:
            d.warnings.append(f"module edit unusable ({edited.error}): the proposal stands")
            return d
        if int(edited.action) != d.action:  # the newcomer's memory says why it did not do what it proposed
            d.reasoning = (
                f"{d.reasoning} [The normative module changed my action to {PROMPT_ACTIONS[edited.action]}: "
                f"{edited.reasoning or '(no reason given)'}]"
            )
        d.action = int(edited.action)
        if turn.stage == "interaction":
            d.belief = edited.belief or d.belief
            d.confidence = edited.confidence if edited.confidence is not None else d.confidence
        return d

    async def _update(self, turn: Turn, s: EpisodeState, calls: list) -> None:
        """The module's norm update after the grid episode(s) completed since its last decision."""
        start = window_start(turn.t - BLOCK)  # the window of the completed episode
        end = turn.t // BLOCK * BLOCK
        compliant, sanctioned = evidence(s, turn, start, end)
        if self.kind == "theory_of_mind":
            await self._tom(turn, s, calls, max(start, end - BLOCK), end)
            return
        if not compliant and not sanctioned:
            return
        contrast = texts(sanctioned[-EVIDENCE:]) if self.kind == "contrastive" else None
        if self.kind == "infer_edit" and not compliant:
            return
        messages = P.infer(turn, texts(compliant[-EVIDENCE:]), contrast, s.rule)
        self._adopt(s, await self._call(calls, "infer", messages))

    @staticmethod
    def _adopt(s: EpisodeState, res) -> None:
        obj = reply_object(res)
        rule = obj.get("norm") if isinstance(obj, dict) else None
        if isinstance(rule, str) and rule.strip():
            s.rule = rule.strip()
            s.confidence = parse_confidence(obj.get("confidence")) if obj.get("confidence") is not None else None

    async def _tom(self, turn: Turn, s: EpisodeState, calls: list, start: int, end: int) -> None:
        compliant, sanctioned = evidence(s, turn, start, end)
        own = own_moves(turn, start, end)
        if not (compliant or sanctioned or own):
            return
        enc = await self._call(
            calls, "encoding", P.tom_encoding(turn, texts(own), texts(compliant[-EVIDENCE:]), texts(sanctioned))
        )
        obj = reply_object(enc)
        record = str(obj.get("summary")) if isinstance(obj, dict) and obj.get("summary") else None
        if record is None:
            return
        intro, infer = await asyncio.gather(
            self._call(calls, "introspection", P.tom_introspection(turn, record, s.rule)),
            self._call(calls, "inference", P.tom_inference(turn, record)),
        )
        parts = [f"steps {start}-{end - 1}: {record}"]
        for res, keys in ((intro, ("own_belief", "uncertainty")), (infer, ("others_belief", "enforcement"))):
            o = reply_object(res)
            if isinstance(o, dict):
                parts += [f"{k.replace('_', ' ')}: {o[k]}" for k in keys if o.get(k)]
        s.records.append((end // BLOCK - 1, "; ".join(parts)))
        window = [text for b, text in s.records if b > end // BLOCK - 1 - WINDOW]
        self._adopt(s, await self._call(calls, "synthesis", P.tom_synthesis(turn, [f"- {x}" for x in window], s.rule)))

    async def preflight(self) -> None:
        """Check both endpoints (each raises `normjax.llm.client.EndpointError`)."""
        await super().preflight()
        await self._module_check("preflight")

    async def act(self, turns, ctx):
        decisions = await super().act(turns, ctx)
        await self._module_check("check_error_rate")
        return decisions

    async def _module_check(self, name: str) -> None:
        """The module client's preflight / error-rate check, its EndpointError naming the module endpoint."""
        check = getattr(self.module_client, name, None)
        if check is None:
            return
        from normjax.llm.client import EndpointError

        try:
            out = check()
            if asyncio.iscoroutine(out):
                await out
        except EndpointError as e:
            raise EndpointError(f"normative module endpoint (--module-base-url / --module-model): {e}") from None


__all__ = [
    "BLOCK",
    "EXAMPLES",
    "MODULE_COUNTERS",
    "Move",
    "ModuleAgent",
    "NEWCOMERS",
    "WINDOW",
    "evidence",
    "nearest",
    "observe",
    "own_moves",
    "window_start",
]
