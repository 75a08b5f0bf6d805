"""Replaying an LLM run's failed requests, to check that faults change only what failed.

A run against a server that injects faults (`fake_openai.with_faults`) is compared with a
replay of the same scripted model in process (`Replay`) in which exactly the decisions that
errored in the run error again: the transcripts must be equal step for step
(`transcript_differences`). Used by the tests of the LLM runner and benchmarks/llm_faults.py.
"""

from __future__ import annotations

from normjax import constants as C
from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatResult
from normjax.runtime.transcripts import TranscriptStore
from normjax.runtime.turns import Decision
from normjax.testing.fake_openai import navigator_text


class InProcessNavigator:
    """The scripted model without a server: `ChatClient.chat`'s reply at once."""

    async def chat(self, messages):
        return ChatResult(text=navigator_text({"messages": messages}))


class Replay:
    """The scripted model in process, with the errored decisions of a run (episode, t -> transcript
    record) errored again with the same message, belief and confidence."""

    wants_frames, wants_intents = False, True

    def __init__(self, errored: dict):
        self.errored, self.inner = errored, LLMAgent(InProcessNavigator(), text_only=True)

    async def act(self, turns, ctx):
        out = []
        for turn in turns:
            rec = self.errored.get((turn.episode, turn.t))
            if rec is None:
                out += await self.inner.act([turn], ctx)
                continue
            messages = [{"role": m["role"], "content": m["content"]} for m in self.inner.messages(turn)]
            out.append(
                Decision(
                    action=C.WAIT,
                    error=rec["error"],
                    messages=messages,
                    belief=rec.get("belief"),
                    confidence=rec.get("confidence"),
                    failed_request=rec["error"].startswith("request failed"),
                )
            )
        return out


def errored_decisions(out) -> dict:
    store = TranscriptStore(out)
    return {
        (name, rec["t"]): rec["llm"]
        for name in store.episodes()
        for rec in store.read(name)[1:]
        if rec["llm"] and rec["llm"].get("queried") and rec["llm"]["error"] is not None
    }


STEP_FIELDS = (
    "queried",
    "forced_wait",
    "action",
    "executed",
    "sanctioned",
    "error",
    "messages",
    "belief",
    "confidence",
)


def transcript_differences(a, b) -> list[str]:
    """Steps where two runs' transcripts differ (world, newcomer, prompt, error, belief)."""
    sa, sb = TranscriptStore(a), TranscriptStore(b)
    if sa.episodes() != sb.episodes():
        return [f"episodes differ: {sa.episodes()} vs {sb.episodes()}"]
    out = []
    for name in sa.episodes():
        ra, rb = sa.read(name)[1:], sb.read(name)[1:]
        if len(ra) != len(rb):
            out.append(f"{name}: {len(ra)} vs {len(rb)} steps")
            continue
        for x, y in zip(ra, rb):
            lx, ly = x["llm"] or {}, y["llm"] or {}
            if x["agents"] != y["agents"] or any(lx.get(f) != ly.get(f) for f in STEP_FIELDS):
                out.append(f"{name} t={x['t']}")
    return out
