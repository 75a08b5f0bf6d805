"""Where a test run's time goes: per test, its wall time and how much of it JAX spent tracing,
lowering and compiling, and how many programs the persistent cache served or missed.

Recording is opt-in: with ``NORMJAX_TEST_TIMING=DIR`` set, the pytest plugin
(`normjax.testing.pytest_plugin`) writes one JSON line per test phase to ``DIR/<worker>.jsonl``.
The report reads them back:

    NORMJAX_TEST_TIMING=/tmp/t python -m pytest -q -m slow
    python -m normjax.testing.timing /tmp/t            # the 20 slowest tests, compile vs run
    python -m normjax.testing.timing /tmp/t --by file  # per test file (a worker runs one file)
    python -m normjax.testing.timing /tmp/t --by program  # per compiled program: compiles, files
    python -m normjax.testing.timing /tmp/t --durations tests/durations.json  # the files' order in a run
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from jax import monitoring

ENV = "NORMJAX_TEST_TIMING"
# JAX's own duration events (jax._src.dispatch) and the persistent cache's counters.
DURATIONS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}
PROGRAM_MIN_S = 0.5  # the persistent cache's threshold (pytest_plugin): shorter compiles are not worth a row
COUNTS = {"/jax/compilation_cache/cache_hits": "cache_hits", "/jax/compilation_cache/cache_misses": "cache_misses"}


class Recorder:
    """Sums JAX's compile events between `start` and `stop` (one test phase at a time)."""

    def __init__(self, out_dir: str | Path, worker: str, program_min_s: float = PROGRAM_MIN_S):
        self.program_min_s = program_min_s
        self.path = Path(out_dir) / f"{worker}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.current: dict | None = None
        monitoring.register_event_duration_secs_listener(self._duration)
        monitoring.register_event_listener(self._event)

    def _duration(self, event: str, duration: float, fun_name: str | None = None, **_):
        if self.current is not None and event in DURATIONS:
            self.current[DURATIONS[event]] += duration
            # Per program: XLA compiles (cache loads included) worth counting, to find the
            # programs that several tests or files build, each in its own variant.
            if DURATIONS[event] == "compile_s" and duration >= self.program_min_s:
                self.current["programs"].append([fun_name or "?", round(duration, 3)])

    def _event(self, event: str, **_):
        if self.current is not None and event in COUNTS:
            self.current[COUNTS[event]] += 1

    def start(self, nodeid: str, when: str):
        self.current = {"test": nodeid, "when": when, "t0": time.perf_counter()}
        self.current.update(dict.fromkeys([*DURATIONS.values(), *COUNTS.values()], 0))
        self.current["programs"] = []

    def stop(self):
        row, self.current = self.current, None
        if row is None:
            return
        row["wall_s"] = round(time.perf_counter() - row.pop("t0"), 3)
        with self.path.open("a") as f:
            f.write(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}) + "\n")


def programs(out_dir: str | Path, top: int = 20) -> list[dict]:
    """Compiles per program name, most compile seconds first: how often a program of that name
    was compiled (each a variant: another shape, constant or level, or a cache miss) and in how
    many test files, the candidates for sharing one variant across tests."""
    sums: dict = defaultdict(lambda: {"compile_s": 0.0, "compiles": 0, "files": set()})
    for path in sorted(Path(out_dir).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            for name, secs in r.get("programs", []):
                s = sums[name]
                s["compile_s"] += secs
                s["compiles"] += 1
                s["files"].add(r["test"].split("::")[0])
    rows = [
        {"name": k, "compile_s": round(v["compile_s"], 2), "compiles": v["compiles"], "files": len(v["files"])}
        for k, v in sums.items()
    ]
    return sorted(rows, key=lambda r: -r["compile_s"])[:top]


def recorder_from_env() -> Recorder | None:
    out = os.environ.get(ENV)
    return Recorder(out, os.environ.get("PYTEST_XDIST_WORKER", "main")) if out else None


def summarise(out_dir: str | Path, by: str = "test", top: int = 20) -> list[dict]:
    """Rows summed per test (or per file), slowest first."""
    sums: dict = defaultdict(lambda: defaultdict(float))
    for path in sorted(Path(out_dir).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            key = r["test"].split("::")[0] if by == "file" else r["test"]
            for k in ("wall_s", *DURATIONS.values(), *COUNTS.values()):
                sums[key][k] += r[k]
    rows = [{"name": k, **{f: round(v, 2) for f, v in d.items()}} for k, d in sums.items()]
    return sorted(rows, key=lambda r: -r["wall_s"])[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--by", choices=("test", "file", "program"), default="test")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--durations", default=None, metavar="FILE", help="write every file's seconds here (JSON)")
    args = ap.parse_args(argv)
    if args.durations:
        rows = summarise(args.dir, "file", top=10**6)
        Path(args.durations).write_text(json.dumps({r["name"]: r["wall_s"] for r in rows}, indent=1) + "\n")
    if args.by == "program":
        print(f"{'compile':>8} {'count':>6} {'files':>6}  program")
        for r in programs(args.dir, args.top):
            print(f"{r['compile_s']:8.1f} {r['compiles']:6d} {r['files']:6d}  {r['name']}")
        return 0
    rows = summarise(args.dir, args.by, args.top)
    print(f"{'wall s':>8} {'compile':>8} {'trace':>7} {'lower':>7} {'hits':>5} {'miss':>5}  {args.by}")
    for r in rows:
        print(
            f"{r['wall_s']:8.1f} {r['compile_s']:8.1f} {r['trace_s']:7.1f} {r['lower_s']:7.1f} "
            f"{int(r['cache_hits']):5d} {int(r['cache_misses']):5d}  {r['name']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
