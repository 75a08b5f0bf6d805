"""An external agent that dies mid-run, for the runner's resume tests (plain and with a module)."""

from __future__ import annotations


class Killer:
    """Wraps an agent and raises (like a killed process) on its n-th test-stage call (one call per
    turn: episodes advance independently); its preflight, if any, is the wrapped agent's."""

    def __init__(self, agent, n):
        self.agent, self.n, self.calls = agent, n, 0
        self.wants_frames, self.wants_intents = agent.wants_frames, agent.wants_intents

    async def preflight(self):
        check = getattr(self.agent, "preflight", None)
        if check is not None:
            await check()

    async def act(self, turns, ctx):
        if turns[0].phase != "interaction":
            self.calls += 1
            if self.calls == self.n:
                raise RuntimeError("simulated kill")
        return await self.agent.act(turns, ctx)
