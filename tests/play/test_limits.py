"""`normjax play`'s per-action timing and the per-episode time limit, on a Session without a world (default tier).

The world thread's side (`Session.wait_for_action`) is driven with hand-made turns: the
participant's action arrives from another thread (logged with its think time), or the
episode's think-time budget (``phase_limit``) runs out and the turn is played as "wait",
logged with ``"auto": "phase_limit"`` (so a replay of actions.jsonl is exact) and the
belief held so far; the limit firing is recorded once per episode in timing.jsonl, and a
restarted session counts the time already used.
"""

from __future__ import annotations

import threading
import time
import types

from normjax import constants as C
from normjax.play.session import LOG, TIMING, Session, read_log


def _session(tmp_path, limit):
    s = Session(tmp_path, "p", [0], phase_limit=limit)
    s.dir.mkdir(parents=True, exist_ok=True)
    for rec in read_log(s.dir / TIMING):  # what start() restores, without starting a world
        if "turn" in rec:
            s.used[rec["episode"]] += rec["think_s"]
    s.n_turns = len(read_log(s.dir / LOG))
    s.log, s.timing = (s.dir / LOG).open("a"), (s.dir / TIMING).open("a")
    return s


def _turn(episode, t, stage="interaction"):
    return types.SimpleNamespace(episode=episode, t=t, stage=stage, belief="keep left", confidence=0.3)


def _answer_later(s, body, delay):
    def go():
        time.sleep(delay)
        s.submit(body, timeout=0.01)

    threading.Thread(target=go, daemon=True).start()


def test_think_time_is_logged_and_the_phase_limit_plays_waits(tmp_path):
    s = _session(tmp_path, limit=1.0)
    _answer_later(s, dict(turn=0, action="left", belief="avoid Q", confidence=0.5), 0.2)
    d = s.wait_for_action(_turn("n/interaction", 0), None)
    assert d.action == C.LEFT and d.belief == "avoid Q"
    t0 = time.monotonic()
    d = s.wait_for_action(_turn("n/interaction", 1), None)  # nobody answers: the rest of the budget, then "wait"
    waited = time.monotonic() - t0
    assert d.action == C.WAIT and d.belief == "keep left" and d.confidence == 0.3  # the belief held so far
    assert 0.4 < waited < 3.0, waited  # about 0.8 s: the budget left (bounds wide for a loaded machine)
    t0 = time.monotonic()
    d = s.wait_for_action(_turn("n/interaction", 2), None)  # the budget is spent: at once
    assert d.action == C.WAIT and time.monotonic() - t0 < 0.5
    assert s.time_up("n/interaction") and not s.time_up("n/seen_0")
    _answer_later(s, dict(turn=3, action="up"), 0.05)  # another episode: a fresh budget
    assert s.wait_for_action(_turn("n/seen_0", 0, "seen"), None).action == C.UP
    s.close()

    log = read_log(tmp_path / "p" / LOG)
    assert [(r["turn"], r["action"], r.get("auto")) for r in log] == [
        (0, C.LEFT, None),
        (1, C.WAIT, "phase_limit"),
        (2, C.WAIT, "phase_limit"),
        (3, C.UP, None),
    ]
    assert "belief" not in log[3]  # frozen in the tests, as before
    timing = read_log(tmp_path / "p" / TIMING)
    steps = [r for r in timing if "turn" in r]
    assert [r["turn"] for r in steps] == [0, 1, 2, 3] and 0.15 < steps[0]["think_s"] < 0.8
    assert all(r["wall"].endswith("+00:00") and r["mono"] > 0 for r in timing)
    fired = [r for r in timing if r.get("event") == "phase_limit"]
    assert len(fired) == 1 and fired[0]["episode"] == "n/interaction" and fired[0]["limit_s"] == 1.0

    again = _session(tmp_path, limit=1.0)  # a restart: the episode's budget stays spent
    t0 = time.monotonic()
    assert again.wait_for_action(_turn("n/interaction", 3), None).action == C.WAIT
    assert time.monotonic() - t0 < 0.5 and again.time_up("n/interaction")
    again.close()


def test_without_a_limit_the_world_waits_for_the_participant(tmp_path):
    s = _session(tmp_path, limit=None)
    _answer_later(s, dict(turn=0, action="right"), 0.3)
    assert s.wait_for_action(_turn("n/interaction", 0), None).action == C.RIGHT
    s.close()
    assert "auto" not in read_log(tmp_path / "p" / LOG)[0] and not s.time_up("n/interaction")
