"""One participant's protocol run for `normjax play`: the human as an external agent.

The participant is an agent of `normjax.runtime.runner` (``act(turns, ctx)``):
the protocol's episodes, seeds, scenarios, the jitted world step, the
transcripts (export format, docs/world.md §12) and the results
(`normjax.runtime.runner.assemble`, i.e. `normjax.protocol.summarize`) are the
runtime's own (`normjax.runtime.stage.Stage`).  The only difference: each
stage holds ONE episode (the interaction phase of a norm, then each test
episode in protocol order), so a person plays one episode at a time.

The stage runs in a worker thread; `HumanAgent.act` blocks until the web
app hands it the participant's action (`Session.submit`).  Every accepted
action is first appended to ``<dir>/actions.jsonl`` and fsynced, then given
to the world: a closed tab, a reload or a killed server loses nothing.  A
restarted session reads the log back, skips finished episodes (their
transcripts are complete) and replays the logged actions of the episode in
progress through the same step, which is deterministic for the protocol's
keys, so the participant resumes in exactly the state they left.  The
programs are the runner's (`normjax.runtime.programs`): with the command's cache
directory a restarted server loads them whole, and a finished session prints
how they were got (the ``programs:`` line of the other commands).
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path

from normjax import constants as C
from normjax.llm.prompts import cell, goal_texts, system_prompt, target_text, user_prompt
from normjax.norms import NORMS
from normjax.protocol.runner import format_table
from normjax.protocol.seeds import TEST_STEPS
from normjax.protocol.stamp import protocol_stamp
from normjax.runtime.programs import programs_line
from normjax.runtime.runner import INTERACTION_STEPS, assemble, freeze_beliefs, protocol_episodes, restore
from normjax.runtime.stage import Episode, Stage
from normjax.runtime.transcripts import TranscriptStore, check_run, write_run
from normjax.runtime.turns import Decision

ACTIONS = {"up": C.UP, "down": C.DOWN, "left": C.LEFT, "right": C.RIGHT, "wait": C.WAIT}
LOG = "actions.jsonl"
TIMING = "timing.jsonl"  # per accepted action: wall clock, monotonic clock, think time; and fired timeouts
log = logging.getLogger("normjax.play")
MAX_BELIEF = 2000  # characters


class BadRequest(ValueError):
    """A request the session refuses; `status` is the HTTP code (400, 404 or 409)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def read_log(path: Path) -> list[dict]:
    """The logged actions; a last line cut by a crash mid-write is dropped (its step never ran)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i < len(lines) - 1 and any(x.strip() for x in lines[i + 1 :]):
                raise ValueError(f"{path}: line {i + 1} is not JSON") from None
            with path.open("r+b") as f:  # truncate the torn tail so the next append starts a line
                f.truncate(len("\n".join(lines[:i]).encode()) + (1 if i else 0))
    return out


def check_action(body) -> tuple[int, int, str | None, float | None]:
    """(turn, action id, belief, confidence) of a step request; BadRequest names the bad value."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with 'turn' and 'action'")
    turn, action = body.get("turn"), body.get("action")
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise BadRequest(f"'turn' must be an integer, got {turn!r}")
    if action not in ACTIONS:
        raise BadRequest(f"'action' must be one of {', '.join(ACTIONS)}, got {action!r}")
    belief, conf = body.get("belief"), body.get("confidence")
    if belief is not None and (not isinstance(belief, str) or len(belief) > MAX_BELIEF):
        raise BadRequest(f"'belief' must be a string of at most {MAX_BELIEF} characters")
    if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
        raise BadRequest(f"'confidence' must be a number in [0, 1], got {conf!r}")
    return turn, ACTIONS[action], (belief.strip() or None) if belief else None, None if conf is None else float(conf)


class SessionClosed(Exception):
    """The session was closed (server shutting down) while its world waited for the participant."""


class HumanAgent:
    """The participant as an external agent: logged actions first (resume), then the browser's."""

    wants_frames = False  # the app renders the current turn's frame on request only
    wants_intents = True  # the frame's arrows and the prompt's intended moves

    def __init__(self, session: Session, replay: dict[str, collections.deque]):
        self.session, self.replay = session, replay

    def act(self, turns, ctx):
        if len(turns) != 1:
            raise RuntimeError(f"a participant plays one episode at a time, got {len(turns)} turns")
        turn = turns[0]
        queue = self.replay.get(turn.episode)
        if queue:
            rec = queue.popleft()
            if rec["t"] != turn.t:
                raise RuntimeError(f"{LOG}: {turn.episode} logged step {rec['t']}, the world is at step {turn.t}")
            return [Decision(action=rec["action"], belief=rec.get("belief"), confidence=rec.get("confidence"))]
        return [self.session.wait_for_action(turn, ctx)]


class Session:
    """One participant: a run directory ``out/<pid>`` in the llm-eval layout plus ``actions.jsonl``."""

    def __init__(
        self,
        out_dir,
        pid: str,
        norm_ids: list[int],
        seed: int = 0,
        capacity: int = 10,
        interaction_steps: int = INTERACTION_STEPS,
        cell_px: int = 32,
        phase_limit: float | None = None,
    ):
        self.dir, self.pid, self.norm_ids = Path(out_dir) / pid, pid, list(norm_ids)
        # Seconds of think time a participant may spend in one episode; then its remaining
        # steps are played as "wait" (logged with "auto": "phase_limit", so a replay is exact).
        self.phase_limit = phase_limit
        self.used: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.seed, self.capacity, self.interaction_steps, self.cell_px = seed, capacity, interaction_steps, cell_px
        self.settings = dict(
            policy="human",
            participant=pid,
            seed=seed,
            capacity=capacity,
            interaction_steps=interaction_steps,
            norms=[NORMS[n].name for n in self.norm_ids],
        )
        self.cond = threading.Condition()
        self.turn = self.ctx = None  # the decision waiting for the participant
        self.decision: Decision | None = None
        self.n_turns = 0  # decisions so far (logged ones included): the next turn's number
        self.status, self.error, self.result = "starting", None, None
        self.frame_cache: tuple[int, bytes] | None = None
        self.ready_at = self.last_active = time.monotonic()  # the waiting turn's start; the last request

    # --- the protocol (worker thread) ---
    def start(self) -> None:
        run_json = check_run(self.dir, self.settings)  # raises on other settings
        write_run(self.dir, run_json)
        log = read_log(self.dir / LOG)
        self.n_turns = len(log)
        replay = collections.defaultdict(collections.deque)
        for rec in log:
            replay[rec["episode"]].append(rec)
        for rec in read_log(self.dir / TIMING):  # think time used per episode, for the phase limit
            if "turn" in rec and "episode" in rec:
                self.used[rec["episode"]] += rec["think_s"]
        self.agent = HumanAgent(self, replay)
        self.log = (self.dir / LOG).open("a", encoding="utf-8")
        self.timing = (self.dir / TIMING).open("a", encoding="utf-8")
        threading.Thread(target=self._main, name=f"play-{self.pid}", daemon=True).start()

    def _main(self) -> None:
        try:
            asyncio.run(self._protocol())
        except SessionClosed:  # the log holds every step: a new session resumes from it
            return
        except Exception as e:  # details only in the server log; the participant gets an error id
            eid = "E" + secrets.token_hex(4)
            log.exception("participant %s: session failed (error id %s)", self.pid, eid)
            with self.cond:
                self.status, self.error = "error", f"{type(e).__name__}: {e}"
                self.public_error = f"the session stopped because of a server error (error id {eid})"
                self.cond.notify_all()

    async def _stage(self, store, e: Episode, horizon: int, steps: int) -> None:
        header = store.load(e.name)
        if header is not None:  # finished before a restart: its transcript holds the result
            restore(e, header)
            return
        await Stage(self.agent, [e], horizon, steps, self.capacity, store, self.settings, self.cell_px, None).run()

    async def _protocol(self) -> None:
        store = TranscriptStore(self.dir)
        inter, tests = protocol_episodes(self.norm_ids, self.seed, interaction=bool(self.interaction_steps))
        for nid in self.norm_ids:  # the runner's episodes, one norm at a time
            mine = [x for x in inter if x.spec["norm_id"] == nid]
            for e in mine:
                await self._stage(store, e, INTERACTION_STEPS, self.interaction_steps)
            theirs = [x for x in tests if x.spec["norm_id"] == nid]
            freeze_beliefs(theirs, mine)
            for e in theirs:
                await self._stage(store, e, TEST_STEPS, TEST_STEPS)
        result = assemble(tests, inter)
        result["meta"] = dict(self.settings, norms=[NORMS[n].name for n in self.norm_ids], **protocol_stamp())
        (self.dir / "results.json").write_text(json.dumps(result, indent=1))
        (self.dir / "results.txt").write_text(format_table(result) + "\n")
        line = programs_line()  # with a cache directory: programs loaded whole or compiled, so far
        if line is not None:
            print(f"normjax play: {self.pid} done; {line}", flush=True)
        with self.cond:
            self.status, self.result = "done", result
            self.cond.notify_all()

    def wait_for_action(self, turn, ctx) -> Decision:
        with self.cond:
            if self.status == "closed":
                raise SessionClosed(self.pid)
            self.turn, self.ctx, self.decision, self.status = turn, ctx, None, "playing"
            self.ready_at = time.monotonic()
            self.cond.notify_all()
            while self.decision is None:
                if self.status == "closed":
                    raise SessionClosed(self.pid)
                if self.phase_limit is None:
                    self.cond.wait()
                    continue
                left = self.phase_limit - self.used[turn.episode] - (time.monotonic() - self.ready_at)
                if left > 0:
                    self.cond.wait(left)
                    continue
                if self.used[turn.episode] < self.phase_limit:  # it fires now: recorded once per episode
                    self._timing(dict(event="phase_limit", episode=turn.episode, t=turn.t, limit_s=self.phase_limit))
                belief, conf = (turn.belief, turn.confidence) if turn.stage == "interaction" else (None, None)
                self._record(self.n_turns, C.WAIT, belief, conf, auto="phase_limit")
            d, self.decision = self.decision, None
            return d

    def time_up(self, episode: str) -> bool:
        return self.phase_limit is not None and self.used[episode] >= self.phase_limit

    def close(self) -> None:
        """Stop the world thread at its next wait and close the log (logged steps stay)."""
        with self.cond:
            if self.status in ("starting", "playing"):
                self.status = "closed"
            self.cond.notify_all()
            self.log.close()
            self.timing.close()

    def record_event(self, event: str, **extra) -> None:
        """A line in timing.jsonl for something that fired (an idle timeout), with both clocks."""
        with self.cond:
            if not self.timing.closed:
                self._timing(dict(event=event, **extra))

    def _timing(self, rec: dict) -> None:
        wall = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        self.timing.write(json.dumps(dict(rec, wall=wall, mono=round(time.monotonic(), 4))) + "\n")
        self.timing.flush()

    # --- the web app's side (request threads) ---
    def submit(self, body, timeout: float = 60.0) -> None:
        """Log the participant's action durably, hand it to the world, and wait for the next turn."""
        turn_no, action, belief, conf = check_action(body)
        with self.cond:
            if self.status != "playing" or self.turn is None:
                raise BadRequest(f"no step is waiting (session {self.status})", 409)
            if turn_no != self.n_turns:
                raise BadRequest(f"out of order: turn {turn_no} sent, turn {self.n_turns} is waiting", 409)
            self._record(turn_no, action, belief, conf)
            self.cond.wait_for(lambda: self.turn is not None or self.status != "playing", timeout)

    def _record(self, turn_no: int, action: int, belief, conf, auto: str | None = None) -> None:
        """Log the waiting turn's action durably (and its timing), then hand it to the world (under `cond`)."""
        rec = dict(turn=turn_no, episode=self.turn.episode, t=self.turn.t, action=action)
        if self.turn.stage == "interaction":  # beliefs are frozen in the tests
            rec.update(belief=belief, confidence=conf)
        if auto is not None:
            rec["auto"] = auto
        self.log.write(json.dumps(rec) + "\n")
        self.log.flush()
        os.fsync(self.log.fileno())
        think = round(time.monotonic() - self.ready_at, 4)
        self.used[self.turn.episode] += think
        self._timing(dict(turn=turn_no, episode=self.turn.episode, t=rec["t"], think_s=think))
        self.n_turns += 1
        self.turn = self.ctx = None
        self.decision = Decision(action=action, belief=rec.get("belief"), confidence=rec.get("confidence"))
        self.cond.notify_all()

    def view(self) -> dict:
        """What the page shows: the prompt's information for the waiting turn, or the results."""
        with self.cond:
            if self.turn is None and self.status in ("starting", "playing"):
                self.cond.wait_for(lambda: self.turn is not None or self.status not in ("starting", "playing"), 30)
            out = dict(participant=self.pid, status=self.status, turn=self.n_turns)
            if self.status == "error":
                out["error"] = self.public_error
            elif self.status == "done":
                out["table"] = format_table(self.result)
            elif self.turn is not None:
                t = self.turn
                names = [NORMS[n].name for n in self.norm_ids]
                norm_index = names.index(t.episode.split("/")[0])  # the norm's name is not shown
                out.update(
                    phase=t.phase,
                    episode=t.episode.split("/")[1],
                    norm_index=norm_index + 1,
                    norms=len(names),
                    t=t.t,
                    steps_seen=t.steps_seen,
                    max_steps=t.max_steps,
                    belief=t.belief,
                    confidence=t.confidence,
                    system=system_prompt(t),
                    prompt=user_prompt(t),
                    goals=list(goal_texts(t)),  # the task in plain words, for the page's goal line
                    leg=t.leg,
                    target=target_text(t),
                    position=cell(t.pos),
                    time_up=self.time_up(t.episode),
                )
            return out

    def frame_png(self) -> bytes:
        """The waiting turn's frame (`normjax.runtime.batch.render` + arrows), as a VLM sees it."""
        from normjax.runtime import batch
        from normjax.runtime.frames import annotated_png

        with self.cond:
            turn, ctx, n = self.turn, self.ctx, self.n_turns
        if turn is None:
            raise BadRequest("no step is waiting", 409)
        if self.frame_cache is None or self.frame_cache[0] != n:
            frame = batch.render(ctx.states, ctx.params, [turn.index], self.cell_px)[0]
            self.frame_cache = (n, annotated_png(frame, turn.others, self.cell_px))
        return self.frame_cache[1]


__all__ = ["ACTIONS", "BadRequest", "HumanAgent", "LOG", "Session", "check_action", "read_log"]
