"""Host overhead of the external-agent runner (`normjax.llm.runner`) per lockstep step.

The protocol's test stage for all 50 norms is 300 concurrent episodes (3 seen
+ 3 unseen per norm), stepped in lockstep by one jitted, vmapped step; every
step the agent is called once with the turns of all deciding episodes.  Here
the agent answers instantly, so what is timed is the runner's own cost per
step: the batched environment step and view on the device, the host transfer,
building the turns, recording memory, and (depending on the mode) prompts,
parsing, transcripts and frames:

* ``runner``: an instant agent that returns random moves (`ScriptedAgent`):
  turns, memory and metrics only, no files;
* ``transcripts``: the same, writing every episode's transcript (the .part
  log each step, the trajectory file at the end);
* ``llm_text``: `LLMAgent` (text-only prompts and the reply parser) over an
  in-process chat stub that answers at once, with transcripts: the host cost
  of a real text-only LLM run, network and model excluded;
* ``llm_frames``: as ``llm_text`` with VLM frames (render, arrows, PNG), no
  transcripts (30,000 PNGs would be written otherwise).

Compilation is excluded (every program of the stage is compiled first at the
stage's batch size); the per-step numbers come
from the runner's own timing (`result["meta"]["timing"]["test"]`).  The
device-only part (`batch.advance`: the step fused with the next step's view
and the packing of the host's numbers, on the same batch) is timed
separately.  ``cpu_ms_per_step`` is the process CPU time per step (all
threads, XLA's included) and ``overhead_cpu_ms_per_step`` the same without
the agent's call: less sensitive to other jobs on a shared machine than the
wall-clock numbers.

    python benchmarks/llm_runner_overhead.py                 # runner, transcripts, llm_text; 50 norms
    python benchmarks/llm_runner_overhead.py --norms 5 --modes llm_frames
    python benchmarks/llm_runner_overhead.py --modes runner --norms 10

Results: benchmarks/results/llm_runner_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import block, save  # noqa: E402
from normjax.llm import batch  # noqa: E402
from normjax.llm.agents import LLMAgent, ScriptedAgent  # noqa: E402
from normjax.llm.client import ChatResult  # noqa: E402
from normjax.llm.runner import protocol_test_episodes, run_protocol  # noqa: E402

MODES = ("runner", "transcripts", "llm_text", "llm_frames")
MOVES = ("move up", "move down", "move left", "move right", "wait")


class InstantChat:
    """An in-process stand-in for `ChatClient`: a valid reply at once."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    async def chat(self, messages):
        reply = {"reasoning": "instant", "action": self.rng.choice(MOVES)}
        return ChatResult(text=json.dumps(reply), tokens_in=len(messages[-1]["content"]) // 4, tokens_out=10)


def make_agent(mode: str, seed: int):
    if mode in ("runner", "transcripts"):
        rng = random.Random(seed)
        return ScriptedAgent(lambda turn: rng.randrange(5))
    return LLMAgent(InstantChat(seed), text_only=(mode == "llm_text"))


def run_mode(mode: str, norms: list[int]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = None if mode in ("runner", "llm_frames") else Path(tmp) / "run"
        result = run_protocol(make_agent(mode, 0), norms, interaction_steps=0, out=out)
    t = result["meta"]["timing"]["test"]
    loop = t["wall_s"] - t["init_s"]
    return dict(mode=mode, episodes=len(result["episodes"]), steps=t["steps"],
                ms_per_step=1000 * loop / t["steps"],
                agent_ms_per_step=1000 * t["agent_s"] / t["steps"],
                cpu_ms_per_step=1000 * t["cpu_s"] / t["steps"],
                overhead_cpu_ms_per_step=1000 * (t["cpu_s"] - t["agent_cpu_s"]) / t["steps"],
                frames_ms_per_step=1000 * t["frames_s"] / t["steps"],
                overhead_ms_per_step=1000 * (loop - t["agent_s"]) / t["steps"],
                decisions=sum(r["decisions"] for r in result["episodes"]), init_s=t["init_s"])


def warm_up(norms: list[int]) -> tuple[float, float]:
    """Compile every program of the stage at its batch size; returns (compile s, device ms per step)."""
    t0 = time.perf_counter()
    eps = protocol_test_episodes(norms)
    states, params, keys, pad = batch.init_stage(eps, 10, 100)
    done, waits = jnp.asarray(pad), jnp.zeros(len(pad), jnp.int32)
    actions = jnp.full(len(pad), 4, jnp.int32)
    for intents in (False, True):
        block(batch.observe(keys[:, 0], states, params, done, waits, intents=intents))
        block(batch.advance(keys[:, 0], keys[:, 1], states, done, waits, actions, params, intents=intents))
    batch.render(states, params, [0])
    compile_s = time.perf_counter() - t0
    repeats = 20
    t0 = time.perf_counter()
    for t in range(repeats):
        states, done, waits, _, packed = batch.advance(keys[:, t], keys[:, t + 1], states, done, waits, actions,
                                                       params, intents=False)
        block(packed)
    return compile_s, 1000 * (time.perf_counter() - t0) / repeats


def main(argv=None) -> int:
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--norms", type=int, default=50, help="the first N norms (6 test episodes each)")
    ap.add_argument("--modes", nargs="+", default=list(MODES[:3]), choices=MODES,
                    help="default: all but llm_frames (about 3 s per step at 300 episodes)")
    args = ap.parse_args(argv)
    norms = list(range(args.norms))
    load_before = os.getloadavg()  # other jobs on a shared machine move every number here
    compile_s, dev = warm_up(norms)
    rows = [run_mode(m, norms) for m in args.modes]
    batch_rows = batch.padded_size(6 * len(norms))
    for r in rows:
        print(f"{r['mode']:<12} {r['episodes']} episodes (batch {batch_rows}): {r['ms_per_step']:8.1f} ms/step, "
              f"agent {r['agent_ms_per_step']:7.1f}, runner overhead {r['overhead_ms_per_step']:7.1f} ms/step "
              f"(frames {r['frames_ms_per_step']:.1f}; CPU {r['overhead_cpu_ms_per_step']:.1f} ms/step) "
              f"({r['decisions']} decisions)")
    print(f"device step+view+pack alone: {dev:.1f} ms/step; compile (excluded above) {compile_s:.1f} s")
    path = save("llm_runner_overhead", dict(norms=len(norms), batch_rows=batch_rows, rows=rows,
                                            device_advance_ms=dev, compile_s=compile_s,
                                            load_average_before=load_before, load_average_after=os.getloadavg(),
                                            jax_devices=str(jax.devices())))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
