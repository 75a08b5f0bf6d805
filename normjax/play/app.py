"""The `normjax play` web app (Flask): pages and a small JSON API over `Session`s.

    GET  /                           the start page (with ?PROLIFIC_PID=...: straight to that id's page)
    GET  /p/<pid>                    the play page, or in study mode the consent page until agreed
    POST /api/<pid>/consent          study mode: {"agree": true, "ids": {...}} -> the record; issues the token
    POST /api/<pid>/start            start or resume the session -> view (outside study mode: issues the token)
    GET  /api/<pid>/view             the waiting turn (prompt text, belief) or the finish page's data
    GET  /api/<pid>/frame.png        the waiting turn's frame
    POST /api/<pid>/step             {"turn": n, "action": "up|down|left|right|wait", "belief", "confidence"}
    POST /api/<pid>/questionnaire    {"answers": {...}} after the last episode (normjax.play.questionnaire)
    /admin...                        the researcher's view (normjax.play.admin; its token is printed at start)

Identity.  A participant's folder is created once, by the request that issues their
token (an HttpOnly, SameSite=Strict cookie, `normjax.play.guard`); every other request
for that id must carry it.  An unknown id and someone else's id without the token get
the same answer (`DENIED`) and change nothing; in study mode the play page itself is
the consent page unless the request holds the id's token, so the page tells nothing either.

Errors shown to a participant are short and generic; anything unexpected is a 500 with
an error id whose details (the traceback) go to the server log only.  Every response
carries the headers of `normjax.play.guard.security_headers`; bodies over 64 KiB get 413,
JSON nested deeper than 8 levels 400; a Host that is neither loopback nor a
--public-host 400.  `base_path` mounts the app under a sub-path (a reverse proxy that
does not strip it); the pages use relative URLs only.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from pathlib import Path

from normjax.norms import NORMS
from normjax.play import guard
from normjax.play.consent import render
from normjax.play.guard import Refused
from normjax.play.session import TIMING, BadRequest, Session

PID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
PAGE = Path(__file__).with_name("page.html")
CONSENT_PAGE = Path(__file__).with_name("consent.html")
RUN_FILE = "play.json"  # the run identity of --out: a restart with other settings is refused
# Files that differ between two runs of the same actions (clocks, tokens, the server's pid); the
# recorded trajectories (actions.jsonl, transcripts, results) do not.
VOLATILE_FILES = ("participant.json", "timing.jsonl", "play.lock")
DENIED = ("no session for this id in this browser: open your study link again", 404)
log = logging.getLogger("normjax.play")


def _flask():
    try:
        import flask
    except ImportError as e:  # optional dependency
        raise ImportError("normjax play needs Flask: pip install 'normjax[play]'") from e
    return flask


def check_identity(out: Path, identity: dict) -> None:
    """Write ``OUT/play.json`` on the first start; later ones must match it (ValueError naming the changes)."""
    path = out / RUN_FILE
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        diff = [k for k in sorted(set(old) | set(identity)) if old.get(k) != identity.get(k)]
        if diff:
            raise ValueError(
                f"{out} was started with other settings ("
                + "; ".join(f"{k}: {old.get(k)!r} -> {identity.get(k)!r}" for k in diff)
                + "); restart it with its own settings or use a new --out (participants' norms must not change)"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    from normjax.play.study import write_json

    write_json(path, identity)


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with each ``__KEY__`` replaced in ONE pass (a value holding a placeholder stays text)."""
    return re.sub(r"__([A-Z]+)__", lambda m: values.get(m.group(1), m.group(0)), template)


def create_app(
    out_dir,
    norm_ids: list[int],
    *,
    seed: int = 0,
    interaction_steps: int = 200,
    capacity: int = 10,
    cell_px: int = 32,
    study=None,
    public_hosts: tuple[str, ...] = (),
    base_path: str = "",
    id_params: tuple[str, ...] = guard.ID_PARAMS,
    completion_code: str | None = None,
    completion_url: str | None = None,
    questions: list[dict] | None = None,
    idle_timeout: float = 1800.0,
    phase_limit: float | None = None,
    comprehension: list[dict] | None = None,
    new_per_minute: int = 30,
    max_participants: int = 1000,
    admin_token: str | None = None,
):
    """The Flask app; sessions live in ``out_dir/<participant>``.  With `study` (a
    `normjax.play.study.Study` on the same directory) each participant plays their
    assigned norms after agreeing to the consent page; `norm_ids` is then unused."""
    from normjax.play import comprehension as check
    from normjax.play import questionnaire
    from normjax.play.admin import add_admin

    flask = _flask()
    app = flask.Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = guard.MAX_BODY
    out = Path(out_dir)
    identity = dict(
        format="normjax.play-run/1",
        mode="study" if study is not None else "fixed",
        norms=[NORMS[n].name for n in (study.pool if study is not None else norm_ids)],
        seed=seed,
        interaction_steps=interaction_steps,
        capacity=capacity,
        phase_limit=phase_limit,
    )
    if study is not None:
        identity.update(assign=study.assign, study_seed=study.study_seed, balance=study.balance)
    check_identity(out, identity)
    questions = questionnaire.DEFAULT if questions is None else questions
    sessions: dict[str, Session] = {}
    lock = threading.Lock()
    existing = sum(1 for p in out.glob(f"*/{guard.PARTICIPANT_FILE}"))
    limit = guard.CreationLimit(new_per_minute, max_participants, existing)
    cookie_path = base_path.rstrip("/") + "/" if base_path else "/"

    def check_pid(pid: str) -> None:
        if not PID.fullmatch(pid):
            raise Refused("a participant id is 1-64 letters, digits, '_' or '-' (starting with a letter or digit)")

    def owns(pid: str) -> bool:
        token = flask.g.get("new_token") or flask.request.cookies.get(guard.cookie_name(pid))
        return guard.holds(out / pid, token)

    def new_participant(pid: str) -> None:
        """Create the participant's folder and token (the response sets the cookie)."""
        body = flask.g.body if isinstance(flask.g.get("body"), dict) else {}
        ids = guard.clean_ids(body.get("ids"), id_params)
        limit.take()
        flask.g.new_token = guard.issue(out / pid, ids)

    def claim(pid: str) -> None:
        """The request's right to `pid`: its token, or a new participant (creates the folder)."""
        check_pid(pid)
        with lock:
            if owns(pid):
                return
            if (out / pid).exists():
                raise Refused(*DENIED)
            new_participant(pid)

    def session(pid: str, create: bool = False) -> Session:
        check_pid(pid)
        if not owns(pid):
            raise Refused(*DENIED)
        if study is not None and not study.consented(pid):
            raise Refused(*DENIED)
        with lock:
            s = sessions.get(pid)
            if s is None and (create or (out / pid / "run.json").is_file()):  # started before: resume
                norms = norm_ids if study is None else study.norms(pid)
                s = Session(out, pid, norms, seed, capacity, interaction_steps, cell_px, phase_limit)
                s.start()  # a folder holding other settings raises: a 500 with an error id
                sessions[pid] = s
        if s is None:
            raise Refused("the session has not started yet", 404)
        s.last_active = time.monotonic()
        return s

    def sweep() -> None:
        """Close sessions idle longer than `idle_timeout` (logged; a later request resumes them)."""
        now = time.monotonic()
        with lock:
            idle = [p for p, s in sessions.items() if now - s.last_active > idle_timeout]
            for p in idle:
                s = sessions.pop(p)
                s.record_event("idle_timeout", idle_s=round(now - s.last_active, 1), limit_s=idle_timeout)
                s.close()

    def body():
        return flask.g.body

    @app.before_request
    def before():
        flask.g.nonce = secrets.token_urlsafe(16)
        if not guard.host_allowed(flask.request.host, public_hosts):
            raise Refused("unknown host", 400)
        sweep()
        flask.g.body = None
        if flask.request.method == "POST":
            raw = flask.request.get_data(cache=False)  # 413 above MAX_CONTENT_LENGTH, before reading
            flask.g.body = guard.parse_body(raw) if raw else None

    @app.after_request
    def after(resp):
        guard.security_headers(resp.headers, flask.g.get("nonce", "none"))
        token = flask.g.get("new_token")
        pid = flask.request.view_args.get("pid") if flask.request.view_args else None
        if token and pid:  # even on an error after the folder was made: the id is this browser's
            resp.set_cookie(
                guard.cookie_name(pid),
                token,
                httponly=True,
                samesite="Strict",
                secure=flask.request.is_secure or bool(public_hosts),
                path=cookie_path,
                max_age=30 * 24 * 3600,
            )
        return resp

    @app.errorhandler(Refused)
    @app.errorhandler(BadRequest)
    def refused(e):
        return flask.jsonify(error=str(e)), e.status

    @app.errorhandler(Exception)
    def failed(e):
        from werkzeug.exceptions import HTTPException

        if isinstance(e, HTTPException):  # 404, 405, 413: their name only
            return flask.jsonify(error=e.name.lower()), e.code
        eid = guard.error_id()
        log.error("error id %s on %s %s", eid, flask.request.method, flask.request.path, exc_info=e)
        return flask.jsonify(error=f"server error (error id {eid})", error_id=eid), 500

    def page(template: Path, pid: str, **values) -> flask.Response:
        text = fill(
            template.read_text(encoding="utf-8"),
            dict(PID=pid, NONCE=flask.g.nonce, IDPARAM=id_params[0] if id_params else "", **values),
        )
        return flask.Response(text, mimetype="text/html")

    @app.get("/")
    def index():
        return page(PAGE, "")

    @app.get("/p/<pid>")
    def play(pid):
        check_pid(pid)  # so the id is safe to put into the page
        if study is not None and not (owns(pid) and study.consented(pid)):
            return page(CONSENT_PAGE, pid, CONSENT=render(study.text))
        return page(PAGE, pid)

    @app.post("/api/<pid>/consent")
    def consent(pid):
        check_pid(pid)
        if study is None:
            raise Refused("this server runs no study", 404)
        b = body()
        if not isinstance(b, dict) or b.get("agree") is not True:
            raise Refused('the body must be the JSON object {"agree": true}')
        claim(pid)
        rec = study.agree(pid)
        return flask.jsonify(participant=pid, agreed_at=rec["agreed_at"])

    @app.post("/api/<pid>/start")
    def start(pid):
        if study is None:
            claim(pid)
        if not check.passed(out / pid, comprehension) and owns(pid):  # the check comes before the world
            return flask.jsonify(
                error="please answer the questions first", comprehension=check.public(comprehension)
            ), 409
        return flask.jsonify(finish(pid, session(pid, create=True).view()))

    @app.post("/api/<pid>/comprehension")
    def comprehension_answers(pid):
        check_pid(pid)
        if not comprehension:
            raise Refused("this study has no comprehension check", 404)
        if not owns(pid) or (study is not None and not study.consented(pid)):
            raise Refused(*DENIED)
        b = body()
        return flask.jsonify(check.attempt(out / pid, comprehension, b.get("answers") if isinstance(b, dict) else None))

    @app.get("/api/<pid>/view")
    def view(pid):
        return flask.jsonify(finish(pid, session(pid).view()))

    @app.get("/api/<pid>/frame.png")
    def frame(pid):
        return flask.Response(session(pid).frame_png(), mimetype="image/png")

    @app.post("/api/<pid>/step")
    def step(pid):
        s = session(pid)
        if body() is None:
            raise Refused("the body must be JSON (Content-Type: application/json)")
        s.submit(body())
        return flask.jsonify(finish(pid, s.view()))

    @app.post("/api/<pid>/questionnaire")
    def answer(pid):
        s = session(pid)
        if s.status != "done":
            raise Refused("the questionnaire comes after the last episode", 409)
        b = body()
        questionnaire.save(out / pid, questions, b.get("answers") if isinstance(b, dict) else None)
        return flask.jsonify(finish(pid, s.view()))

    def finish(pid: str, v: dict) -> dict:
        """The finish page's data: the questions until answered, then the completion code."""
        if v.get("status") != "done":
            return v
        answered = questionnaire.answered(out / pid)
        v = dict(v, questions=[] if answered else questions)
        if answered or not questions:
            v.update(completion_code=completion_code, completion_url=completion_url)
        return v

    add_admin(app, out, sessions, study, admin_token)
    app.config.update(sessions=sessions, study=study, identity=identity, timing_file=TIMING)
    if base_path:
        app.wsgi_app = _mount(app.wsgi_app, base_path.rstrip("/"))
    return app


def _mount(wsgi_app, prefix: str):
    """Serve `wsgi_app` under `prefix` only (SCRIPT_NAME set, PATH_INFO stripped); the bare prefix redirects."""

    def mounted(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == prefix:
            start_response("308 Permanent Redirect", [("Location", prefix + "/"), ("Content-Length", "0")])
            return [b""]
        if not path.startswith(prefix + "/"):
            body = b'{"error":"not found"}'
            start_response("404 Not Found", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        environ = dict(environ, SCRIPT_NAME=environ.get("SCRIPT_NAME", "") + prefix, PATH_INFO=path[len(prefix) :])
        return wsgi_app(environ, start_response)

    return mounted


__all__ = ["DENIED", "PID", "RUN_FILE", "VOLATILE_FILES", "check_identity", "create_app", "fill"]
