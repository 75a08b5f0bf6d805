"""Step latency of `normjax play` under concurrent participants (loopback only, bounded).

Starts the real server (`python -m normjax.cli play`, normjax.testing.play_driver's PlayServer, on
127.0.0.1 with a fresh --out and the startup compile), then N simulated participants in
threads each start a session and press keys as fast as the server answers: per turn the
frame (as the page fetches it) and the step, the scripted shortest-path move read from the
prompt, for --steps turns each.  Measured per step request: the wall time from sending the
step to its reply (the next view).  Also the first key press of the first participant.

    python -m benchmarks.play_load                      # 20 participants x 40 steps
    python -m benchmarks.play_load --participants 5 --steps 10

Bounded: at most 64 participants and 400 steps each; loopback only.  Prints one JSON line
(median, p95, max step latency in ms, steps, wall time) and writes it to --json if given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from normjax.testing.play_driver import BELIEF, PlayServer, _request, action_word

ROOT = Path(__file__).resolve().parents[1]


def participant(url: str, pid: str, steps: int, latencies: list, errors: list, go: threading.Event) -> None:
    api = f"{url}/api/{pid}"
    try:
        go.wait()
        view = _request(f"{api}/start", {})
        for _ in range(steps):
            while view["status"] == "starting":
                view = _request(f"{api}/view")
            if view["status"] != "playing":
                return
            _request(f"{api}/frame.png")
            body = dict(turn=view["turn"], action=action_word(view))
            if view["phase"] == "interaction":
                body.update(BELIEF)
            t = time.perf_counter()
            view = _request(f"{api}/step", body)
            latencies.append(time.perf_counter() - t)
    except Exception as e:  # reported, not raised: the other participants go on
        errors.append(f"{pid}: {type(e).__name__}: {e}")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--steps", type=int, default=40, help="steps per participant")
    ap.add_argument("--norm", default="forbidden_zone_q")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    if not 1 <= args.participants <= 64 or not 1 <= args.steps <= 400:
        raise SystemExit("--participants must be in 1..64 and --steps in 1..400")
    with tempfile.TemporaryDirectory(prefix="play_load_") as tmp:
        out = Path(tmp) / "study"
        t0 = time.perf_counter()
        flags = ["--norms", args.norm, "--out", out, "--new-per-minute", "1000", "--no-cache"]
        with PlayServer(flags, Path(tmp) / "logs", start_timeout=900) as srv:
            ready = time.perf_counter() - t0
            first = _request(f"{srv.url}/api/first/start", {})
            t = time.perf_counter()
            _request(f"{srv.url}/api/first/step", dict(turn=first["turn"], action="wait"))
            first_key = time.perf_counter() - t
            latencies: list[float] = []
            errors: list[str] = []
            go = threading.Event()
            threads = [
                threading.Thread(target=participant, args=(srv.url, f"p{i:02d}", args.steps, latencies, errors, go))
                for i in range(args.participants)
            ]
            for th in threads:
                th.start()
            t = time.perf_counter()
            go.set()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t
    ms = sorted(1000 * x for x in latencies)
    result = dict(
        participants=args.participants,
        steps=len(ms),
        errors=errors[:5],
        server_ready_s=round(ready, 1),
        first_key_ms=round(1000 * first_key, 1),
        median_ms=round(statistics.median(ms), 1) if ms else None,
        p95_ms=round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1) if ms else None,
        max_ms=round(ms[-1], 1) if ms else None,
        wall_s=round(wall, 1),
    )
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
