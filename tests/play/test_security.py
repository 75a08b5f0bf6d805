"""`normjax play` on the open internet, through Flask's test client and without a world (default tier).

Identity (tokens; an unknown id and someone else's id get the same answer and change
nothing), one server per folder (the lock, a stale lock after kill -9, the run identity),
limits and headers (413, JSON depth, Host allowlist, creation rate and total, CSP and
friends, no version banner), the sub-path mount, crowdsourcing hooks (ids, questionnaire,
completion code, idle timeout), and generic errors.  Every participant-facing response
made here is recorded and scanned after its test (an autouse fixture) for a norm name, an
absolute path or a traceback.  The paper's design (--pool, balanced assignment, the export's human rows)
is in tests/play/test_design.py.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")

from normjax.norms import NORMS
from normjax.play import guard
from normjax.play.app import DENIED, create_app
from normjax.play.guard import FolderLock, host_allowed, json_depth_ok
from normjax.play.server import local_server, wsgi_server
from normjax.play.study import Study

RESPONSES: list[tuple[str, bytes]] = []  # every participant-facing response of this module


class _Recording:
    """A test client whose responses are kept for the final scan."""

    def __init__(self, client):
        self.c = client

    def __getattr__(self, name):
        return getattr(self.c, name)

    def open(self, *a, **k):
        r = self.c.open(*a, **k)
        path = a[0] if a else k.get("path", "")
        if "/admin" not in str(path):
            RESPONSES.append((str(path), r.get_data()))
        return r

    def get(self, *a, **k):
        return self.open(*a, method="GET", **k)

    def post(self, *a, **k):
        return self.open(*a, method="POST", **k)


def _client(app):
    return _Recording(app.test_client())


@pytest.fixture(autouse=True)
def no_response_shows_a_norm_name_a_path_or_a_traceback(tmp_path):
    """After every test here: each participant-facing response it got is scanned."""
    RESPONSES.clear()
    yield
    names = [n.name for n in NORMS]
    for path, body in RESPONSES:
        text = body.decode("utf-8", "replace")
        for bad in names + ["Traceback", 'File "', "/tmp/", "/home/", "/work/", str(tmp_path.parent)]:
            assert bad not in text, (path, bad, text[:300])


def _study_app(out, **kw):
    study = Study(out, [0, 12, 23, 39], 2, seed=0, interaction_steps=3)
    return create_app(out, [], interaction_steps=3, study=study, **kw)


def _tree(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_foreign_and_unknown_ids_get_the_same_answer_and_change_nothing(tmp_path):
    out = tmp_path / "study"
    app = _study_app(out)
    alice, mallory = _client(app), _client(app)
    r = alice.post("/api/alice/consent", json={"agree": True, "ids": {"PROLIFIC_PID": "p1", "OTHER": "x"}})
    assert r.status_code == 200
    cookie = r.headers["Set-Cookie"]
    assert "njp_alice=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    token = alice.get_cookie("njp_alice").value
    assert len(token) >= 40 and token not in (out / "alice" / guard.PARTICIPANT_FILE).read_text()  # digest only
    assert guard.read_ids(out / "alice")["ids"] == {"PROLIFIC_PID": "p1"}  # only the configured names
    assert alice.post("/api/alice/consent", json={"agree": True}).status_code == 200  # the owner again: fine

    before = _tree(out)
    for method, path, body in [
        ("post", "start", {}),
        ("get", "view", None),
        ("get", "frame.png", None),
        ("post", "step", {"turn": 0, "action": "up"}),
        ("post", "questionnaire", {"answers": {}}),
    ]:
        got = [getattr(mallory, method)(f"/api/{pid}/{path}", json=body) for pid in ("alice", "nobody")]
        assert [g.status_code for g in got] == [DENIED[1]] * 2, path
        assert got[0].get_json() == got[1].get_json() == {"error": DENIED[0]}, path
        assert "Set-Cookie" not in got[0].headers
    # The page itself: the consent page for both, the same apart from the id and the script nonce.
    pages = [mallory.get(f"/p/{pid}").get_data(as_text=True) for pid in ("alice", "nobody")]
    strip = lambda page, pid: re.sub(r'nonce="[^"]*"', "", page.replace(f'"{pid}"', '"ID"'))
    assert strip(pages[0], "alice") == strip(pages[1], "nobody") and "I agree" in pages[0]
    wrong = _client(app)
    wrong.set_cookie("njp_alice", "x" * 43)
    assert wrong.get("/api/alice/view").get_json() == {"error": DENIED[0]}
    assert _tree(out) == before  # nothing changed, nothing created for "nobody"
    r = mallory.post("/api/alice/consent", json={"agree": True})  # consenting for a taken id: the same answer
    assert r.get_json() == {"error": DENIED[0]} and "Set-Cookie" not in r.headers and _tree(out) == before
    assert 'id="frame"' in alice.get("/p/alice").get_data(as_text=True)  # the owner gets the play page


def test_plain_mode_a_started_id_is_the_token_holders(tmp_path):
    out = tmp_path / "plain"
    app = create_app(out, [0], interaction_steps=3)
    guard.issue(out / "bob")  # bob started in another browser
    c = _client(app)
    before = _tree(out)
    assert c.post("/api/bob/start").get_json() == {"error": DENIED[0]}
    assert c.get("/api/bob/view").get_json() == c.get("/api/carol/view").get_json() == {"error": DENIED[0]}
    assert _tree(out) == before and not app.config["sessions"]


def test_body_size_depth_and_host_limits(tmp_path):
    app = _study_app(tmp_path / "s", public_hosts=("study.example.org",))
    c = _client(app)
    r = c.post("/api/alice/consent", data=b"{" * (10 * 1024 * 1024), content_type="application/json")
    assert r.status_code == 413 and r.get_json() == {"error": "request entity too large"}
    deep = "[" * 30_000 + "]" * 30_000  # 60 KB: under the size limit
    r = c.post("/api/alice/consent", data=deep, content_type="application/json")
    assert r.status_code == 400 and "nested more than 8" in r.get_json()["error"]
    r = c.post("/api/alice/consent", data="{not json", content_type="application/json")
    assert r.status_code == 400 and "must be JSON" in r.get_json()["error"]
    assert c.get("/", headers={"Host": "evil.example.com"}).status_code == 400
    assert c.get("/", headers={"Host": "evil.example.com:8000"}).get_json() == {"error": "unknown host"}
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000", "Study.Example.org"):
        assert c.get("/", headers={"Host": host}).status_code == 200, host
    assert not (tmp_path / "s" / "alice").exists()
    assert json_depth_ok(b'{"a": "[[[[[[[[[[[[[[", "b": [[1]]}') and not json_depth_ok(b"[" * 9, 8)
    assert json_depth_ok(b'["\\"[[[[[[[[[[["]', 2)  # brackets in strings (escaped quotes too) do not count
    assert host_allowed("localhost:1", ()) and not host_allowed("localhost.evil.com", ())


def test_headers_on_every_response_and_no_banner(tmp_path):
    app = _study_app(tmp_path / "s")
    c = _client(app)
    for r in (c.get("/"), c.get("/p/alice"), c.get("/api/x/view"), c.get("/nope"), c.post("/api/alice/consent")):
        h = r.headers
        assert h["X-Frame-Options"] == "DENY" and h["X-Content-Type-Options"] == "nosniff"
        assert (
            "frame-ancestors 'none'" in h["Content-Security-Policy"]
            and "unsafe-inline" not in h["Content-Security-Policy"].split("script-src")[1].split(";")[0]
        )
    page = c.get("/p/alice")
    nonce = page.headers["Content-Security-Policy"].split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}">' in page.get_data(as_text=True) and "onclick" not in page.get_data(as_text=True)
    assert '"../api/"' in page.get_data(as_text=True)  # relative URLs only
    srv = local_server("127.0.0.1", 0, app)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.server_port}/", timeout=10) as r:
            assert r.headers["Server"] == "normjax" and "Werkzeug" not in str(r.headers)
    finally:
        srv.shutdown()
    assert wsgi_server("127.0.0.1") == "werkzeug" and wsgi_server("localhost") == "werkzeug"
    try:
        import waitress  # noqa: F401 (only whether the [play] extra's server is installed)
    except ImportError:
        with pytest.raises(ImportError, match="waitress"):
            wsgi_server("0.0.0.0")
    else:
        assert wsgi_server("0.0.0.0") == "waitress"


def test_new_participants_are_rate_limited_and_capped(tmp_path):
    out = tmp_path / "s"
    c = _client(_study_app(out, new_per_minute=3, max_participants=100))
    codes = [c.post(f"/api/p{i}/consent", json={"agree": True}).status_code for i in range(5)]
    assert codes == [200, 200, 200, 429, 429] and not (out / "p3").exists()
    capped = _client(_study_app(out, new_per_minute=100, max_participants=4))  # 3 on disk already
    codes = [capped.post(f"/api/q{i}/consent", json={"agree": True}).status_code for i in range(3)]
    assert codes == [200, 503, 503] and capped.post("/api/q1/consent", json={"agree": True}).get_json() == {
        "error": "this study is full"
    }


def test_one_server_per_folder_and_a_stale_lock(tmp_path):
    out = tmp_path / "s"
    with FolderLock(out):
        with pytest.raises(ValueError, match=r"in use by another normjax play server \(pid \d+ since"):
            FolderLock(out).acquire()
    FolderLock(out).acquire().release()  # released: free again
    code = f"from normjax.play.guard import FolderLock; lk = FolderLock({str(out)!r}).acquire(); print('held', flush=True); import time; time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match=f"pid {proc.pid} since"):
            FolderLock(out).acquire()
        proc.kill()  # kill -9: the kernel drops the lock; the file stays, stale
        proc.wait()
        lock = FolderLock(out).acquire()
        assert f"pid {__import__('os').getpid()}" in (out / guard.LOCK_FILE).read_text()
        lock.release()
    finally:
        proc.kill()
        proc.wait()


def test_changed_settings_are_refused_at_start(tmp_path):
    create_app(tmp_path / "a", [0], interaction_steps=3)
    with pytest.raises(ValueError, match=r"norms: \['forbidden_zone_q'\] -> \['all_exit_left'\]"):
        create_app(tmp_path / "a", [1], interaction_steps=3)
    create_app(tmp_path / "a", [0], interaction_steps=3)  # the same settings: fine
    _study_app(tmp_path / "b")
    with pytest.raises(ValueError, match="pool"):
        Study(tmp_path / "b", [0, 12, 23], 2, seed=0, interaction_steps=3)


def test_mounted_under_a_sub_path(tmp_path):
    c = _client(_study_app(tmp_path / "s", base_path="/study"))
    assert c.get("/").status_code == 404 and c.get("/p/alice").status_code == 404
    r = c.get("/study")
    assert r.status_code == 308 and r.headers["Location"] == "/study/"
    assert 'id="start"' in c.get("/study/").get_data(as_text=True)
    assert "I agree" in c.get("/study/p/alice").get_data(as_text=True)
    r = c.post("/study/api/alice/consent", json={"agree": True})
    assert r.status_code == 200 and "Path=/study/" in r.headers["Set-Cookie"]


class _DoneSession:
    """Stands in for a finished session (no world): what the app asks of a Session."""

    status = "done"

    def __init__(self, pid):
        self.pid, self.last_active, self.events, self.closed = pid, time.monotonic(), [], False

    def view(self):
        return dict(participant=self.pid, status="done", turn=9, table="condition ...")

    def record_event(self, event, **extra):
        self.events.append((event, extra))

    def close(self):
        self.closed = True


def test_questionnaire_then_the_completion_code(tmp_path):
    out = tmp_path / "s"
    app = create_app(
        out, [0], interaction_steps=3, completion_code="C0DE42", completion_url="https://example.org/done?cc=C0DE42"
    )
    c = _client(app)
    token = guard.issue(out / "dana", {"PROLIFIC_PID": "abc"})
    c.set_cookie("njp_dana", token)
    app.config["sessions"]["dana"] = _DoneSession("dana")
    v = c.get("/api/dana/view").get_json()
    assert [q["id"] for q in v["questions"]] == ["evidence_source", "comments"] and "completion_code" not in v
    bad = c.post("/api/dana/questionnaire", json={"answers": {"evidence_source": "the moon"}})
    assert bad.status_code == 400 and "choose one of the options" in bad.get_json()["error"]
    answer = {"evidence_source": v["questions"][0]["options"][0], "comments": "fun"}
    v = c.post("/api/dana/questionnaire", json={"answers": answer}).get_json()
    assert v["completion_code"] == "C0DE42" and v["completion_url"].endswith("cc=C0DE42") and v["questions"] == []
    assert json.loads((out / "dana" / "questionnaire.json").read_text())["answers"] == answer
    assert c.post("/api/dana/questionnaire", json={"answers": answer}).status_code == 409


def test_idle_sessions_are_closed_and_recorded(tmp_path):
    out = tmp_path / "s"
    app = create_app(out, [0], interaction_steps=3, idle_timeout=60)
    s = _DoneSession("erin")
    s.last_active -= 120
    app.config["sessions"]["erin"] = s
    _client(app).get("/")
    assert s.closed and s.events[0][0] == "idle_timeout" and s.events[0][1]["limit_s"] == 60
    assert "erin" not in app.config["sessions"]


def test_unexpected_errors_are_generic(tmp_path, monkeypatch, caplog):
    from normjax.play import session as session_mod

    out = tmp_path / "s"
    app = _study_app(out)
    c = _client(app)
    assert c.post("/api/alice/consent", json={"agree": True}).status_code == 200

    def boom(self):
        raise RuntimeError(f"{NORMS[0].name} at {out}/alice/actions.jsonl")

    monkeypatch.setattr(session_mod.Session, "start", boom)
    with caplog.at_level(logging.ERROR, logger="normjax.play"):
        r = c.post("/api/alice/start", json={})
    assert r.status_code == 500 and r.get_json()["error"].startswith("server error (error id E")
    eid = r.get_json()["error_id"]
    assert eid in caplog.text and NORMS[0].name in caplog.text and "Traceback" in caplog.text  # the server log


def test_admin_view_needs_its_token(tmp_path):
    out = tmp_path / "s"
    study = Study(out, [0, 12, 23, 39], 2, seed=0, interaction_steps=3)
    app = create_app(out, [], interaction_steps=3, study=study, admin_token="T0KEN")
    c = _client(app)
    c.post("/api/alice/consent", json={"agree": True, "ids": {"PROLIFIC_PID": "p9"}})
    admin = app.test_client()
    assert admin.get("/admin/api/participants").status_code == 401
    assert admin.get("/admin/api/participants", headers={"Authorization": "Bearer nope"}).status_code == 401
    auth = {"Authorization": "Bearer T0KEN"}
    rows = admin.get("/admin/api/participants", headers=auth).get_json()
    assert [(r["participant"], r["ids"], r["status"], r["excluded"]) for r in rows] == [
        ("alice", {"PROLIFIC_PID": "p9"}, "not running", False)
    ]
    assert admin.post("/admin/api/alice/exclude").status_code == 401
    assert admin.post("/admin/api/alice/free", headers=auth).get_json()["freed"] is True
    assert study.status("alice") == dict(excluded=True, freed=True)
    assert admin.post("/admin/api/bob/free", headers=auth).status_code == 404
    page = admin.get("/admin").get_data(as_text=True)
    assert "T0KEN" not in page and "Admin token" in page
    assert "/admin" not in create_app(tmp_path / "t", [0]).test_client().get("/admin").get_json()["error"]


def test_placeholders_in_an_id_stay_text(tmp_path):
    c = _client(_study_app(tmp_path / "s"))
    page = c.get("/p/a__CONSENT__").get_data(as_text=True)
    assert 'const PID = "a__CONSENT__"' in page and page.count("What you will do") == 1
    page = c.get("/p/x__NONCE__").get_data(as_text=True)
    assert 'const PID = "x__NONCE__"' in page and '<script nonce="__NONCE__">' not in page


def test_comprehension_check_before_play(tmp_path):
    out = tmp_path / "s"
    questions = [
        dict(id="goal", text="What do you do?", options=["reach my goals", "nothing"], answer="reach my goals"),
        dict(id="norm", text="Is the rule told?", options=["yes", "no"], answer="no"),
    ]
    app = create_app(out, [0], interaction_steps=3, comprehension=questions)
    c = _client(app)
    r = c.post("/api/fay/start", json={})
    assert r.status_code == 409 and "njp_fay=" in r.headers["Set-Cookie"]  # the id is this browser's
    assert r.get_json()["comprehension"] == [{k: q[k] for k in ("id", "text", "options")} for q in questions]
    assert '"answer"' not in json.dumps(r.get_json()) and not app.config["sessions"]  # no answers, no world yet
    got = c.post("/api/fay/comprehension", json={"answers": {"goal": "reach my goals", "norm": "yes"}}).get_json()
    assert got == dict(passed=False, wrong=["norm"], attempts=1)
    assert _client(app).post("/api/fay/comprehension", json={"answers": {}}).get_json() == {"error": DENIED[0]}
    got = c.post("/api/fay/comprehension", json={"answers": {"goal": "reach my goals", "norm": "no"}}).get_json()
    assert got == dict(passed=True, wrong=[], attempts=2)
    rec = json.loads((out / "fay" / "comprehension.json").read_text())
    assert rec["passed"] and [a["wrong"] for a in rec["attempts"]] == [["norm"], []]
    app.config["sessions"]["fay"] = _DoneSession("fay")  # past the check: start goes to the session
    assert c.post("/api/fay/start", json={}).get_json()["status"] == "done"
    plain = _client(create_app(tmp_path / "t", [0]))
    assert plain.post("/api/x/comprehension", json={"answers": {}}).status_code == 404
