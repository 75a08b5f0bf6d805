"""A fake OpenAI-compatible chat server for the LLM tests (127.0.0.1 only).

`FakeOpenAI(script)` serves ``POST /v1/chat/completions`` from a
standard-library `ThreadingHTTPServer` in a daemon thread on a free port, and
``GET /v1/models`` listing `models` (answered with `models_status`).
`script(payload, attempt) -> Reply` decides each answer; ``attempt`` counts
earlier requests with the same prompt (the last message's text), so a
script can fail a prompt once and answer its retry, deterministically even
with many requests in flight.

`navigator_text(payload)` is a scripted "model": it reads the map, its
position and its target from the paper's prompts and answers the next move
of a shortest path (norm-blind), in the requested JSON shape.  `chaos` wraps
it with errors chosen by a hash of the prompt (`category`); `with_faults`
injects the fault mix of a benchmark (malformed replies, HTTP 500, 429 with
Retry-After, replies past the client's timeout) per attempt, and
`with_latency` a model's reply time (benchmarks/llm_faults.py).

    python normjax/testing/fake_openai.py --port 8765      # serve it (docs/llm.md's example)
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclasses.dataclass
class Reply:
    content: str | None = None  # the assistant message
    status: int = 200
    body: bytes | None = None  # raw body instead of a completion
    delay: float = 0.0
    headers: dict = dataclasses.field(default_factory=dict)


def prompt_text(payload: dict) -> str:
    content = payload["messages"][-1]["content"]
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: hundreds of requests arrive at once


class FakeOpenAI:
    def __init__(self, script, port: int = 0, models=("fake",), models_status: int = 200):
        self.script = script
        self.models, self.models_status = list(models), models_status
        self.lock = threading.Lock()
        self.log = []  # (prompt, attempt, status, usage or None)
        self.attempts = collections.Counter()
        self.inflight = 0
        self.max_inflight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                ok = self.path.rstrip("/").endswith("/models") and server.models_status == 200
                body = json.dumps(
                    {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
                    if ok
                    else {"error": {"message": f"scripted {server.models_status}"}}
                ).encode()
                self.send_response(200 if ok else server.models_status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(n))
                text = prompt_text(payload)
                with server.lock:
                    attempt = server.attempts[text]
                    server.attempts[text] += 1
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    reply = server.script(payload, attempt)
                    entry = dict(
                        prompt=text,
                        attempt=attempt,
                        status=reply.status,
                        usage=None,
                        delay=reply.delay,
                        auth=self.headers.get("Authorization"),
                        payload=payload,
                        at=time.monotonic(),
                    )
                    with server.lock:  # logged on arrival: a client may give up on a slow reply
                        server.log.append(entry)
                    if reply.delay:
                        time.sleep(reply.delay)
                    usage = None
                    if reply.body is not None:
                        body = reply.body
                    elif reply.status == 200:
                        usage = {
                            "prompt_tokens": len(text) // 4 + 1,
                            "completion_tokens": len(reply.content or "") // 4 + 1,
                        }
                        body = json.dumps(
                            {
                                "id": "x",
                                "object": "chat.completion",
                                "choices": [
                                    {
                                        "index": 0,
                                        "message": {"role": "assistant", "content": reply.content},
                                        "finish_reason": "stop",
                                    }
                                ],
                                "usage": usage,
                            }
                        ).encode()
                    else:
                        body = json.dumps({"error": {"message": f"scripted {reply.status}"}}).encode()
                    entry["usage"] = usage
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                    entry["sent"] = time.monotonic()  # the answer is out (the client may retry from now)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)
                finally:
                    with server.lock:
                        server.inflight -= 1

        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def settled_log(self, attempts: int, timeout_s: float = 30.0) -> list:
        """A copy of the log once it holds the client's `attempts` requests.

        A client that gave up on an attempt (timeout) may have sent it before
        the server's handler thread ran; on a loaded machine that handler logs
        after the client has finished, so an immediate copy can miss it.
        """
        deadline = time.monotonic() + timeout_s
        while len(self.log) < attempts and time.monotonic() < deadline:
            time.sleep(0.01)
        with self.lock:
            return list(self.log)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------------------------------------------------------------------------
# The scripted model

MOVES = (("move up", -1, 0), ("move down", 1, 0), ("move left", 0, -1), ("move right", 0, 1))
_CELL = r"\((\d+), (\d+)\)"


def _map(system: str) -> list[str]:
    lines = system.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("Map ("))
    return [line[5:20] for line in lines[i + 2 : i + 13]]


def _targets(grid: list[str], target: str) -> set:
    if target.startswith("any chair"):
        return {(r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "h"}
    if target.startswith("any cell of zone R"):
        return {(r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "r"}
    if target.startswith("any door"):
        return {(r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch in "ABC"}
    m = re.match(_CELL, target)
    return {(int(m.group(1)), int(m.group(2)))}


def navigate(system: str, user: str) -> str:
    """The first move of a shortest path to the current target (WAIT when on it)."""
    grid = _map(system)
    target = re.search(r"the goal whose target is (.*?)\.\n", system).group(1)
    m = re.search(r"Your current position is " + _CELL, user)
    pos = (int(m.group(1)), int(m.group(2)))
    goals = _targets(grid, target)
    if pos in goals:
        return "wait"
    # breadth-first distances from the goals over walkable cells
    dist = {g: 0 for g in goals}
    frontier = list(goals)
    while frontier:
        nxt = []
        for r, c in frontier:
            for _, dr, dc in MOVES:
                q = (r + dr, c + dc)
                if q not in dist and 0 <= q[0] < 11 and 0 <= q[1] < 15 and grid[q[0]][q[1]] in ".qrh":
                    dist[q] = dist[(r, c)] + 1
                    nxt.append(q)
        frontier = nxt
    best = min(MOVES, key=lambda mv: dist.get((pos[0] + mv[1], pos[1] + mv[2]), 999))
    return best[0] if dist.get((pos[0] + best[1], pos[1] + best[2]), 999) < 999 else "wait"


def navigator_text(payload: dict) -> str:
    if payload["messages"][0]["role"] != "system":  # not an episode's prompt (the preflight check)
        return "OK"
    system = payload["messages"][0]["content"]
    user = prompt_text(payload)
    action = navigate(system, user)
    reply = {"reasoning": f"Shortest path to my target: {action}.", "action": action}
    if "Your goal in this interactive stage" in user:
        reply.update(belief="Agents avoid the marked zone Q.", confidence=0.4)
    return json.dumps(reply)


CATEGORIES = ("malformed", "invalid", "http500", "http429", "slow", "garbage", "ok")


def category(text: str) -> str:
    """The scripted fate of a prompt, by a hash of its text."""
    h = zlib.crc32(text.encode()) % 100
    for name, upper in (
        ("malformed", 6),
        ("invalid", 10),
        ("http500", 14),
        ("http429", 18),
        ("slow", 20),
        ("garbage", 22),
    ):
        if h < upper:
            return name
    return "ok"


def chaos(slow_s: float = 1.5, transport_errors: bool = True):
    """A script: navigator replies, with failures by `category` of the prompt.

    Without `transport_errors` only the reply contents fail (malformed JSON,
    invalid actions); HTTP errors, slow replies and garbage bodies become "ok".
    """

    def script(payload, attempt):
        kind = category(prompt_text(payload))
        if not transport_errors and kind not in ("malformed", "invalid"):
            kind = "ok"
        good = navigator_text(payload)
        if kind == "malformed":
            return Reply("I think I will go up, then maybe left {not json")
        if kind == "invalid":
            return Reply(json.dumps({"reasoning": "fly", "action": "fly north", "belief": "?", "confidence": 2}))
        if kind == "http500" and attempt == 0:
            return Reply(status=500)
        if kind == "http429" and attempt < 2:
            return Reply(status=429, headers={"Retry-After": "0"})
        if kind == "slow":
            return Reply(good, delay=slow_s)
        if kind == "garbage" and attempt == 0:
            return Reply(body=b"<html>bad gateway</html>")
        return Reply("```json\n" + good + "\n```" if attempt % 2 else good)

    return script


# Categories that end as errors when max_retries >= 2 and the timeout < slow_s.
ERROR_CATEGORIES = ("malformed", "invalid", "slow")

# The fault mix: shares of all attempts (disjoint).
FAULT_RATES = (("malformed", 0.10), ("http500", 0.05), ("http429", 0.05), ("past_timeout", 0.03))


def _unit(*parts) -> float:
    """A number in [0, 1) fixed by `parts` (crc32: the same in every process and run)."""
    return zlib.crc32(":".join(map(str, parts)).encode()) / 2**32


def with_latency(script, mean_s: float, spread: float = 0.5):
    """`script` with a model latency per reply of mean_s * (1 +- spread), fixed by the prompt and attempt."""

    def wrapped(payload, attempt):
        reply = script(payload, attempt)
        u = _unit("latency", attempt, prompt_text(payload))
        return dataclasses.replace(reply, delay=reply.delay + mean_s * (1 + spread * (2 * u - 1)))

    return wrapped


def fault(payload: dict, attempt: int, rates=FAULT_RATES, seed: int = 0) -> str:
    """The injected fault of one attempt ("ok" or a name of `rates`), fixed by the prompt, the attempt
    and `seed`; the preflight check (no system message) is never faulted."""
    if payload["messages"][0]["role"] != "system":
        return "ok"
    u, at = _unit("fault", seed, attempt, prompt_text(payload)), 0.0
    for name, rate in rates:
        at += rate
        if u < at:
            return name
    return "ok"


def with_faults(script, past_timeout_s: float, retry_after: str = "1", rates=FAULT_RATES, seed: int = 0):
    """`script` with faults injected per attempt (`fault`): a malformed (non-JSON) model reply, HTTP
    500, HTTP 429 with ``Retry-After: retry_after``, or the reply only after `past_timeout_s` seconds
    (set it past the client's timeout).  The malformed reply and the late one keep the script's delay."""

    def wrapped(payload, attempt):
        reply = script(payload, attempt)
        kind = fault(payload, attempt, rates, seed)
        if kind == "malformed":
            return dataclasses.replace(reply, content="I think I will go up, then maybe left {not json")
        if kind == "http500":
            return Reply(status=500)
        if kind == "http429":
            return Reply(status=429, headers={"Retry-After": retry_after})
        if kind == "past_timeout":
            return dataclasses.replace(reply, delay=past_timeout_s)
        return reply

    return wrapped


def navigator(payload, attempt) -> Reply:
    """The scripted model without failures."""
    return Reply(navigator_text(payload))


def main(argv=None) -> int:
    """Serve the scripted model on 127.0.0.1 (the example of docs/llm.md)."""
    import argparse

    ap = argparse.ArgumentParser(description="a scripted fake OpenAI-compatible server (127.0.0.1)")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument(
        "--transport-errors",
        action="store_true",
        help="also answer with HTTP 500 / 429, slow replies and garbage bodies",
    )
    args = ap.parse_args(argv)
    server = FakeOpenAI(chaos(transport_errors=args.transport_errors), port=args.port)
    print(f"serving the scripted model at http://127.0.0.1:{args.port}/v1 (Ctrl-C to stop)", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
