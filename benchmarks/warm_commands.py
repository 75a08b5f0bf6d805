"""Cold and warm wall time of the `normjax` commands that compile.

Each command runs twice as the real command (`python -m normjax.cli ...`) in fresh
subprocesses with one fresh cache directory: the first run (cold) compiles and
fills the cache, the second (warm) should load whole programs instead of tracing
and compiling them again.  The times include Python start-up, imports, host-side
preparation, compilation or loading, the run itself and writing the output.

    python benchmarks/warm_commands.py                 # all commands, a few minutes on 2 cores
    python benchmarks/warm_commands.py --only evaluate # one

Results: benchmarks/results/warm_commands.json.  Target (issue "Speed, round
two"): every warm run under 5 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import save  # noqa: E402
from benchmarks.export_throughput import load, normjax  # noqa: E402

TARGET_WARM_S = 5.0

# name -> the command's arguments; "OUT" is replaced by a path in the run's temporary folder.
COMMANDS = {
    "evaluate": ["evaluate", "--policy", "oracle", "--out", "OUT/oracle.json"],
    "identify": ["identify", "--norms", "forbidden_zone_q", "bend_right_1", "--out", "OUT/identify"],
    "train": ["train", "--config", "test_tiny", "--out", "OUT/train", "--no-checkpoints"],
    "export": ["export", "--norm", "bend_right_1", "--phase", "seen", "--episode", "0", "--policy", "oracle",
               "--out", "OUT/ep.jsonl"],
}


def _args(name: str, out: Path) -> list[str]:
    return [a.replace("OUT", str(out)) for a in COMMANDS[name]]


def bench(name: str, tmp: Path) -> dict:
    cache = tmp / f"cache_{name}"
    cold_s, _ = normjax(*_args(name, tmp / f"{name}_cold"), "--cache-dir", cache)
    warm_s, _ = normjax(*_args(name, tmp / f"{name}_warm"), "--cache-dir", cache)
    return {"command": "normjax " + " ".join(COMMANDS[name]).replace("OUT", "DIR") + " --cache-dir CACHE",
            "cold_s": round(cold_s, 2), "warm_s": round(warm_s, 2), "warm_under_target": warm_s < TARGET_WARM_S}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=sorted(COMMANDS), default=list(COMMANDS))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    payload: dict = {"load_before": load(), "target_warm_s": TARGET_WARM_S, "commands": {}}
    with tempfile.TemporaryDirectory() as d:
        for name in args.only:
            row = payload["commands"][name] = bench(name, Path(d))
            print(f"{name:9s} cold {row['cold_s']:7.1f}s  warm {row['warm_s']:6.1f}s  ({row['command']})")
    payload["load_after"] = load()
    print(f"load {payload['load_before']} -> {payload['load_after']}")
    if not args.no_save:
        print(f"wrote {save('warm_commands', payload)}")
    return payload


if __name__ == "__main__":
    print(json.dumps(main()["commands"], indent=1))
