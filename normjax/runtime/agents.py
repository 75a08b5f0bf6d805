"""The agent interface of the host runtime (`normjax.runtime.runner`), and two agents without a model.

An agent is any object with

    act(turns: list[Turn], ctx: StepContext) -> list[Decision]     (or an awaitable of it)

and optional attributes ``wants_frames`` (render a PNG
frame per turn; default False) and ``wants_intents`` (compute the other
agents' intended moves; default False).  An async agent (``async def act``)
is called once per turn, so that each episode steps as soon as its own reply
is in; a synchronous one once with the turns of every episode that decides
now (`normjax.runtime.stage`).  `ctx` carries the batched device state (each
row at its own episode's current step), for agents that act on the world
state itself.  What an agent returns passes through `checked`.

* `StatePolicyAgent`: a jittable state policy ``policy(key, state, params)``
  (e.g. `normjax.env.oracle_policy`) as an external agent; episode i gets
  the protocol's policy key ``split(ctx.keys[i], 3)[1]``, so the runner
  reproduces `normjax.protocol.evaluate` exactly.
* `ScriptedAgent`: wraps a plain function ``turn -> action`` (tests, demos).

The paper's LLM newcomer is `normjax.llm.agents.LLMAgent`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from normjax import constants as C
from normjax.runtime.turns import Decision, Turn


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
        from normjax.runtime.batch import policy_actions

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


__all__ = ["ScriptedAgent", "StatePolicyAgent", "StepContext", "checked"]
