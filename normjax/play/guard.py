"""What makes `normjax play` safe on the open internet: tokens, request limits, headers, one writer.

* Participant tokens: 32 random bytes (`secrets.token_urlsafe`), issued once when a
  participant's folder is created (consent in study mode, start otherwise) and sent as an
  HttpOnly, SameSite=Strict cookie named ``njp_<id>`` (one per participant, so one browser
  can hold several).  Only the token's SHA-256 is stored (``OUT/<id>/participant.json``),
  so the folder alone does not let anyone in.  Compared in constant time.
* Request bodies: at most `MAX_BODY` bytes (larger: 413 before anything is parsed), JSON
  nested at most `MAX_DEPTH` deep (checked on the raw bytes before `json.loads`).
* New participants: at most `rate` per minute and `total` in all (a sliding window).
* Hosts: the Host header's name must be loopback or one given with --public-host (a
  DNS-rebinding page cannot reach a loopback server under its own name).
* Headers on every response: CSP with a per-response script nonce, X-Frame-Options DENY,
  nosniff, no-referrer; the server banner is the plain word ``normjax`` (`BANNER`).
* `FolderLock`: one server per --out (an exclusive `flock` on ``OUT/play.lock``; the
  kernel drops it when the process dies, so a lock left by ``kill -9`` is stale and taken
  over, and the pid in the file names the holder in the refusal).
"""

from __future__ import annotations

import collections
import datetime
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from pathlib import Path

MAX_BODY = 64 * 1024  # bytes: the largest step body is a 2,000-character belief
MAX_DEPTH = 8
PARTICIPANT_FILE = "participant.json"
LOCK_FILE = "play.lock"
BANNER = "normjax"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_ID_PARAM = 128  # characters of a crowdsourcing id (Prolific's are 24)
ID_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


class Refused(ValueError):
    """A request the app refuses; `status` is the HTTP code and the message is safe to show."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def cookie_name(pid: str) -> str:
    return f"njp_{pid}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(folder: Path, ids: dict | None = None) -> str:
    """A new token for the participant whose folder is `folder` (created); its digest and `ids` stored."""
    token = secrets.token_urlsafe(32)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    rec = dict(participant=folder.name, created=now, token_sha256=_digest(token), ids=dict(ids or {}))
    tmp = folder / (PARTICIPANT_FILE + ".tmp")
    tmp.write_text(json.dumps(rec, indent=1), encoding="utf-8")
    os.replace(tmp, folder / PARTICIPANT_FILE)
    return token


def holds(folder: Path, token: str | None) -> bool:
    """Whether `token` is the participant's (constant-time comparison of the digests)."""
    path = folder / PARTICIPANT_FILE
    if not token or not path.is_file():
        return False
    want = json.loads(path.read_text(encoding="utf-8")).get("token_sha256", "")
    return hmac.compare_digest(_digest(token), want)


def read_ids(folder: Path) -> dict:
    """The crowdsourcing ids stored with the participant (no token digest)."""
    path = folder / PARTICIPANT_FILE
    if not path.is_file():
        return {}
    rec = json.loads(path.read_text(encoding="utf-8"))
    return dict(created=rec.get("created"), ids=rec.get("ids", {}))


def clean_ids(raw, names: tuple[str, ...]) -> dict:
    """The id parameters of a request body: only `names`, strings of 1..128 printable characters."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise Refused("'ids' must be an object of strings")
    out = {}
    for k, v in raw.items():
        if k not in names:
            continue  # other URL parameters are not ours to store
        if not isinstance(v, str) or not 1 <= len(v) <= MAX_ID_PARAM or not v.isprintable():
            raise Refused(f"id parameter {k} must be 1..{MAX_ID_PARAM} printable characters")
        out[k] = v
    return out


def json_depth_ok(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether no array or object in the JSON text `raw` is nested deeper than `limit`."""
    depth, in_string, escaped = 0, False, False
    for b in raw:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif b in (0x5D, 0x7D):
            depth -= 1
    return True


def parse_body(raw: bytes):
    """The JSON value of a request body; Refused (400) for non-JSON or too deep nesting."""
    if not json_depth_ok(raw):
        raise Refused(f"the body is nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused("the body must be JSON (Content-Type: application/json)") from None


def host_allowed(host_header: str, public: tuple[str, ...]) -> bool:
    """Whether the Host header names loopback or a --public-host (port ignored, case-insensitive)."""
    h = host_header.strip().lower()
    if h.startswith("["):  # [::1]:8000
        name = h[1 : h.find("]")] if "]" in h else h
    else:
        name = h.rsplit(":", 1)[0] if h.count(":") == 1 else h
    return name in LOOPBACK or name in {p.lower() for p in public}


class CreationLimit:
    """At most `rate` new participants per minute and `total` in all (`total` counts those on disk too)."""

    def __init__(self, rate: int, total: int, existing: int = 0):
        self.rate, self.total, self.count = rate, total, existing
        self.times: collections.deque[float] = collections.deque()
        self.lock = threading.Lock()

    def take(self) -> None:
        with self.lock:
            now = time.monotonic()
            while self.times and now - self.times[0] > 60:
                self.times.popleft()
            if self.count >= self.total:
                raise Refused("this study is full", 503)
            if len(self.times) >= self.rate:
                raise Refused("too many new sessions right now; try again in a minute", 429)
            self.times.append(now)
            self.count += 1


def security_headers(headers, nonce: str) -> None:
    headers["Content-Security-Policy"] = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    headers["X-Frame-Options"] = "DENY"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "no-referrer"
    headers["Cache-Control"] = headers.get("Cache-Control", "no-store")


def error_id() -> str:
    return "E" + secrets.token_hex(4)


class FolderLock:
    """An exclusive lock on ``OUT/play.lock`` for the life of the server (module docstring)."""

    def __init__(self, out_dir):
        self.path = Path(out_dir) / LOCK_FILE
        self.file = None

    def acquire(self) -> FolderLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise ValueError(
                f"{self.path.parent} is in use by another normjax play server ({holder}); "
                "stop it first or use another --out (one server per folder, so no step is logged twice)"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} since {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}\n")
        f.flush()
        self.file = f
        return self

    def release(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file.fileno(), fcntl.LOCK_UN)
            self.file.close()
            self.file = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


__all__ = [
    "BANNER",
    "CreationLimit",
    "FolderLock",
    "ID_PARAMS",
    "LOCK_FILE",
    "MAX_BODY",
    "MAX_DEPTH",
    "PARTICIPANT_FILE",
    "Refused",
    "clean_ids",
    "cookie_name",
    "error_id",
    "holds",
    "host_allowed",
    "issue",
    "json_depth_ok",
    "parse_body",
    "read_ids",
    "security_headers",
]
