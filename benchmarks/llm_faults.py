"""A fault-injected `llm-eval` run against the same run without faults (127.0.0.1 only).

The scripted model of normjax/testing/fake_openai.py (a norm-blind navigator that reads
its prompt) answers every chat request after a model latency (``--latency``
seconds, +-50%, fixed by the prompt).  The same small run (``--norms``,
``--interaction-steps``; text-only) is made three times, after a warm-up run
that compiles every program (so compilation is in no timing):

* ``clean``: the server answers every request;
* ``faulty``: the server injects, per request attempt (chosen by a hash of the
  prompt and the attempt, so reruns are identical): 10% malformed (non-JSON)
  replies, 5% HTTP 500, 5% HTTP 429 with ``Retry-After`` (``--retry-after``
  seconds), 3% replies only after ``--past-timeout`` seconds, beyond the
  client's ``--timeout``; the client retries the transient ones
  (``--max-retries``, back-off from ``--backoff`` s);
* ``replay``: the scripted model in process (no server, no latency), except
  that every decision that errored in the faulty run errors again with the
  same message: what the faulty run must equal if its faults changed nothing
  but those decisions.

Printed and saved (benchmarks/results/llm_faults.json): the wall times, the
ratio faulty / clean (target under 1.5), each run's critical path (the longest
interaction episode's request seconds, back-off included, plus the longest test
episode's: what a run whose episodes never wait for each other takes, runner
aside), the schedule floor (`schedule_floor`:
the ratio that any schedule waiting only for each episode's own replies must
expect with this fault mix, by Monte Carlo over the client's retry rules), the
attempts, retries and faults injected, the decisions that errored, and two
equality checks:

* faulty == replay: every step of every transcript (the world: all agents;
  the newcomer's action, what it executed, its sanctions; the prompt sent;
  the error; the belief) and every per-episode result except the request
  counters (requests, retries, tokens);
* faulty == clean for every episode with no errored decision.

Exit status 1 if an equality check fails (the timing target is reported, not
enforced).  ``--lockstep`` also times clean and faulty runs with every
episode waiting for the whole step (the former schedule), for comparison.

    python -m benchmarks.llm_faults                  # about a minute after compiling
    python -m benchmarks.llm_faults --lockstep
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import save
from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatClient, ClientConfig
from normjax.runtime.runner import run_protocol_async
from normjax.runtime.transcripts import TranscriptStore
from normjax.testing.fake_openai import FakeOpenAI, fault, navigator, with_faults, with_latency
from normjax.testing.fault_replay import Replay, errored_decisions, transcript_differences

# Per-episode result fields that count requests rather than describe the episode.
REQUEST_FIELDS = ("requests", "retries", "tokens_in", "tokens_out")
SETTINGS = dict(model="scripted-navigator", text_only=True)


async def _with_client(url: str, args, out, lockstep: bool) -> dict:
    cfg = ClientConfig(
        base_url=url,
        model=SETTINGS["model"],
        timeout=args.timeout,
        max_retries=args.max_retries,
        backoff=args.backoff,
        max_backoff=args.max_backoff,
        concurrency=args.concurrency,
    )
    async with ChatClient(cfg) as client:
        result = await run_protocol_async(
            LLMAgent(client, text_only=True),
            args.norms,
            out=out,
            interaction_steps=args.interaction_steps,
            settings=SETTINGS,
            lockstep=lockstep,
        )
        result["client"] = dict(client.stats)
        return result


def served_run(script, args, out, lockstep: bool = False) -> tuple[dict, float, list]:
    """(result, wall seconds, server log) of one run against a fresh server with `script`."""
    with FakeOpenAI(script, models=[SETTINGS["model"]]) as srv:
        t0 = time.perf_counter()
        result = asyncio.run(_with_client(srv.base_url, args, out, lockstep))
        wall = time.perf_counter() - t0
        return result, wall, srv.settled_log(result["client"]["attempts"])


def _rows(result: dict) -> dict:
    rows = {f"{r['norm']}/{r['condition']}_{r['episode']}": r for r in result["episodes"]}
    rows.update({f"{r['norm']}/interaction": r for r in result["interaction"]})
    return {k: {f: v for f, v in r.items() if f not in REQUEST_FIELDS} for k, r in rows.items()}


def _per_norm(out, measure) -> dict:
    """Per norm: {"interaction": measure(its interaction steps), "tests": [measure(steps) per test episode]}."""
    store, per_norm = TranscriptStore(out), {}
    for name in store.episodes():
        norm, episode = name.split("/")
        value = measure([r["llm"] or {} for r in store.read(name)[1:]])
        entry = per_norm.setdefault(norm, {"interaction": 0, "tests": []})
        if episode == "interaction":
            entry["interaction"] = value
        else:
            entry["tests"].append(value)
    return per_norm


def critical_path(out) -> float:
    """Seconds of the longest interaction episode's requests plus the longest test episode's (the
    test stage starts when every interaction has ended): the wall time of the run, runner aside."""
    chains = _per_norm(out, lambda steps: sum(s.get("latency_s", 0.0) for s in steps)).values()
    return max(c["interaction"] for c in chains) + max(t for c in chains for t in c["tests"])


def _decisions(out) -> dict:
    """Per norm: the queried decisions of its interaction episode and of each test episode."""
    return _per_norm(out, lambda steps: sum(bool(s.get("queried")) for s in steps))


def schedule_floor(decisions: dict, args, draws: int = 400, seed: int = 0) -> dict:
    """The ratio any schedule that waits for each episode's own replies must expect (Monte Carlo).

    Each episode is a chain of requests: its turn cannot be asked before its previous reply is
    in.  Per attempt the server's latency is uniform in latency x (1 +- 0.5) and the fault is
    drawn at the rates of normjax/testing/fake_openai.py; a retried attempt costs what the client's rules
    make it cost (`ChatClient._delay`: back-off, Retry-After as a minimum, the timeout), and a
    malformed reply is an errored decision, after which the newcomer waits and needs one more
    decision.  With the clean run's decision counts per episode, the expected wall time of a
    run with no runner overhead at all is the mean over draws of the longest interaction
    chain plus the longest test chain; floor = faulty / clean.  (Starting each norm's tests
    when its own interaction ends would make it the longest norm's sum instead: tried, the
    same ratio on this run, and 3x the runner's CPU with one small batch per norm.)
    """
    import random

    import numpy as np

    from normjax.testing.fake_openai import FAULT_RATES

    random.seed(seed)  # `_delay`'s jitter
    rng = np.random.default_rng(seed)
    cfg = ClientConfig(
        base_url="http://127.0.0.1/v1",
        model="m",
        timeout=args.timeout,
        max_retries=args.max_retries,
        backoff=args.backoff,
        max_backoff=args.max_backoff,
    )
    delay = ChatClient(cfg)._delay
    rates = dict(FAULT_RATES)
    names, probs = list(rates) + ["ok"], list(rates.values()) + [1.0 - sum(rates.values())]

    def request(faulty: bool) -> tuple[float, bool]:
        t = 0.0
        for attempt in range(args.max_retries + 1):
            latency = args.latency * rng.uniform(0.5, 1.5)
            kind = rng.choice(names, p=probs) if faulty else "ok"
            if kind in ("ok", "malformed"):
                return t + latency, kind == "malformed"
            if attempt == args.max_retries:
                break
            if kind == "http500":
                t += delay(attempt, None)
            elif kind == "http429":
                t += delay(attempt, float(args.retry_after))
            else:  # past_timeout
                t += args.timeout + delay(attempt, None)
        return t + args.timeout, True

    def chain(n: int, faulty: bool) -> float:
        t, done = 0.0, 0
        while done < n:
            dt, errored = request(faulty)
            t += dt
            done += not errored
        return t

    def run(faulty: bool) -> float:
        stages = decisions.values()
        return max(chain(c["interaction"], faulty) for c in stages) + max(
            chain(n, faulty) for c in stages for n in c["tests"]
        )

    clean = float(np.mean([run(False) for _ in range(draws)]))
    faulty = float(np.mean([run(True) for _ in range(draws)]))
    return dict(clean_s=round(clean, 2), faulty_s=round(faulty, 2), ratio=round(faulty / clean, 3), draws=draws)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("--norms", nargs="+", default=["forbidden_zone_q", "clockwise_circulation", "bend_right_1"])
    ap.add_argument("--interaction-steps", type=int, default=10)
    ap.add_argument("--latency", type=float, default=0.4, help="mean model reply time, seconds (+-50%%)")
    ap.add_argument("--timeout", type=float, default=1.0, help="client timeout per attempt, seconds")
    ap.add_argument("--past-timeout", type=float, default=1.6, help="when a late reply comes, seconds")
    ap.add_argument("--retry-after", default="1", help="the 429 answers' Retry-After header, seconds")
    ap.add_argument("--max-retries", type=int, default=3)
    ap.add_argument("--backoff", type=float, default=0.1, help="first retry's back-off, seconds")
    ap.add_argument("--max-backoff", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--lockstep", action="store_true", help="also time both runs in lockstep (the former schedule)")
    args = ap.parse_args(argv)
    if args.past_timeout <= args.timeout:
        ap.error(f"--past-timeout ({args.past_timeout}) must exceed --timeout ({args.timeout})")
    load_before = os.getloadavg()
    clean_script = with_latency(navigator, args.latency)
    faulty_script = with_faults(clean_script, args.past_timeout, args.retry_after)
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        served_run(navigator, args, Path(tmp, "warmup"))  # compiles every program of both stages
        compile_s = time.perf_counter() - t0
        clean, walls["clean"], _ = served_run(clean_script, args, Path(tmp, "clean"))
        faulty, walls["faulty"], log = served_run(faulty_script, args, Path(tmp, "faulty"))
        errored = errored_decisions(Path(tmp, "faulty"))
        chains = {k: round(critical_path(Path(tmp, k)), 2) for k in ("clean", "faulty")}
        floor = schedule_floor(_decisions(Path(tmp, "clean")), args)
        replay = asyncio.run(
            run_protocol_async(
                Replay(errored),
                args.norms,
                out=Path(tmp, "replay"),
                interaction_steps=args.interaction_steps,
                settings=SETTINGS,
            )
        )
        if args.lockstep:
            _, walls["clean_lockstep"], _ = served_run(clean_script, args, Path(tmp, "clean_l"), lockstep=True)
            _, walls["faulty_lockstep"], _ = served_run(faulty_script, args, Path(tmp, "faulty_l"), lockstep=True)
        replay_diff = transcript_differences(Path(tmp, "faulty"), Path(tmp, "replay"))
        rows_f, rows_r, rows_c = _rows(faulty), _rows(replay), _rows(clean)
        replay_diff += [f"result of {k}" for k in rows_f if rows_f[k] != rows_r.get(k)]
        hit = {name for name, _ in errored}
        untouched = [k for k in rows_f if k not in hit]
        clean_diff = [
            k
            for k in untouched
            if {f: v for f, v in rows_f[k].items() if f != "errors"}
            != {f: v for f, v in rows_c[k].items() if f != "errors"}
        ]
    injected = {}
    for e in log:
        kind = fault(e["payload"], e["attempt"])
        injected[kind] = injected.get(kind, 0) + 1
    report = dict(
        settings=dict(vars(args), norms=args.norms),
        compile_and_warmup_s=round(compile_s, 1),
        wall_s={k: round(v, 2) for k, v in walls.items()},
        ratio=round(walls["faulty"] / walls["clean"], 3),
        critical_path_s=chains,
        critical_path_ratio=round(chains["faulty"] / chains["clean"], 3),
        schedule_floor=floor,
        target_ratio=1.5,
        attempts_faulty=len(log),
        injected=injected,
        client={"clean": clean["client"], "faulty": faulty["client"]},
        decisions={"clean": clean["llm"]["decisions"], "faulty": faulty["llm"]["decisions"]},
        errored_decisions={
            "clean": clean["llm"]["errors"],
            "faulty": len(errored),
            "faulty_request_errors": faulty["llm"]["request_errors"],
        },
        faulty_equals_replay=not replay_diff,
        replay_differences=replay_diff[:20],
        episodes=len(rows_f),
        episodes_without_errors=len(untouched),
        untouched_equal_clean=not clean_diff,
        clean_differences=clean_diff[:20],
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )
    if args.lockstep:
        report["ratio_lockstep"] = round(walls["faulty_lockstep"] / walls["clean_lockstep"], 3)
    shown = (
        "wall_s",
        "ratio",
        "critical_path_s",
        "critical_path_ratio",
        "schedule_floor",
        "injected",
        "errored_decisions",
        "faulty_equals_replay",
        "episodes",
        "episodes_without_errors",
        "untouched_equal_clean",
    )
    shown += ("ratio_lockstep",) if args.lockstep else ()
    print(json.dumps({k: report[k] for k in shown}, indent=1))
    print(f"wrote {save('llm_faults', report)}")
    return 0 if not replay_diff and not clean_diff and clean["llm"]["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
