"""Hand-built llm-eval run directories for the judge and belief-analysis tests (no JAX, no model).

A run holds finished interaction transcripts in the transcript format
(`normjax.runtime.transcripts`): a header, then one line per step with the agents
(slot 0 is the newcomer) and the ``llm`` record the runner writes; optionally
``results.json`` with the norms of its table.  `judge_script` is a fake judge
for `tests.fake_openai.FakeOpenAI` that answers from a {belief: reply} table.
"""

from __future__ import annotations

import json
import re

from normjax.runtime.transcripts import TRANSCRIPT_FORMAT, TranscriptStore
from normjax.testing.fake_openai import Reply


def agent(slot, uid, pos, nxt=None, sanctioned=False, displaced=False, exited=False, active=True):
    """One agent of a step line (the export format's fields the analysis reads)."""
    if not active:
        return dict(
            slot=slot,
            active=False,
            uid=None,
            pos=None,
            next=None,
            sanctioned=False,
            displaced=False,
            exited=False,
            role="newcomer" if slot == 0 else "aware",
        )
    return dict(
        slot=slot,
        active=True,
        uid=uid,
        pos=list(pos),
        next=None if exited else list(nxt or pos),
        sanctioned=sanctioned,
        displaced=displaced,
        exited=exited,
        role="newcomer" if slot == 0 else "aware",
    )


def llm(queried=True, belief=None, confidence=None, sanctioned=False):
    return dict(queried=queried, sanctioned=sanctioned, belief=belief, confidence=confidence)


def write_interaction(out, norm, steps, incomplete=False, header_extra=None):
    """`steps`: [(agents, llm record or None), ...] for t = 0, 1, ...; `header_extra`: more header
    fields (the observer replay reads ``layout`` and ``norm``)."""
    store = TranscriptStore(out)
    header = {
        "transcript": TRANSCRIPT_FORMAT,
        "name": f"{norm}/interaction",
        "result": {"llm": {"incomplete": incomplete}},
        **(header_extra or {}),
    }
    lines = [{"t": t, "agents": agents, "llm": rec} for t, (agents, rec) in enumerate(steps)]
    store.finish(f"{norm}/interaction", [header, *lines])


def belief_only_steps(beliefs):
    """Steps in which nobody moves and the newcomer states `beliefs` in turn."""
    return [([agent(0, 0, (5, 5))], llm(belief=b, confidence=0.5)) for b in beliefs]


def write_results(out, norms):
    (out / "results.json").write_text(json.dumps({"meta": {"norms": list(norms)}, "seen": {}}))


def judge_belief(payload) -> str | None:
    """The belief a judge prompt asks about (None: not a judge prompt, e.g. the preflight)."""
    m = re.search(r"The agent's belief: (.*?)\n\n", payload["messages"][-1]["content"], re.S)
    return m.group(1) if m else None


def judge_script(replies: dict, default: str = '{"score": 1, "rationale": "unrelated"}'):
    """A fake judge: `replies[belief]` (a str reply, or a Reply) for each judge prompt, "OK" otherwise."""

    def script(payload, attempt):
        belief = judge_belief(payload)
        if belief is None:
            return Reply("OK")
        r = replies.get(belief, default)
        return r if isinstance(r, Reply) else Reply(r)

    return script


def score(n: int) -> str:
    return json.dumps({"score": n, "rationale": "scripted"})
