"""Drive a real `normjax play` server over HTTP with a scripted participant (no browser).

Used by tests/test_warm_llm_play.py and benchmarks/warm_commands.py:

    with PlayServer(["--norms", "forbidden_zone_q", "--interaction-steps", "10",
                     "--out", out, "--cache-dir", cache]) as srv:
        final = play(srv.url, "bench")

`PlayServer` starts ``python -m normjax.cli play ARGS --port P`` on a free
local port (its stdout and stderr go to files beside --out's parent, so a long
session never blocks on a full pipe) and waits until the start page answers.
`play` starts participant `pid`, and at every turn fetches the frame (as the
page does) and answers the first move of a shortest path to the newcomer's
target, read from the turn's prompt text exactly as the fake model of
normjax/testing/fake_openai.py reads an LLM's prompt (`navigate`); in the interaction
phase it also sends a belief.  It returns the final view (the results table),
the number of turns and a digest of every frame it was shown.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from normjax.testing.fake_openai import navigate

ROOT = Path(__file__).resolve().parents[2]
BELIEF = dict(belief="Agents avoid the marked zone Q.", confidence=0.4)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_OPENER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # the participants' tokens


def _request(url: str, body: dict | None = None, timeout: float = 300.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method="GET" if body is None else "POST", headers={"Content-Type": "application/json"}
    )
    with _OPENER.open(req, timeout=timeout) as r:
        raw = r.read()
        return json.loads(raw) if r.headers.get_content_type() == "application/json" else raw


class PlayServer:
    """``normjax play ARGS`` in a subprocess on a free port; `url`, `stdout()` (its output so far)."""

    def __init__(
        self,
        args: list,
        log_dir,
        python: str = sys.executable,
        env: dict | None = None,
        start_timeout: float = 300.0,
        cwd=ROOT,
    ):
        self.args, self.python, self.env, self.start_timeout = [str(a) for a in args], python, env, start_timeout
        self.cwd = cwd  # `python -m` imports normjax from here first
        self.log_dir = Path(log_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> PlayServer:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.out_path, self.err_path = self.log_dir / f"play_{self.port}.out", self.log_dir / f"play_{self.port}.err"
        self._out, self._err = self.out_path.open("w"), self.err_path.open("w")
        env = dict(os.environ if self.env is None else self.env, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [self.python, "-m", "normjax.cli", "play", *self.args, "--port", str(self.port)],
            cwd=self.cwd,
            env=env,
            stdout=self._out,
            stderr=self._err,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                err = self.err_path.read_text()[-3000:]
                raise RuntimeError(f"normjax play exited ({self.proc.returncode}):\n{err}")
            try:
                _request(self.url + "/", timeout=5)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise TimeoutError(f"normjax play did not answer on {self.url}") from None
                time.sleep(0.05)

    def stdout(self) -> str:
        return self.out_path.read_text()

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()


def action_word(view: dict) -> str:
    """The scripted participant's key: a shortest-path move ("up", ...) or "wait"."""
    return navigate(view["system"], view["prompt"]).removeprefix("move ")


def play(url: str, pid: str, max_turns: int = 5000) -> tuple[dict, int, str]:
    """Play participant `pid`'s whole session -> (final view, turns played, sha256 of the frames)."""
    api = f"{url}/api/{pid}"
    view = _request(f"{api}/start", {})
    turns, frames = 0, hashlib.sha256()
    while view["status"] in ("starting", "playing"):
        if view["status"] == "starting":  # a view waits 30 s for the first turn; a cold start compiles
            view = _request(f"{api}/view")
            continue
        if turns >= max_turns:
            raise RuntimeError(f"session not done after {max_turns} turns")
        png = _request(f"{api}/frame.png")
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        frames.update(png)
        body = dict(turn=view["turn"], action=action_word(view))
        if view["phase"] == "interaction":
            body.update(BELIEF)
        view = _request(f"{api}/step", body)
        turns += 1
    if view["status"] != "done":
        raise RuntimeError(f"session ended with {view}")
    return view, turns, frames.hexdigest()


__all__ = ["PlayServer", "action_word", "free_port", "play"]
