"""External newcomer agents for `normjax.llm.runner`.

An agent is any object with

    act(turns: list[Turn], ctx: StepContext) -> list[Decision]     (or an awaitable of it)

and optional attributes ``wants_frames`` (render a PNG
frame per turn; default False) and ``wants_intents`` (compute the other
agents' intended moves; default False).  An async agent (``async def act``)
is called once per turn, so that each episode steps as soon as its own reply
is in; a synchronous one once with the turns of every episode that decides
now (`normjax.llm.stage`).  `ctx` carries the batched device state (each
row at its own episode's current step), for agents that act on the world
state itself.

* `LLMAgent`: the paper's ReAct LLM/VLM newcomer behind an OpenAI-compatible
  endpoint (`normjax.llm.client`), prompted as in `normjax.llm.prompts` and
  parsed by `normjax.llm.parse`; all turns in flight are requested
  concurrently (bounded by the client's concurrency limit).  Its
  ``preflight()`` (called by the runner once before the first episode that
  needs the model) checks the endpoint, and after each call it stops the
  run when too many requests fail (`ChatClient.check_error_rate`).
* `StatePolicyAgent`: a jittable state policy ``policy(key, state, params)``
  (e.g. `normjax.env.oracle_policy`) as an external agent; episode i gets
  the protocol's policy key ``split(ctx.keys[i], 3)[1]``, so the runner
  reproduces `normjax.protocol.evaluate` exactly.
* `ScriptedAgent`: wraps a plain function ``turn -> action`` (tests, demos).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from normjax import constants as C
from normjax.llm.parse import parse_reply
from normjax.llm.prompts import system_prompt, user_prompt
from normjax.llm.turns import Decision, Turn


@dataclasses.dataclass
class StepContext:
    """The batched device state of a step (rows = the runner's batch indices, `Turn.index`)."""

    states: Any  # WorldState [B]
    params: Any  # WorldParams [B]
    keys: Any  # step keys [B, 2]: kc, kp, kw = split(keys[i], 3)


class StatePolicyAgent:
    """A jittable `policy(key, state, params) -> action` as an external agent."""

    wants_frames = False
    wants_intents = False

    def __init__(self, policy: Callable):
        self.policy = policy

    def act(self, turns: list[Turn], ctx: StepContext) -> list[Decision]:
        from normjax.llm.batch import policy_actions

        actions = np.asarray(policy_actions(self.policy, ctx.keys, ctx.states, ctx.params))
        return [Decision(action=int(actions[t.index])) for t in turns]


class ScriptedAgent:
    """`fn(turn) -> action id` for every turn (no model, no errors)."""

    wants_frames = False
    wants_intents = False

    def __init__(self, fn: Callable[[Turn], int]):
        self.fn = fn

    def act(self, turns: list[Turn], ctx: StepContext) -> list[Decision]:
        return [Decision(action=int(self.fn(t))) for t in turns]


def _for_transcript(messages: list[dict], frame_file: str | None) -> list[dict]:
    """The request messages with image data URLs replaced by the frame's file name."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [
                p
                if p.get("type") != "image_url"
                else {"type": "image_url", "image_url": {"url": frame_file or "(frame not saved)"}}
                for p in content
            ]
        out.append({"role": m["role"], "content": content})
    return out


class LLMAgent:
    """The paper's LLM newcomer: prompt, chat request, tolerant parse.

    `client` is an entered `normjax.llm.client.ChatClient` (or anything with
    an async ``chat(messages) -> ChatResult``).  With `text_only` no image is
    sent; with `known_norm` the system prompt states the true norm.
    """

    wants_intents = True

    def __init__(self, client, text_only: bool = False, known_norm: bool = False):
        self.client = client
        self.text_only = bool(text_only)
        self.known_norm = bool(known_norm)

    @property
    def wants_frames(self) -> bool:
        return not self.text_only

    def messages(self, turn: Turn) -> list[dict]:
        from normjax.llm.client import user_message

        text = user_prompt(turn, self.text_only)
        images = [] if self.text_only or turn.frame is None else [turn.frame]
        return [
            {"role": "system", "content": system_prompt(turn, self.text_only, self.known_norm)},
            user_message(text, images),
        ]

    async def _one(self, turn: Turn) -> Decision:
        try:
            messages = self.messages(turn)
        except Exception as e:
            return Decision(error=f"prompt failure: {type(e).__name__}: {e}")
        res = await self.client.chat(messages)
        d = Decision(
            reply=res.text,
            messages=_for_transcript(messages, turn.frame_file),
            tokens_in=res.tokens_in,
            tokens_out=res.tokens_out,
            retries=res.retries,
            latency_s=res.latency_s,
        )
        d.attempt_errors = list(getattr(res, "attempt_errors", []))
        if res.error is not None:
            d.error, d.failed_request = f"request failed: {res.error}", True
            return d
        parsed = parse_reply(res.text, turn.stage)
        d.reasoning, d.belief, d.confidence = parsed.reasoning, parsed.belief, parsed.confidence
        d.warnings = list(parsed.warnings)
        if parsed.error is not None:
            d.error = parsed.error
        else:
            d.action = int(parsed.action)
        if res.finish_reason == "length":
            d.warnings.append("reply cut at max_tokens")
        return d

    async def preflight(self) -> None:
        """Check the endpoint with one request (raises `normjax.llm.client.EndpointError`)."""
        check = getattr(self.client, "preflight", None)
        if check is not None:
            await check()

    async def act(self, turns: list[Turn], ctx: StepContext) -> list[Decision]:
        decisions = list(await asyncio.gather(*(self._one(t) for t in turns)))
        check = getattr(self.client, "check_error_rate", None)
        if check is not None:
            check()  # raises EndpointError: finished episodes stay, this step is not recorded
        return decisions


def checked(decision: Any) -> Decision:
    """A Decision whose action is a valid id; anything else becomes a WAIT with an error."""
    if not isinstance(decision, Decision):
        return Decision(error=f"agent returned {type(decision).__name__}, not a Decision")
    a = decision.action
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) or not 0 <= int(a) < C.N_ACTIONS:
        decision.error = decision.error or f"invalid action {a!r}"
        decision.action = C.WAIT
    decision.action = int(decision.action)
    return decision


__all__ = ["LLMAgent", "ScriptedAgent", "StatePolicyAgent", "StepContext", "checked"]
