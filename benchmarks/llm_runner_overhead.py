"""Host overhead of the external-agent runner (`normjax.runtime.runner`) per lockstep step.

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
  transcripts (30,000 PNGs would be written otherwise); also ms per frame;
* ``prompts``: as ``llm_text`` with the 200-step interaction phase first and
  no transcripts: the prompt sizes of both stages (characters of the system
  prompt plus the user text, and tokens estimated at 4 characters per token).

The LLM modes record every prompt's size (the stub's replies carry a
reasoning of about 160 characters and, in the interaction phase, a belief, since
each remembered step repeats its reasoning), reported per stage as median,
90th percentile and maximum.

Compilation is excluded (every mode runs once untimed first, at the
stage's batch size); the per-step numbers come
from the runner's own timing (`result["meta"]["timing"]["test"]`).  The
device-only part (`batch.advance`: the step fused with the next step's view
and the packing of the host's numbers, on the same batch) is timed
separately.  ``cpu_ms_per_step`` is the process CPU time per step (all
threads, XLA's included) and ``overhead_cpu_ms_per_step`` the same without
the agent's call: less sensitive to other jobs on a shared machine than the
wall-clock numbers.

    python -m benchmarks.llm_runner_overhead                 # runner, transcripts, llm_text; 50 norms
    python -m benchmarks.llm_runner_overhead --norms 5 --modes llm_frames
    python -m benchmarks.llm_runner_overhead --modes runner --norms 10
    python -m benchmarks.llm_runner_overhead --norms 10 --modes prompts

Results: benchmarks/results/llm_runner_overhead.json, one row per mode (with its
number of norms, the device-only step time and the load average); a run
replaces the rows of its own modes and keeps the others.
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

from benchmarks.common import RESULTS, block, save
from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatResult
from normjax.runtime import batch
from normjax.runtime.agents import ScriptedAgent
from normjax.runtime.runner import protocol_test_episodes, run_protocol

MODES = ("runner", "transcripts", "llm_text", "llm_frames", "prompts")
MOVES = ("move up", "move down", "move left", "move right", "wait")
# A reply's reasoning and belief of a typical length (each remembered step repeats its reasoning).
REASONING = (
    "The agent ahead of me was sanctioned when it crossed the marked zone, so I keep to the "
    "corridor and move towards my target; nobody is in the cell I am moving into."
)
BELIEF = "Agents must not walk through the marked zone Q; they go around it."
CHARS_PER_TOKEN = 4  # a rough rule for English text; a model's own tokenizer gives its count


class InstantChat:
    """An in-process stand-in for `ChatClient`: a valid reply at once; keeps each prompt's size."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.sizes = []  # (stage, system characters, user text characters, PNG bytes)

    async def chat(self, messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        parts = user if isinstance(user, list) else [{"type": "text", "text": user}]
        text = "".join(p["text"] for p in parts if p["type"] == "text")
        png = sum(len(p["image_url"]["url"]) * 3 // 4 for p in parts if p["type"] == "image_url")  # base64
        stage = "interaction" if "Your goal in this interactive stage" in text else "test"
        self.sizes.append((stage, len(system), len(text), png))
        reply = {"reasoning": REASONING, "action": self.rng.choice(MOVES)}
        if stage == "interaction":
            reply.update(belief=BELIEF, confidence=0.5)
        return ChatResult(text=json.dumps(reply), tokens_in=(len(system) + len(text)) // 4, tokens_out=10)


def make_agent(mode: str, seed: int):
    if mode in ("runner", "transcripts"):
        rng = random.Random(seed)
        return ScriptedAgent(lambda turn: rng.randrange(5))
    return LLMAgent(InstantChat(seed), text_only=(mode in ("llm_text", "prompts")))


def _quantiles(xs) -> dict:
    xs = sorted(xs)
    return {q: xs[min(len(xs) - 1, int(p * len(xs)))] for q, p in (("median", 0.5), ("p90", 0.9))} | {"max": xs[-1]}


def prompt_sizes(sizes: list) -> dict:
    """Per stage: prompt characters (system + user text) and an estimate of tokens, PNG bytes."""
    out = {}
    for stage in ("interaction", "test"):
        rows = [s for s in sizes if s[0] == stage]
        if rows:
            chars = _quantiles([a + b for _, a, b, _ in rows])
            out[stage] = dict(
                prompts=len(rows),
                chars=chars,
                system_chars=_quantiles([a for _, a, _, _ in rows]),
                tokens_estimate={k: v // CHARS_PER_TOKEN for k, v in chars.items()},
                png_bytes=_quantiles([p for *_, p in rows]),
            )
    return out


def run_mode(mode: str, norms: list[int]) -> dict:
    agent = make_agent(mode, 0)
    with tempfile.TemporaryDirectory() as tmp:
        out = None if mode in ("runner", "llm_frames", "prompts") else Path(tmp) / "run"
        result = run_protocol(agent, norms, interaction_steps=200 if mode == "prompts" else 0, out=out)
    t = result["meta"]["timing"]["test"]
    loop = t["wall_s"] - t["init_s"]
    decisions = sum(r["decisions"] for r in result["episodes"])
    extra = {}
    if isinstance(agent, LLMAgent):
        extra["prompt_sizes"] = prompt_sizes(agent.client.sizes)
    if mode == "llm_frames":
        extra["frames_ms_per_frame"] = 1000 * t["frames_s"] / decisions
    return dict(
        mode=mode,
        episodes=len(result["episodes"]),
        steps=t["steps"],
        **extra,
        ms_per_step=1000 * loop / t["steps"],
        agent_ms_per_step=1000 * t["agent_s"] / t["steps"],
        cpu_ms_per_step=1000 * t["cpu_s"] / t["steps"],
        overhead_cpu_ms_per_step=1000 * (t["cpu_s"] - t["agent_cpu_s"]) / t["steps"],
        frames_ms_per_step=1000 * t["frames_s"] / t["steps"],
        overhead_ms_per_step=1000 * (loop - t["agent_s"]) / t["steps"],
        decisions=decisions,
        init_s=t["init_s"],
    )


def warm_up(norms: list[int]) -> tuple[float, float]:
    """Compile every program of the stage at its batch size; returns (compile s, device ms per step)."""
    t0 = time.perf_counter()
    eps = protocol_test_episodes(norms)
    states, params, keys, pad = batch.init_stage(eps, 10, 100)
    done, waits = jnp.asarray(pad), jnp.zeros(len(pad), jnp.int32)
    actions, go = jnp.full(len(pad), 4, jnp.int32), jnp.ones(len(pad), bool)  # the runner always passes `go`
    for intents in (False, True):
        block(batch.observe(keys[:, 0], states, params, done, waits, intents=intents))
        block(batch.advance(keys[:, 0], keys[:, 1], states, done, waits, actions, params, intents=intents, go=go))
    batch.render(states, params, [0])
    compile_s = time.perf_counter() - t0
    repeats = 20
    t0 = time.perf_counter()
    for t in range(repeats):
        states, done, waits, _, packed = batch.advance(
            keys[:, t], keys[:, t + 1], states, done, waits, actions, params, intents=False, go=go
        )
        block(packed)
    return compile_s, 1000 * (time.perf_counter() - t0) / repeats


def main(argv=None) -> int:
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--norms", type=int, default=50, help="the first N norms (6 test episodes each)")
    ap.add_argument(
        "--modes",
        nargs="+",
        default=list(MODES[:3]),
        choices=MODES,
        help="default: all but llm_frames (about 3 s per step at 300 episodes)",
    )
    args = ap.parse_args(argv)
    norms = list(range(args.norms))
    load_before = os.getloadavg()  # other jobs on a shared machine move every number here
    compile_s, dev = warm_up(norms)
    t0 = time.perf_counter()
    for m in args.modes:  # every program a mode uses, compiled and warm before it is timed
        run_mode(m, norms)
    compile_s += time.perf_counter() - t0
    rows = [run_mode(m, norms) for m in args.modes]
    batch_rows = batch.padded_size(6 * len(norms))
    for r in rows:
        print(
            f"{r['mode']:<12} {r['episodes']} episodes (batch {batch_rows}): {r['ms_per_step']:8.1f} ms/step, "
            f"agent {r['agent_ms_per_step']:7.1f}, runner overhead {r['overhead_ms_per_step']:7.1f} ms/step "
            f"(frames {r['frames_ms_per_step']:.1f}; CPU {r['overhead_cpu_ms_per_step']:.1f} ms/step) "
            f"({r['decisions']} decisions)"
        )
        if "frames_ms_per_frame" in r:
            print(f"{'':<12} frames: {r['frames_ms_per_frame']:.1f} ms per frame")
        for stage, p in r.get("prompt_sizes", {}).items():
            print(
                f"{'':<12} {stage} prompts ({p['prompts']}): characters median {p['chars']['median']}, p90 "
                f"{p['chars']['p90']}, max {p['chars']['max']} (about {p['tokens_estimate']['median']} tokens at "
                f"{CHARS_PER_TOKEN} characters per token); PNG median {p['png_bytes']['median']} bytes"
            )
    print(f"device step+view+pack alone: {dev:.1f} ms/step; compile (excluded above) {compile_s:.1f} s")
    for r in rows:
        r.update(
            norms=len(norms),
            batch_rows=batch_rows,
            device_advance_ms=dev,
            compile_s=compile_s,
            load_average_before=load_before,
            load_average_after=os.getloadavg(),
        )
    # Rows of other modes from earlier invocations stay (llm_frames and prompts run on fewer norms).
    previous = RESULTS / "llm_runner_overhead.json"
    kept = json.loads(previous.read_text()).get("rows", []) if previous.exists() else []
    rows = [r for r in kept if r["mode"] not in args.modes and "norms" in r] + rows
    path = save("llm_runner_overhead", dict(rows=rows, jax_devices=str(jax.devices())))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
