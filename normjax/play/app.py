"""The `normjax play` web app (Flask): pages and a small JSON API over `Session`s.

    GET  /                      the start page: the participant enters their id
    GET  /p/<pid>               the play page (normjax/play/page.html)
    POST /api/<pid>/start       start or resume the participant's session -> view
    GET  /api/<pid>/view        the waiting turn (prompt text, belief) or the results
    GET  /api/<pid>/frame.png   the waiting turn's frame
    POST /api/<pid>/step        {"turn": n, "action": "up|down|left|right|wait",
                                 "belief": str, "confidence": 0..1} -> the next view
    POST /api/<pid>/consent     study mode: {"agree": true} records the consent -> the record

Study mode (a `normjax.play.study.Study`, ``--assign N``): /p/<pid> shows the
consent page (the researcher's text, escaped: normjax.play.consent) until the
participant agrees; before that every other /api/<pid>/ request is refused
with 403, and afterwards the participant plays their assigned norms.

Participant ids are 1-64 characters of letters, digits, '_' and '-' (so a
session's folder is always directly under --out); nothing else is served
and nothing is written outside --out.  Refusals are JSON ``{"error": ...}``
with 400 (malformed), 403 (no consent yet), 404 (unknown participant) or 409 (out of order: the
turn number must be the waiting one, so a repeated or stale key press
changes nothing).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from normjax.play.consent import render
from normjax.play.session import BadRequest, Session

PID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
PAGE = Path(__file__).with_name("page.html")
CONSENT_PAGE = Path(__file__).with_name("consent.html")


def _flask():
    try:
        import flask
    except ImportError as e:  # optional dependency
        raise ImportError("normjax play needs Flask: pip install 'normjax[play]'") from e
    return flask


def create_app(
    out_dir,
    norm_ids: list[int],
    *,
    seed: int = 0,
    interaction_steps: int = 200,
    capacity: int = 10,
    cell_px: int = 32,
    study=None,
):
    """The Flask app; sessions live in ``out_dir/<participant>``.  With `study` (a
    `normjax.play.study.Study` on the same directory) each participant plays their
    assigned norms after agreeing to the consent page; `norm_ids` is then unused."""
    flask = _flask()
    app = flask.Flask(__name__, static_folder=None)
    out = Path(out_dir)
    sessions: dict[str, Session] = {}
    lock = threading.Lock()

    def fail(message: str, status: int):
        return flask.jsonify(error=message), status

    def check_pid(pid: str) -> None:
        if not PID.fullmatch(pid):
            raise BadRequest(
                f"participant id {pid!r}: use 1-64 letters, digits, '_' or '-' (starting with a letter or digit)"
            )

    def session(pid: str, create: bool = False) -> Session:
        check_pid(pid)
        if study is not None and not study.consented(pid):
            raise BadRequest(f"participant {pid!r} has not agreed to the consent page yet (open /p/{pid})", 403)
        with lock:
            s = sessions.get(pid)
            if s is None and create:
                norms = norm_ids if study is None else study.norms(pid)
                s = Session(out, pid, norms, seed, capacity, interaction_steps, cell_px)
                try:
                    s.start()
                except ValueError as e:  # the folder holds this participant's run with other settings
                    raise BadRequest(str(e), 409) from None
                sessions[pid] = s
        if s is None:
            raise BadRequest(f"unknown participant {pid!r}: start the session first (POST /api/{pid}/start)", 404)
        return s

    @app.errorhandler(BadRequest)
    def bad_request(e: BadRequest):
        return fail(str(e), e.status)

    @app.errorhandler(404)
    def not_found(e):
        return fail(f"no such page: {flask.request.path}", 404)

    @app.errorhandler(405)
    def not_allowed(e):
        return fail(f"{flask.request.method} is not allowed on {flask.request.path}", 405)

    @app.get("/")
    def index():
        return flask.Response(PAGE.read_text(encoding="utf-8").replace("__PID__", ""), mimetype="text/html")

    @app.get("/p/<pid>")
    def play(pid):
        check_pid(pid)  # so the id is safe to put into the page
        if study is not None and not study.consented(pid):  # the id first: the text may hold anything
            page = CONSENT_PAGE.read_text(encoding="utf-8").replace("__PID__", pid)
            page = page.replace("__CONSENT__", render(study.text))
        else:
            page = PAGE.read_text(encoding="utf-8").replace("__PID__", pid)
        return flask.Response(page, mimetype="text/html")

    @app.post("/api/<pid>/consent")
    def consent(pid):
        check_pid(pid)
        if study is None:
            raise BadRequest("this server runs no study (start it with --assign N for consent and assignments)", 404)
        body = flask.request.get_json(silent=True)
        if not isinstance(body, dict) or body.get("agree") is not True:
            raise BadRequest('the body must be the JSON object {"agree": true}')
        return flask.jsonify(study.agree(pid))

    @app.post("/api/<pid>/start")
    def start(pid):
        return flask.jsonify(session(pid, create=True).view())

    @app.get("/api/<pid>/view")
    def view(pid):
        return flask.jsonify(session(pid).view())

    @app.get("/api/<pid>/frame.png")
    def frame(pid):
        resp = flask.Response(session(pid).frame_png(), mimetype="image/png")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.post("/api/<pid>/step")
    def step(pid):
        s = session(pid)
        body = flask.request.get_json(silent=True)
        if body is None:
            raise BadRequest("the body must be JSON (Content-Type: application/json)")
        s.submit(body)
        return flask.jsonify(s.view())

    app.config["sessions"], app.config["study"] = sessions, study
    return app


def serve(out_dir, norm_ids: list[int], host: str = "127.0.0.1", port: int = 8000, **kwargs) -> None:
    """Run the app (threaded: each participant's requests and world run beside the others')."""
    app = create_app(out_dir, norm_ids, **kwargs)
    print(f"normjax play: http://{host}:{port}/  (results under {Path(out_dir).resolve()})", flush=True)
    app.run(host=host, port=port, threaded=True)


__all__ = ["PID", "create_app", "serve"]
