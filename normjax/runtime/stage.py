"""One stage of the external-agent runner (`normjax.runtime.runner`): episodes on their own clocks.

Each episode (a row of one batch) keeps its own step counter.  The loop:
the idle rows (no decision pending) are read from their packed int32 rows
(`normjax.runtime.batch.observe` / `advance`); those whose newcomer decides get a
`Turn` (other agents and memory on first access, `normjax.runtime.lazy`), the
others are ready to WAIT.  An async agent gets one task per turn; the loop
awaits the first reply, then runs `batch.advance` (the step fused with the
next step's view and packing) for every row that is ready, with a mask that
holds the rest: one compiled program of a fixed batch shape, each row with
the key of its own step, so a row's trajectory never depends on which others
stepped with it.  A synchronous agent is called once for all turns, and with
``lockstep`` every row waits for the whole step.
Memory entries, sanction counts and finished-episode metrics come from the
same packed arrays; the
full states and step infos are transferred only when transcripts are written
(the trajectory part of each transcript file).

With distractors on (docs/world.md §8.5; `distractor` = (name, habit code,
share)) both stages' episodes have the habit, the device step also counts
the newcomer's over-imitation (`batch.advance` with an `Imitation` carry),
and each test episode's raw result gets ``habit_steps``; transcript headers
then name the distractor and every agent's habit, as ``normjax export`` does.

An episode in which more than `INCOMPLETE_SHARE` of the decisions got no
reply from the endpoint (``request_errors``) is marked ``incomplete`` in its
result: the runner neither reuses nor tabulates it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from collections.abc import Callable

import jax
import numpy as np

from normjax import constants as C
from normjax.interop.export import trajectory_records
from normjax.runtime import batch, programs
from normjax.runtime.agents import StepContext, checked
from normjax.runtime.frames import annotated_png
from normjax.runtime.lazy import Columns, LazyTurn, Memory
from normjax.runtime.transcripts import TranscriptStore, transcript_records
from normjax.runtime.turns import PROMPT_ACTIONS, Decision, Turn, module_counts

COUNTERS = ("decisions", "errors", "request_errors", "requests", "retries", "tokens_in", "tokens_out", "warnings")
# An episode in which more than this share of the decisions got no reply from the endpoint is
# incomplete: it is not a measurement of the model, so it is never reused or tabulated.
INCOMPLETE_SHARE = 0.5
FORCED = "(serving at the goal: the action was forced to wait)"
BLOCKED = "blocked: I did not move"


@dataclasses.dataclass
class Episode:
    spec: dict
    row: int = 0
    belief: str | None = None
    confidence: float | None = None
    memory: Memory | None = None
    llm: dict = dataclasses.field(default_factory=dict)  # t -> transcript record (with transcripts only)
    counts: dict = dataclasses.field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    sanctions: list = dataclasses.field(default_factory=lambda: [0, 0])  # newcomer, background
    done: bool = False
    result: dict | None = None

    @property
    def name(self) -> str:
        return self.spec["name"]


class Stage:
    """One lockstep stage: its episodes, the agent, transcripts and timing."""

    def __init__(
        self,
        agent,
        episodes: list[Episode],
        horizon: int,
        steps: int,
        capacity: int,
        store: TranscriptStore | None,
        run_info: dict,
        cell_px: int,
        progress: Callable | None,
        distractor: tuple[str, int, float] | None = None,
        lockstep: bool = False,
    ):
        self.agent, self.episodes, self.steps = agent, episodes, steps
        self.lockstep = lockstep  # every episode steps only when all replies of the step are in
        self.distractor = distractor  # (name, habit code, share) when on, else None
        self.store, self.run_info, self.cell_px, self.progress = store, run_info, cell_px, progress
        self.phase = "interaction" if episodes and episodes[0].spec["condition"] == "interaction" else "test"
        self.horizon = horizon
        self.capacity = capacity
        self.cols = Columns(batch.obs_layout(capacity, distractor is not None))
        self.obs: list[np.ndarray] = []  # packed host arrays: obs[t] = the batch at the start of step t
        self.timing = dict(steps=0, wall_s=0.0, agent_s=0.0, frames_s=0.0, init_s=0.0, cpu_s=0.0, agent_cpu_s=0.0)

    def _turn(self, e: Episode, row: list) -> Turn:
        c, m = self.cols, e.memory
        n = len(m)
        p = c.pos
        fields = dict(
            index=e.row,
            episode=e.name,
            phase=e.spec["condition"],
            norm_id=e.spec["norm_id"],
            layout=e.spec["layout"],
            t=row[c.t],
            max_steps=self.steps,
            pos=(row[p], row[p + 1]),
            group=row[c.group],
            goal_kind=row[c.goal_kind],
            goal_cell=(row[c.goal_cell], row[c.goal_cell + 1]),
            exit_door=row[c.exit_door],
            leg=row[c.leg],
            service_steps=self.service_steps[e.row],
            sanctioned=bool(row[c.sanctioned]),
            steps_seen=n,
            first_step=m.record(0).t if n else None,
            belief=e.belief,
            confidence=e.confidence,
        )
        return LazyTurn(fields, row, c, self.wants_intents, m, n)

    def _frames(self, turns: list[Turn], states, params) -> None:
        frames = batch.render(states, params, [t.index for t in turns], self.cell_px)
        for turn, frame in zip(turns, frames):
            turn.frame = annotated_png(frame, turn.others, self.cell_px)
            if self.store is not None:
                path, turn.frame_file = self.store.frame_file(turn.episode, turn.t)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(turn.frame)

    def _record(self, rows: np.ndarray, prev: np.ndarray, now: np.ndarray, decided: dict) -> None:
        """Memory, counters, beliefs and transcript lines of the step just taken by `rows` (each at
        its own step `self.tstep[r]`), for those whose newcomer was on the grid (`prev`/`now`: their
        packed rows before/after the step)."""
        c = self.cols
        on = now[:, c.info_active] != 0
        rows, prev, now = rows[on], prev[on], now[on]
        cols = now[:, [c.forced, c.executed, c.info_sanctioned, c.bg_sanctions]]
        self.sanctions[rows] += cols[:, 2:]
        interaction = self.phase == "interaction"
        for r, (forced, executed, sanctioned, _), t_prev, t in zip(
            rows.tolist(), cols.tolist(), prev[:, c.t].tolist(), self.tstep[rows].tolist()
        ):
            e, d = self.episodes[r], decided.get(r)
            chosen = d.action if d is not None else C.WAIT
            sanctioned = bool(sanctioned)
            if forced:
                reasoning, note = FORCED, ""
            elif d is not None and d.error:
                reasoning, note = f"(no valid reply: {d.error}; I waited)", ""
            else:
                reasoning = d.reasoning if d is not None else ""
                note = BLOCKED if executed != chosen else ""
            e.memory.append(t, PROMPT_ACTIONS[chosen], note, reasoning, sanctioned)
            if d is not None:
                if interaction:
                    if d.belief:
                        e.belief = d.belief
                    if d.confidence is not None:
                        e.confidence = d.confidence
                n = e.counts
                n["decisions"] += 1
                n["errors"] += d.error is not None
                n["request_errors"] += d.failed_request
                n["requests"] += d.messages is not None
                n["warnings"] += len(d.warnings)
                n["retries"] += d.retries
                n["tokens_in"] += d.tokens_in
                n["tokens_out"] += d.tokens_out
                if d.module is not None:  # a normative module's calls (normjax.llm.modules)
                    for k, v in module_counts(d).items():
                        n[k] = n.get(k, 0) + v
            if self.store is None:
                continue
            rec = dict(
                queried=d is not None, forced_wait=bool(forced), action=chosen, executed=executed, sanctioned=sanctioned
            )
            if d is not None:
                rec.update(
                    error=d.error,
                    warnings=d.warnings,
                    reasoning=d.reasoning,
                    reply=d.reply,
                    messages=d.messages,
                    tokens_in=d.tokens_in,
                    tokens_out=d.tokens_out,
                    retries=d.retries,
                    attempt_errors=d.attempt_errors,
                    latency_s=round(d.latency_s, 4),
                )
                if d.module is not None:
                    rec["module"] = d.module
            if interaction:
                rec.update(belief=e.belief, confidence=e.confidence)
            e.llm[t_prev] = rec
            self.store.append(e.name, t_prev, rec)

    def _finish(self, e: Episode, n: int, row: list) -> None:
        c, r = self.cols, e.row
        e.sanctions = self.sanctions[r].tolist()
        ret = float(np.asarray(row[c.community_return], np.int32).view(np.float32))
        raw = dict(
            goals=row[c.goals],
            sanctions=row[c.n_sanctions],
            collisions=row[c.n_collisions],
            involved=int(self.involved[r]),
            path_length=row[c.path_length],
            finished=bool(row[c.done]),
            t_end=row[c.t],
            community_finished=row[c.community_finished],
            community_agents=row[c.community_agents],
            community_steps=row[c.community_steps],
            community_return=ret,
            waits=row[c.waits],
        )
        if e.spec["condition"] == "interaction":
            raw.update(
                newcomer_tasks=row[c.newcomer_tasks],
                newcomer_sanctions=e.sanctions[0],
                background_sanctions=e.sanctions[1],
            )
        elif self.distractor is not None:  # over-imitation (normjax.protocol.imitation)
            raw.update(habit_steps=row[c.habit_steps])
        incomplete = e.counts["request_errors"] > INCOMPLETE_SHARE * e.counts["decisions"]
        e.result = dict(raw=raw, llm=dict(e.counts, belief=e.belief, confidence=e.confidence, incomplete=incomplete))
        e.done = True
        if self.store is None:
            return
        take = lambda buf, m: jax.tree.map(lambda b: b[:m, r], buf)
        params = jax.tree.map(lambda x: x[r], self.host_params)
        spec = {k: v for k, v in e.spec.items() if k not in ("layout_id",)}
        header = dict(
            seed=e.spec["seed"],
            phase=e.spec["condition"],
            policy="external agent",
            scenario="reset_world" if e.spec["condition"] == "interaction" else "scenarios.build_test_episode",
            episode=e.spec["episode"],
            protocol_seed=self.run_info.get("seed", 0),
        )
        if e.spec["group"] is not None:
            header["newcomer_group"] = e.spec["group"]
        if self.distractor is not None:
            header["distractor"] = {"habit": self.distractor[0], "share": self.distractor[2]}
        traj = trajectory_records(take(self.buf_states, n + 1), take(self.buf_infos, n), params, header)
        self.store.finish(
            e.name, transcript_records(traj, e.llm, dict(name=e.name, spec=spec, run=self.run_info, result=e.result))
        )

    def _init(self):
        for e in self.episodes:
            if self.store is not None:
                self.store.start(e.name)
        habit, share = self.distractor[1:] if self.distractor is not None else (0, 0.0)
        states, params, keys, pad = batch.init_stage(
            [e.spec for e in self.episodes], self.capacity, self.horizon, habit, share
        )
        for i, e in enumerate(self.episodes):
            e.row = i
            e.memory = Memory(self.obs, i, self.cols)
        self.host_params = jax.device_get(params)
        self.service_steps = self.host_params.service_steps.tolist()
        self.keys = np.asarray(keys)  # [B, horizon, 2]; each row's key of its own step goes to the device
        self.tstep = np.zeros(len(pad), np.int64)  # per row: the steps it has taken (its own clock)
        self.sanctions = np.zeros((len(pad), 2), np.int64)  # newcomer, background
        self.involved = np.zeros(len(pad), np.int64)  # steps with the newcomer in a collision
        live = np.zeros(len(pad), bool)
        live[: len(self.episodes)] = True
        done, waits = jax.device_put(pad), jax.device_put(np.zeros(len(pad), np.int32))
        self.imit = batch.init_imitation(len(pad)) if self.distractor is not None else None
        self.obs.append(
            np.asarray(
                programs.run(
                    "observe",
                    batch.observe,
                    jax.device_put(self._keys(0)),
                    states,
                    params,
                    done,
                    waits,
                    self.imit,
                    intents=self.wants_intents,
                )
            )
        )
        if self.store is not None:
            host = jax.device_get(states)
            self.buf_states = jax.tree.map(lambda x: np.zeros((self.steps + 1,) + x.shape, x.dtype), host)
            jax.tree.map(lambda b, x: b.__setitem__(0, x), self.buf_states, host)
            self.buf_infos = None
        return states, params, done, waits, live

    def _keys(self, ahead: int) -> np.ndarray:
        """Each row's step key `ahead` steps past its own clock [B, 2] (clipped to the horizon)."""
        t = np.minimum(self.tstep + ahead, self.keys.shape[1] - 1)
        return self.keys[np.arange(len(t)), t]

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            if self.store is not None:
                self.store.close()

    def _ask(self, idle: np.ndarray, states, params, ready: dict, tasks: dict) -> None:
        """Turns of the idle rows whose newcomer decides now (the others are ready to WAIT): one
        request task per turn for an async agent (independent episodes), else one call."""
        c = self.cols
        prev = np.stack([self.obs[t][r] for r, t in zip(idle.tolist(), self.tstep[idle].tolist())])
        deciding = (prev[:, c.active] != 0) & (prev[:, c.in_service] == 0)
        ready.update(dict.fromkeys(idle[~deciding].tolist()))
        rows = idle[deciding].tolist()
        if not rows:
            return
        turns = [self._turn(self.episodes[r], row) for r, row in zip(rows, prev[deciding].tolist())]
        if self.wants_frames:
            tf = time.perf_counter()
            self._frames(turns, states, params)
            self.timing["frames_s"] += time.perf_counter() - tf
        ctx = StepContext(states, params, jax.device_put(self._keys(0)))  # shared by this call's turns
        if self.per_turn:
            for r, turn in zip(rows, turns):
                tasks[asyncio.ensure_future(self.agent.act([turn], ctx))] = [r]
            return
        ta, ca = time.perf_counter(), time.process_time()
        decisions = self.agent.act(turns, ctx)
        if inspect.isawaitable(decisions):
            tasks[asyncio.ensure_future(decisions)] = rows
        else:
            _collect(rows, decisions, ready)
        self.timing["agent_s"] += time.perf_counter() - ta
        self.timing["agent_cpu_s"] += time.process_time() - ca

    async def _run(self) -> None:
        t0 = time.perf_counter()
        self.wants_frames = bool(getattr(self.agent, "wants_frames", False))
        self.wants_intents = self.wants_frames or bool(getattr(self.agent, "wants_intents", False))
        # An async agent is asked once per turn, so each episode steps when its own reply is in.
        self.per_turn = not self.lockstep and inspect.iscoroutinefunction(getattr(self.agent, "act", None))
        states, params, done, waits, live = self._init()
        self.timing["init_s"] = time.perf_counter() - t0
        cpu0 = time.process_time()  # process CPU time (all threads, XLA's included) of the steps
        asked = np.zeros(len(live), bool)  # the row's decision of its current step is pending or in
        ready: dict[int, Decision | None] = {}  # row -> its decision (None: nothing to decide, it waits)
        tasks: dict[asyncio.Future, list[int]] = {}  # agent calls in flight -> their rows
        try:
            while live.any():
                idle = np.flatnonzero(live & ~asked)
                if idle.size:
                    self._ask(idle, states, params, ready, tasks)
                    asked[idle] = True
                if tasks and (self.lockstep or not ready):
                    ta, ca = time.perf_counter(), time.process_time()
                    await asyncio.wait(
                        list(tasks), return_when=asyncio.ALL_COMPLETED if self.lockstep else asyncio.FIRST_COMPLETED
                    )
                    self.timing["agent_s"] += time.perf_counter() - ta
                    self.timing["agent_cpu_s"] += time.process_time() - ca
                for task in [f for f in tasks if f.done()]:
                    _collect(tasks.pop(task), task.result(), ready)  # an agent's exception stops the stage
                if ready:
                    states, done, waits = await self._advance(ready, states, params, done, waits, live)
                    asked[list(ready)] = False
                    ready.clear()
        finally:
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        self.timing["wall_s"] = time.perf_counter() - t0
        self.timing["cpu_s"] = time.process_time() - cpu0

    async def _advance(self, ready: dict, states, params, done, waits, live: np.ndarray):
        """Step the ready rows (one compiled program; the others are held), record and finish them."""
        c = self.cols
        rows = np.asarray(sorted(ready), np.int64)
        go = np.zeros(len(live), bool)
        go[rows] = True
        actions = np.full(len(live), C.WAIT, np.int32)
        actions[rows] = [C.WAIT if ready[r] is None else ready[r].action for r in rows.tolist()]
        t = self.tstep[rows]
        prev = np.stack([self.obs[k][r] for r, k in zip(rows.tolist(), t.tolist())])
        # Dispatched from a thread: the first call of a stage compiles (seconds), and other
        # episodes' requests are in flight meanwhile; a blocked event loop would time them out.
        out = await asyncio.to_thread(
            programs.run,
            "advance",
            batch.advance,
            jax.device_put(self._keys(0)),
            jax.device_put(self._keys(1)),
            states,
            done,
            waits,
            jax.device_put(actions),
            params,
            self.imit,
            jax.device_put(go),
            intents=self.wants_intents,
        )
        states, done, waits, info, packed = out[:5]
        if self.imit is not None:
            self.imit = out[5]
        # The transfer waits for the device in a thread: other episodes' replies keep arriving.
        if self.store is None:
            now = (await asyncio.to_thread(np.asarray, packed))[rows]
        else:
            host, info_h, now = await asyncio.to_thread(jax.device_get, (states, info, packed))
            now = now[rows]
            if self.buf_infos is None:
                self.buf_infos = jax.tree.map(lambda x: np.zeros((self.steps,) + x.shape, x.dtype), info_h)
            jax.tree.map(lambda b, x: b.__setitem__((t + 1, rows), x[rows]), self.buf_states, host)
            jax.tree.map(lambda b, x: b.__setitem__((t, rows), x[rows]), self.buf_infos, info_h)
        while len(self.obs) <= int(t.max()) + 1:
            self.obs.append(np.zeros_like(self.obs[0]))
        for r, k, row in zip(rows.tolist(), (t + 1).tolist(), now):
            self.obs[k][r] = row
        self.involved[rows] += now[:, c.involved] != 0
        self._record(rows, prev, now, ready)
        ending = (now[:, c.done] != 0) | (t == self.steps - 1)
        for r, n, row in zip(rows[ending].tolist(), (t[ending] + 1).tolist(), now[ending].tolist()):
            self._finish(self.episodes[r], n, row)
        if self.store is not None:
            self.store.flush()
        self.tstep[rows] += 1
        live[rows[ending]] = False
        self.timing["steps"] += 1
        if self.progress is not None:
            at = int(self.tstep[live].min()) if live.any() else self.steps
            self.progress(
                self.phase, at, self.steps, len(self.episodes), len(self.episodes) - int(live.sum()), len(rows)
            )
        return states, done, waits


def _collect(rows: list[int], decisions, ready: dict) -> None:
    decisions = list(decisions)
    if len(decisions) != len(rows):
        raise ValueError(f"agent returned {len(decisions)} decisions for {len(rows)} turns")
    ready.update((r, checked(d)) for r, d in zip(rows, decisions))


__all__ = ["BLOCKED", "COUNTERS", "Episode", "FORCED", "Stage"]
