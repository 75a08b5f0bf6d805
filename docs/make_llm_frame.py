"""The frame a VLM newcomer sees -> docs/llm_frame.png.

Run from the repository root: `python docs/make_llm_frame.py`.  The runner of
`normjax.runtime` plays the interaction phase of clockwise_circulation with the
norm-aware planner as the newcomer (wrapped as an external agent that asks for
frames), and the first frame in which another agent carries a public
sanction (red X) and several agents show their intended move (arrows) is
saved, exactly as it would be sent to a model.
"""

from __future__ import annotations

from pathlib import Path

from normjax.env import oracle_policy
from normjax.runtime.agents import StatePolicyAgent
from normjax.runtime.runner import run_protocol

DOCS = Path(__file__).resolve().parent


class FrameCatcher(StatePolicyAgent):
    wants_frames = True
    wants_intents = True

    def __init__(self):
        super().__init__(oracle_policy)
        self.frame = None

    def act(self, turns, ctx):
        for turn in turns:
            arrows = sum(o.intent is not None and o.intent < 4 for o in turn.others)
            if self.frame is None and any(o.sanctioned for o in turn.others) and arrows >= 3:
                self.frame = (turn.t, turn.frame)
        return super().act(turns, ctx)


def main(path: Path = DOCS / "llm_frame.png") -> Path:
    agent = FrameCatcher()
    run_protocol(agent, ["clockwise_circulation"], interaction_steps=120)
    if agent.frame is None:
        raise SystemExit("no frame with a sanction and three arrows in 120 steps")
    t, png = agent.frame
    path.write_bytes(png)
    print(f"wrote {path} (interaction step {t})")
    return path


if __name__ == "__main__":
    main()
