"""`normjax play` through Flask's test client (the browser test: tests/play/test_browser.py).

Default tier: bad requests (4xx, nothing changes, ids cannot leave --out) and
a server killed after a step (a new app on the same --out resumes at the same
turn).  Slow tier: one participant plays a short protocol over HTTP: a 3-step interaction phase
with beliefs, then the six test episodes, choosing the oracle's action at
every turn (the test reads it from the session's world, as a person reads
the frame).  Checked:

* the results equal `normjax.protocol.run_episodes`' (evaluate's program) for
  the oracle on the same episodes, number for number (the same seeds, scenarios and step);
* the server is "killed" mid-episode (a new app on the same --out): the
  participant resumes at the same turn and world step, nothing lost or
  repeated, and a stale or repeated key press is refused with 409;
* replaying actions.jsonl through the runner's jitted step reproduces every
  recorded state of the transcripts exactly;
* every accepted step is in actions.jsonl; the transcripts are trajectory
  files (export format) with the beliefs where llm-judge reads them;
* `normjax play-export` of the study pools this participant into the same
  aggregates as their results.json;
* bad requests get a clear 4xx and change nothing; participant ids cannot
  leave --out.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")

from normjax.analysis.judge import export_judge_prompts
from normjax.env import oracle_policy
from normjax.play.app import create_app
from normjax.play.export import export_study
from normjax.play.session import LOG, read_log
from normjax.protocol.runner import run_episodes, summarize
from normjax.protocol.seeds import test_episodes as protocol_episodes
from normjax.runtime.batch import policy_actions
from normjax.runtime.runner import run_protocol
from normjax.runtime.transcripts import TranscriptStore
from normjax.runtime.turns import Decision

NORM = "forbidden_zone_q"
NORM_ID = 0
STEPS = 3  # interaction steps (the protocol's is 200)


def _oracle(app, pid: str) -> str:
    """The oracle's action for the waiting turn (the protocol's policy key)."""
    s = app.config["sessions"][pid]
    a = int(np.asarray(policy_actions(oracle_policy, s.ctx.keys, s.ctx.states, s.ctx.params))[s.turn.index])
    return ("up", "down", "left", "right", "wait")[a]


def _step(client, pid, view, action, **extra):
    r = client.post(f"/api/{pid}/step", json=dict(turn=view["turn"], action=action, **extra))
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def _restart(out, old):
    """A new app on `out` and a client holding the old client's participant cookie (the same browser)."""
    app = create_app(out, [NORM_ID], interaction_steps=STEPS)
    c = app.test_client()
    cookie = old.get_cookie("njp_alice")
    c.set_cookie(cookie.key, cookie.value)
    return app, c


def _start(out):
    """A new app on `out` and participant alice's first view (checked)."""
    app = create_app(out, [NORM_ID], interaction_steps=STEPS)
    c = app.test_client()
    assert c.get("/api/alice/view").status_code == 404  # not started (and no token: normjax.play.app.DENIED)
    v = c.post("/api/alice/start").get_json()
    for _ in range(20):  # the view waits 30 s per request; a loaded machine may compile for longer (the page polls too)
        if v["status"] != "starting":
            break
        v = c.get("/api/alice/view").get_json()
    assert v["status"] == "playing" and v["phase"] == "interaction" and v["turn"] == 0
    assert "Current step: 0." in v["prompt"] and NORM not in json.dumps(v)  # the norm is not revealed
    png = c.get("/api/alice/frame.png")
    assert png.status_code == 200 and png.data[:8] == b"\x89PNG\r\n\x1a\n"
    return app, c, v


def test_bad_requests_and_resume_after_a_kill(tmp_path):
    out = tmp_path / "study"
    app, c, v = _start(out)

    # Bad requests: a clear 4xx, nothing changes.
    for body, code, words in [
        ({"turn": 0, "action": "jump"}, 400, "one of up, down"),
        ({"turn": "0", "action": "up"}, 400, "'turn' must be an integer"),
        ({"turn": 0, "action": "up", "confidence": 2}, 400, "in [0, 1]"),
        ([1, 2], 400, "JSON object"),
        ({"turn": 5, "action": "up"}, 409, "out of order"),
    ]:
        r = c.post("/api/alice/step", json=body)
        assert r.status_code == code and words in r.get_json()["error"], (body, r.get_json())
    r = c.post("/api/alice/step", data="up", content_type="text/plain")
    assert r.status_code == 400 and "must be JSON" in r.get_json()["error"]
    assert c.post("/api/bob/step", json={"turn": 0, "action": "up"}).status_code == 404
    for bad in ("..", ".hidden", "a" * 65, "x%2F..%2F..%2Fetc"):
        assert c.post(f"/api/{bad}/start").status_code in (400, 404)
        assert c.get(f"/p/{bad}").status_code in (400, 404)
    assert c.get("/p/..%2f..%2fpyproject.toml").status_code in (400, 404)
    assert c.get("/api/alice/view").get_json()["turn"] == 0 and not read_log(out / "alice" / LOG)

    v = _step(c, "alice", v, "left", belief="agents avoid zone Q", confidence=0.5)
    assert v["turn"] == 1 and v["belief"] == "agents avoid zone Q"
    app.config["sessions"]["alice"].close()  # the server dies; a new one on the same --out resumes
    app, c = _restart(out, c)
    w = c.post("/api/alice/start").get_json()
    assert {k: w[k] for k in ("turn", "t", "phase", "prompt", "belief")} == {
        k: v[k] for k in ("turn", "t", "phase", "prompt", "belief")
    }
    assert c.post("/api/alice/step", json=dict(turn=0, action="left")).status_code == 409  # no step repeated
    assert [r["action"] for r in read_log(out / "alice" / LOG)] == [2]
    assert sorted(p.name for p in out.iterdir()) == ["alice", "play.json"]  # nothing written elsewhere
    app.config["sessions"]["alice"].close()
    with pytest.raises(ValueError, match="interaction_steps: 3 -> 4"):  # another protocol length: refused at start
        create_app(out, [NORM_ID], interaction_steps=STEPS + 1)


@pytest.mark.slow
def test_a_participant_plays_the_protocol_over_http(tmp_path):
    out = tmp_path / "study"
    app, c, v = _start(out)

    beliefs = ["agents avoid the middle", "agents avoid zone Q", "agents avoid zone Q"]
    for i in range(STEPS):
        v = _step(c, "alice", v, _oracle(app, "alice"), belief=beliefs[i], confidence=0.25 * (i + 1))
    assert v["phase"] == "seen" and v["belief"] == beliefs[-1] and v["confidence"] == 0.75
    for _ in range(4):
        v = _step(c, "alice", v, _oracle(app, "alice"))
    stale = dict(v)

    # A killed server: a new app on the same directory resumes at the same turn and step.
    app.config["sessions"]["alice"].close()
    app, c = _restart(out, c)
    w = c.post("/api/alice/start").get_json()
    assert {k: w[k] for k in ("turn", "t", "phase", "episode", "prompt")} == {
        k: v[k] for k in ("turn", "t", "phase", "episode", "prompt")
    }
    r = c.post("/api/alice/step", json=dict(turn=stale["turn"] - 1, action="wait"))
    assert r.status_code == 409  # a repeated key press changes nothing
    while w["status"] == "playing":
        w = _step(c, "alice", w, _oracle(app, "alice"))
    assert w["status"] == "done", w

    # The results: evaluate's format and numbers for the oracle on these episodes.
    got = json.loads((out / "alice" / "results.json").read_text())
    eps = protocol_episodes([NORM_ID])
    want = summarize(eps, run_episodes(oracle_policy, eps))
    for g, e in zip(got["episodes"], want["episodes"]):
        assert {k: g[k] for k in e} == e
    assert got["seen"] == want["seen"] and got["unseen"] == want["unseen"]
    assert got["interaction"][0]["belief"] == beliefs[-1] and got["interaction"][0]["confidence"] == 0.75
    assert all(g["belief"] == beliefs[-1] for g in got["episodes"])  # frozen for the tests
    assert (out / "alice" / "results.txt").read_text().startswith("condition")

    # The log: one line per accepted step, in order; the transcripts hold them as decisions.
    log = read_log(out / "alice" / LOG)
    assert [r["turn"] for r in log] == list(range(len(log))) == list(range(w["turn"]))
    assert sum(g["decisions"] for g in got["episodes"]) + got["interaction"][0]["decisions"] == len(log)
    rec = [json.loads(x) for x in (out / "alice" / "transcripts" / NORM / "seen_0.jsonl").read_text().splitlines()]
    assert rec[0]["format"] == "normjax.trajectory/1" and rec[0]["policy"] == "external agent"
    assert [r["t"] for r in rec[1:]] == list(range(len(rec) - 1))
    judge = export_judge_prompts(out / "alice")  # llm-judge reads the human's beliefs
    lines = [json.loads(x) for x in (out / "alice" / "judge_prompts.jsonl").read_text().splitlines()]
    assert judge and {x["belief"] for x in lines} == set(beliefs)
    assert sorted(p.name for p in out.iterdir()) == ["alice", "play.json"]  # nothing else written

    # The study export of this one participant: evaluate's aggregates, the same judge lines.
    summary = export_study(out)
    pooled = json.loads((out / "export.json").read_text())["pooled"]
    assert summary["complete"] == ["alice"] and not summary["incomplete"]
    assert pooled["seen"] == got["seen"] and pooled["unseen"] == got["unseen"]
    assert summary["judge_lines"] == len(lines)

    # Replaying the logged actions through the runner's jitted step (all six test episodes in
    # one lockstep batch this time) reproduces every recorded state exactly.
    replay = _Replay({(r["episode"], r["t"]): r["action"] for r in log})
    run_protocol(replay, [NORM_ID], interaction_steps=STEPS, out=tmp_path / "replay")
    human, again = TranscriptStore(out / "alice"), TranscriptStore(tmp_path / "replay")
    assert human.episodes() == again.episodes() and len(human.episodes()) == 7
    strip = lambda recs: [{k: v for k, v in r.items() if k != "llm"} for r in recs[1:]]
    for name in human.episodes():
        assert strip(human.read(name)) == strip(again.read(name)), name


class _Replay:
    """Logged actions as an external agent (intents on: the same compiled step as the session's)."""

    wants_frames, wants_intents = False, True

    def __init__(self, actions):
        self.actions = actions

    def act(self, turns, ctx):
        return [Decision(action=self.actions[(t.episode, t.t)]) for t in turns]
