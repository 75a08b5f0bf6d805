"""The paper's LLM/VLM newcomer as an external agent of `normjax.runtime.runner`.

`LLMAgent` follows the runtime's agent interface (`normjax.runtime.agents`:
``act(turns, ctx)``, ``wants_frames``, ``wants_intents``) behind an
OpenAI-compatible endpoint (`normjax.llm.client`), prompted as in
`normjax.llm.prompts` and parsed by `normjax.llm.parse`; all turns in flight
are requested concurrently (bounded by the client's concurrency limit).  Its
``preflight()`` (called by the runner once before the first episode that
needs the model) checks the endpoint, and after each call it stops the run
when too many requests fail (`ChatClient.check_error_rate`).  Agents without
a model (`StatePolicyAgent`, `ScriptedAgent`) are the runtime's.
"""

from __future__ import annotations

import asyncio

from normjax.llm.parse import parse_reply
from normjax.llm.prompts import system_prompt, user_prompt
from normjax.runtime.agents import StepContext
from normjax.runtime.turns import Decision, Turn


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


__all__ = ["LLMAgent"]
