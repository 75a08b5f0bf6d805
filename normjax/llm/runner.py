"""The protocol for external agents (LLMs, VLMs, anything behind `act`), on the host.

    result = run_protocol(agent, norms=["forbidden_zone_q"], out="runs/llm/qwen")

For every requested norm: the 200-step interaction phase on the cafe
(docs/world.md §9.1: one norm-blind background slot; the newcomer is replaced
when it finishes and successive newcomers share one memory), then the
protocol's 3 seen + 3 unseen test episodes (same seeds, groups and
scenarios as `normjax.protocol.evaluate`), each with a fresh memory and the
norm's final interaction belief and confidence frozen into its prompts.

All episodes of a stage advance in lockstep through one jitted, vmapped step
(`normjax.llm.batch`); every step the agent is called ONCE with the turns of
all episodes whose newcomer decides now, so an async agent can keep hundreds
of requests in flight.  Stage 1 runs every norm's interaction episode, stage 2
every test episode.  A newcomer is asked only when it is on the grid, its
episode has not ended, and its action is not forced (a WAIT during service,
docs/world.md §5.2); an unusable reply makes it WAIT (`normjax.llm.parse`).

Results: `normjax.protocol.summarize`'s JSON (so `format_table` prints the
Table-1 rows) with per-episode LLM fields (``decisions``, ``errors``,
``requests``, ``retries``, ``tokens_in``, ``tokens_out``, ``warnings``,
``belief``, ``confidence``), an ``interaction`` list (per norm: final belief
and confidence, the newcomer's tasks and sanctions, background sanctions
observed, LLM counters), ``llm`` totals and ``meta`` (settings, timing).
With a state policy wrapped as `StatePolicyAgent` the per-episode raw
metrics equal `evaluate`'s exactly (tested).

Transcripts, resume and the judge export: `normjax.llm.transcripts`,
`normjax.llm.judge`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import time
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.interop.export import trajectory_records
from normjax.llm import batch
from normjax.llm.agents import StepContext, checked
from normjax.llm.frames import annotated_png
from normjax.llm.parse import PROMPT_ACTIONS
from normjax.llm.transcripts import TranscriptStore, check_run, transcript_records
from normjax.llm.turns import Decision, Other, StepRecord, Turn, select_memory
from normjax.norms import NORMS
from normjax.protocol.metrics import collision_involvement, community_totals
from normjax.protocol.runner import resolve_norms, summarize
from normjax.protocol.seeds import TEST_STEPS, base_seed, test_episodes

INTERACTION_STEPS = 200
COUNTERS = ("decisions", "errors", "requests", "retries", "tokens_in", "tokens_out", "warnings")
FORCED = "(serving at the goal: the action was forced to wait)"


@dataclasses.dataclass
class _Episode:
    spec: dict
    row: int = 0
    belief: str | None = None
    confidence: float | None = None
    memory: list = dataclasses.field(default_factory=list)
    llm: dict = dataclasses.field(default_factory=dict)  # t -> transcript record
    counts: dict = dataclasses.field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    sanctions: list = dataclasses.field(default_factory=lambda: [0, 0])  # newcomer, background
    involved: int = 0  # steps in which the newcomer took part in a collision
    done: bool = False
    result: dict | None = None

    @property
    def name(self) -> str:
        return self.spec["name"]


def interaction_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [dict(norm_id=n, norm=NORMS[n].name, family=NORMS[n].family, condition="interaction",
                 layout="cafe", layout_id=0, episode=0, seed=base_seed(n, seed), group=None,
                 name=f"{NORMS[n].name}/interaction") for n in norm_ids]


def protocol_test_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [dict(e, name=f"{e['norm']}/{e['condition']}_{e['episode']}") for e in test_episodes(norm_ids, seed)]


def _cell(x) -> tuple[int, int]:
    return int(x[0]), int(x[1])


class _Stage:
    """One lockstep stage: its episodes, the agent, transcripts and timing."""

    def __init__(self, agent, episodes: list[_Episode], horizon: int, steps: int, capacity: int,
                 store: TranscriptStore | None, run_info: dict, cell_px: int, progress: Callable | None):
        self.agent, self.episodes, self.steps = agent, episodes, steps
        self.store, self.run_info, self.cell_px, self.progress = store, run_info, cell_px, progress
        self.phase = "interaction" if episodes and episodes[0].spec["condition"] == "interaction" else "test"
        self.horizon = horizon
        self.capacity = capacity
        self.timing = dict(steps=0, wall_s=0.0, agent_s=0.0, frames_s=0.0, init_s=0.0)

    def _turn(self, e: _Episode, host, view, t: int) -> Turn:
        ag, r = host.agents, e.row
        intents = view.get("intent")
        others = [Other(_cell(ag.pos[r, k]), int(ag.group[r, k]), bool(ag.sanctioned[r, k]),
                        None if intents is None else int(intents[r, k]))
                  for k in range(1, ag.active.shape[1]) if ag.active[r, k]]
        recent, earlier = select_memory(e.memory)
        return Turn(
            index=r, episode=e.name, phase=e.spec["condition"], norm_id=e.spec["norm_id"],
            layout=e.spec["layout"], t=int(host.t[r]), max_steps=self.steps,
            pos=_cell(ag.pos[r, 0]), group=int(ag.group[r, 0]), goal_kind=int(ag.goal_kind[r, 0]),
            goal_cell=_cell(ag.goal_cell[r, 0]), exit_door=int(ag.exit_door[r, 0]), leg=int(ag.leg[r, 0]),
            service_steps=int(self.host_params.service_steps[r]), sanctioned=bool(ag.sanctioned[r, 0]),
            others=others, memory=recent, earlier=earlier, steps_seen=len(e.memory),
            first_step=e.memory[0].t if e.memory else None, belief=e.belief, confidence=e.confidence,
        )

    def _frames(self, turns: list[Turn], states, params) -> None:
        frames = batch.render(states, params, [t.index for t in turns], self.cell_px)
        for turn, frame in zip(turns, frames):
            turn.frame = annotated_png(frame, turn.others, self.cell_px)
            if self.store is not None:
                path, turn.frame_file = self.store.frame_file(turn.episode, turn.t)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(turn.frame)

    def _record(self, e: _Episode, t: int, prev, info, d: Decision | None, queried: bool) -> None:
        r = e.row
        if not info.active[r, 0]:
            return
        forced = bool(info.forced_wait[r, 0])
        executed = int(info.action[r, 0])
        chosen = d.action if d is not None else C.WAIT
        sanctioned = bool(info.sanctioned[r, 0])
        e.sanctions[0] += sanctioned
        e.sanctions[1] += int(info.sanctioned[r, 1:].sum())
        if forced:
            reasoning, note = FORCED, ""
        elif d is not None and d.error:
            reasoning, note = f"(no valid reply: {d.error}; I waited)", ""
        else:
            reasoning = d.reasoning if d is not None else ""
            note = "blocked: I did not move" if executed != chosen else ""
        ag = prev.agents
        others = tuple((_cell(ag.pos[r, k]), int(ag.group[r, k])) for k in range(1, ag.active.shape[1])
                       if ag.active[r, k])
        e.memory.append(StepRecord(t=int(prev.t[r]), pos=_cell(ag.pos[r, 0]), others=others,
                                   action=PROMPT_ACTIONS[chosen], note=note, reasoning=reasoning,
                                   sanctioned=sanctioned))
        rec = dict(queried=queried, forced_wait=forced, action=chosen, executed=executed, sanctioned=sanctioned)
        if d is not None and queried:
            if e.spec["condition"] == "interaction":
                if d.belief:
                    e.belief = d.belief
                if d.confidence is not None:
                    e.confidence = d.confidence
            c = e.counts
            c["decisions"] += 1
            c["errors"] += d.error is not None
            c["requests"] += d.messages is not None
            c["warnings"] += len(d.warnings)
            for k in ("retries", "tokens_in", "tokens_out"):
                c[k] += getattr(d, k)
            rec.update(error=d.error, warnings=d.warnings, reasoning=d.reasoning, reply=d.reply,
                       messages=d.messages, tokens_in=d.tokens_in, tokens_out=d.tokens_out,
                       retries=d.retries, latency_s=round(d.latency_s, 4))
        if e.spec["condition"] == "interaction":
            rec.update(belief=e.belief, confidence=e.confidence)
        e.llm[int(prev.t[r])] = rec
        if self.store is not None:
            self.store.append(e.name, int(prev.t[r]), rec)

    def _finish(self, e: _Episode, n: int, final, done, waits) -> None:
        r = e.row
        ag = final.agents
        agents, steps, ret = community_totals(jax.tree.map(lambda x: x[r], final))
        raw = dict(goals=int(ag.goals_done[r, 0]), sanctions=int(ag.n_sanctions[r, 0]),
                   collisions=int(ag.n_collisions[r, 0]), involved=e.involved, path_length=int(ag.steps[r, 0]),
                   finished=bool(done[r]), t_end=int(final.t[r]),
                   community_finished=int(final.community_finished[r]), community_agents=int(agents),
                   community_steps=int(steps), community_return=float(np.float32(ret)), waits=int(waits[r]))
        if e.spec["condition"] == "interaction":
            raw.update(newcomer_tasks=int(final.newcomer_tasks[r]), newcomer_sanctions=e.sanctions[0],
                       background_sanctions=e.sanctions[1])
        e.result = dict(raw=raw, llm=dict(e.counts, belief=e.belief, confidence=e.confidence))
        e.done = True
        if self.store is None:
            return
        take = lambda buf, m: jax.tree.map(lambda b: b[:m, r], buf)  # noqa: E731
        params = jax.tree.map(lambda x: x[r], self.host_params)
        spec = {k: v for k, v in e.spec.items() if k not in ("layout_id",)}
        header = dict(seed=e.spec["seed"], phase=e.spec["condition"], policy="external agent",
                      scenario="reset_world" if e.spec["condition"] == "interaction" else "scenarios.build_test_episode",
                      episode=e.spec["episode"], protocol_seed=self.run_info.get("seed", 0))
        if e.spec["group"] is not None:
            header["newcomer_group"] = e.spec["group"]
        traj = trajectory_records(take(self.buf_states, n + 1), take(self.buf_infos, n), params, header)
        self.store.finish(e.name, transcript_records(
            traj, e.llm, dict(name=e.name, spec=spec, run=self.run_info, result=e.result)))

    async def run(self) -> None:
        t0 = time.perf_counter()
        for e in self.episodes:
            if self.store is not None:
                self.store.start(e.name)
        states, params, keys, pad = batch.init_stage([e.spec for e in self.episodes], self.capacity, self.horizon)
        for i, e in enumerate(self.episodes):
            e.row = i
        done, waits = jnp.asarray(pad), jnp.zeros(len(pad), jnp.int32)
        self.host_params = jax.device_get(params)
        host = jax.device_get(states)
        if self.store is not None:
            self.buf_states = jax.tree.map(lambda x: np.zeros((self.steps + 1,) + x.shape, x.dtype), host)
            jax.tree.map(lambda b, x: b.__setitem__(0, x), self.buf_states, host)
            self.buf_infos = None
        wants_frames = bool(getattr(self.agent, "wants_frames", False))
        wants_intents = wants_frames or bool(getattr(self.agent, "wants_intents", False))
        self.timing["init_s"] = time.perf_counter() - t0
        for t in range(self.steps):
            live = [e for e in self.episodes if not e.done]
            if not live:
                break
            keys_t = keys[:, t]
            view = jax.device_get(batch.view(keys_t, states, params, intents=wants_intents))
            deciders = [e for e in live if host.agents.active[e.row, 0] and not view["in_service"][e.row]]
            turns = [self._turn(e, host, view, t) for e in deciders]
            if turns and wants_frames:
                tf = time.perf_counter()
                self._frames(turns, states, params)
                self.timing["frames_s"] += time.perf_counter() - tf
            ta = time.perf_counter()
            decisions = []
            if turns:
                decisions = self.agent.act(turns, StepContext(states, params, keys_t))
                if inspect.isawaitable(decisions):
                    decisions = await decisions
                decisions = list(decisions)
                if len(decisions) != len(turns):
                    raise ValueError(f"agent returned {len(decisions)} decisions for {len(turns)} turns")
            self.timing["agent_s"] += time.perf_counter() - ta
            decided = {e.row: checked(d) for e, d in zip(deciders, decisions)}
            actions = np.full(len(pad), C.WAIT, np.int32)
            for r, d in decided.items():
                actions[r] = d.action
            states, done, waits, info = batch.step(keys_t, states, done, waits, jnp.asarray(actions), params)
            prev = host
            host, info_h, done_h, waits_h = jax.device_get((states, info, done, waits))
            if self.store is not None:
                if self.buf_infos is None:
                    self.buf_infos = jax.tree.map(lambda x: np.zeros((self.steps,) + x.shape, x.dtype), info_h)
                jax.tree.map(lambda b, x: b.__setitem__(t + 1, x), self.buf_states, host)
                jax.tree.map(lambda b, x: b.__setitem__(t, x), self.buf_infos, info_h)
            hits = collision_involvement(info_h)[:, 0]
            for e in live:
                e.involved += int(hits[e.row])
                d = decided.get(e.row)
                self._record(e, t, prev, info_h, d, queried=d is not None)
                if done_h[e.row] or t == self.steps - 1:
                    self._finish(e, t + 1, host, done_h, waits_h)
            self.timing["steps"] += 1
            if self.progress is not None:
                self.progress(self.phase, t + 1, self.steps, len(live), len(turns))
        self.timing["wall_s"] = time.perf_counter() - t0


def _stored(e: _Episode, header: dict) -> _Episode:
    e.result, e.done = header["result"], True
    e.belief, e.confidence = e.result["llm"]["belief"], e.result["llm"]["confidence"]
    return e


async def run_protocol_async(agent, norms=None, *, seed: int = 0, capacity: int = 10,
                             interaction_steps: int = INTERACTION_STEPS, out=None, resume: bool = True,
                             settings: dict | None = None, cell_px: int = 32,
                             progress: Callable | None = None) -> dict:
    """Run the protocol for `agent` (see the module docstring); returns the results dict.

    `norms`: names or ids (None = all 50).  `interaction_steps` (0..200) shortens
    or skips (0) the interaction phase, for quick checks; the protocol is 200.
    `out`: a run directory for transcripts, frames, ``run.json`` and
    ``results.json``; None keeps everything in memory.  `settings` (model, prompt
    mode, ...) are stored in ``run.json`` and checked on resume.
    """
    ids = resolve_norms(norms)
    if not ids:
        raise ValueError("no norms to evaluate")
    if not 0 <= interaction_steps <= INTERACTION_STEPS:
        raise ValueError(f"interaction_steps must be in 0..{INTERACTION_STEPS}, got {interaction_steps}")
    settings = dict(settings or {}, seed=seed, capacity=capacity, interaction_steps=interaction_steps)
    store = None
    if out is not None:
        check_run(out, settings, resume=resume)
        store = TranscriptStore(out)
    load = (lambda name: store.load(name)) if store is not None else (lambda name: None)  # noqa: E731
    t0 = time.perf_counter()

    inter = [_Episode(s) for s in interaction_episodes(ids, seed)]
    tests = [_Episode(s) for s in protocol_test_episodes(ids, seed)]
    todo = []
    for e in inter if interaction_steps > 0 else []:
        header = load(e.name)
        if header is not None:
            _stored(e, header)
            continue
        todo.append(e)
        for t in tests:  # their frozen belief would come from a new interaction
            if t.spec["norm_id"] == e.spec["norm_id"] and store is not None:
                store.discard(t.name)
    timing = {}
    if todo:
        stage = _Stage(agent, todo, INTERACTION_STEPS, interaction_steps, capacity, store, settings, cell_px, progress)
        await stage.run()
        timing["interaction"] = stage.timing
    belief = {e.spec["norm_id"]: (e.belief, e.confidence) for e in inter}
    todo = []
    for e in tests:
        header = load(e.name)
        if header is not None:
            _stored(e, header)
            continue
        e.belief, e.confidence = belief.get(e.spec["norm_id"], (None, None))
        todo.append(e)
    if todo:
        stage = _Stage(agent, todo, TEST_STEPS, TEST_STEPS, capacity, store, settings, cell_px, progress)
        await stage.run()
        timing["test"] = stage.timing
    result = assemble(tests, inter if interaction_steps > 0 else [])
    result["meta"] = dict(settings, norms=[NORMS[n].name for n in ids], wall_s=round(time.perf_counter() - t0, 3),
                          timing=timing)
    if out is not None:
        Path(out, "results.json").write_text(json.dumps(result, indent=1))
    return result


def run_protocol(agent, norms=None, **kwargs) -> dict:
    """Synchronous `run_protocol_async` (runs its own event loop)."""
    return asyncio.run(run_protocol_async(agent, norms, **kwargs))


def assemble(tests: list[_Episode], inter: list[_Episode]) -> dict:
    """`summarize`'s results of the test episodes plus the LLM fields."""
    specs = [e.spec for e in tests]
    raw = {k: np.asarray([e.result["raw"][k] for e in tests]) for k in tests[0].result["raw"]}
    result = summarize(specs, raw)
    for row, e in zip(result["episodes"], tests):
        row.update(e.result["llm"], waits=e.result["raw"]["waits"])
    result["interaction"] = [dict(norm=e.spec["norm"], norm_id=e.spec["norm_id"], family=e.spec["family"],
                                  seed=e.spec["seed"], **{k: e.result["raw"][k] for k in
                                                          ("newcomer_tasks", "newcomer_sanctions",
                                                           "background_sanctions")},
                                  **e.result["llm"]) for e in inter]
    every = [e.result["llm"] for e in tests + inter]
    result["llm"] = {k: int(sum(x[k] for x in every)) for k in COUNTERS}
    return result


__all__ = ["INTERACTION_STEPS", "assemble", "interaction_episodes", "protocol_test_episodes", "run_protocol",
           "run_protocol_async"]
