"""The researcher's view of a running `normjax play` server: progress per participant, exclude or free a slot.

The token is made at start and printed on the server's console only
(`normjax.play.server`); every admin request carries it as ``Authorization: Bearer
TOKEN`` (the page at ``/admin`` asks for it once and keeps it in the tab's
sessionStorage).  Without a token given to `create_app` there are no admin routes.

    GET  /admin                          a small page: the table below, with buttons
    GET  /admin/api/participants         [{participant, ids, created, norms, steps_logged, status, excluded, freed}]
    POST /admin/api/<pid>/exclude        not counted by play-export (listed as excluded)
    POST /admin/api/<pid>/free           excluded, and (study mode) their norms go to the next participant
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path

from normjax.play import guard
from normjax.play.guard import Refused
from normjax.play.session import LOG, read_log
from normjax.play.study import ASSIGNMENT_FILE, STATUS_FILE, write_json

ADMIN_PAGE = Path(__file__).with_name("admin.html")


def progress(out: Path, sessions: dict, study) -> list[dict]:
    """One row per participant folder (one with a participant.json)."""
    rows = []
    for p in sorted(out.glob(f"*/{guard.PARTICIPANT_FILE}")):
        d = p.parent
        meta = guard.read_ids(d)
        marks = json.loads((d / STATUS_FILE).read_text()) if (d / STATUS_FILE).is_file() else {}
        assignment = json.loads((d / ASSIGNMENT_FILE).read_text()) if (d / ASSIGNMENT_FILE).is_file() else {}
        live = sessions.get(d.name)
        status = "done" if (d / "results.json").is_file() else (live.status if live else "not running")
        rows.append(
            dict(
                participant=d.name,
                created=meta.get("created"),
                ids=meta.get("ids", {}),
                norms=assignment.get("norms"),
                steps_logged=len(read_log(d / LOG)),
                status=status,
                excluded=bool(marks.get("excluded")),
                freed=bool(marks.get("freed")),
            )
        )
    return rows


def add_admin(app, out: Path, sessions: dict, study, token: str | None) -> None:
    if not token:
        return
    import flask

    def check() -> None:
        got = flask.request.headers.get("Authorization", "")
        if not hmac.compare_digest(got.encode(), f"Bearer {token}".encode()):
            raise Refused("admin token missing or wrong", 401)

    def pid_dir(pid: str) -> Path:
        from normjax.play.app import PID

        if not PID.fullmatch(pid) or not (out / pid / guard.PARTICIPANT_FILE).is_file():
            raise Refused("no such participant", 404)
        return out / pid

    @app.get("/admin")
    def admin_page():
        text = ADMIN_PAGE.read_text(encoding="utf-8").replace("__NONCE__", flask.g.nonce)
        return flask.Response(text, mimetype="text/html")

    @app.get("/admin/api/participants")
    def admin_participants():
        check()
        return flask.jsonify(progress(out, sessions, study))

    @app.post("/admin/api/<pid>/<mark>")
    def admin_mark(pid, mark):
        check()
        if mark not in ("exclude", "free"):
            raise Refused("use exclude or free", 404)
        d = pid_dir(pid)
        if study is not None and (d / ASSIGNMENT_FILE).is_file():
            rec = study.set_status(pid, excluded=True, freed=mark == "free")
        else:
            rec = dict(excluded=True, freed=mark == "free")
            write_json(d / STATUS_FILE, rec)
        return flask.jsonify(dict(rec, participant=pid))


__all__ = ["add_admin", "progress"]
