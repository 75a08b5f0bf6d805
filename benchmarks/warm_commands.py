"""Cold and warm wall time of the `normjax` commands that compile.

Each command runs twice as the real command (`python -m normjax.cli ...`) in fresh
subprocesses with one fresh cache directory: the first run (cold) compiles and
fills the cache, the second (warm) should load whole programs instead of tracing
and compiling them again.  The times include Python start-up, imports, host-side
preparation, compilation or loading, the run itself and writing the output.

    python benchmarks/warm_commands.py                 # all commands, a few minutes on 2 cores
    python benchmarks/warm_commands.py --only evaluate # one

`identify` and `train` also say how long getting their programs took (loading them whole,
or tracing and compiling: `programs_s`) and `train` its training loop (`train_loop_s`, from
timing.json; it includes the block program's load or compile).
Results: benchmarks/results/warm_commands.json and .png.  Target (issue "Speed, round
two"): every warm run under 5 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import re
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


_PROGRAMS = re.compile(r"programs: (\d+) loaded whole, (\d+) compiled and stored, ([0-9.]+)s")


def _split(name: str, out: Path, stdout: str) -> dict:
    """The command's own account, where it gives one: seconds getting programs (`normjax.cache`;
    identify and train print it) and, for train, the training loop's seconds (timing.json)."""
    row = {}
    m = _PROGRAMS.search(stdout)
    if m:
        row.update(programs_loaded=int(m[1]), programs_compiled=int(m[2]), programs_s=float(m[3]))
    timing = out / "train" / "timing.json"
    if name == "train" and timing.exists():
        row["train_loop_s"] = round(json.loads(timing.read_text())["train_seconds"], 2)
    return row


def bench(name: str, tmp: Path) -> dict:
    cache = tmp / f"cache_{name}"
    cold_s, cold_out = normjax(*_args(name, tmp / f"{name}_cold"), "--cache-dir", cache)
    warm_s, warm_out = normjax(*_args(name, tmp / f"{name}_warm"), "--cache-dir", cache)
    return {"command": "normjax " + " ".join(COMMANDS[name]).replace("OUT", "DIR") + " --cache-dir CACHE",
            "cold_s": round(cold_s, 2), "warm_s": round(warm_s, 2), "warm_under_target": warm_s < TARGET_WARM_S,
            "cold": _split(name, tmp / f"{name}_cold", cold_out), "warm": _split(name, tmp / f"{name}_warm", warm_out)}


def plot(payload: dict, path: Path) -> Path:
    """Cold and warm wall seconds per command (bars), the 5 s target as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(payload["commands"])
    rows = [payload["commands"][n] for n in names]
    x = range(len(names))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar([i - 0.2 for i in x], [r["cold_s"] for r in rows], 0.4, label="first run (cold)")
    ax.bar([i + 0.2 for i in x], [r["warm_s"] for r in rows], 0.4, label="second run (warm)")
    ax.axhline(TARGET_WARM_S, color="k", lw=0.8, ls="--", label=f"target {TARGET_WARM_S:g} s")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("wall seconds")
    ax.set_title(f"normjax commands, cold vs warm cache (load {payload['load_before'][0]} -> {payload['load_after'][0]})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=sorted(COMMANDS), default=list(COMMANDS))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    payload: dict = {"load_before": load(), "target_warm_s": TARGET_WARM_S, "commands": {}}
    with tempfile.TemporaryDirectory() as d:
        for name in args.only:
            row = payload["commands"][name] = bench(name, Path(d))
            print(f"{name:9s} cold {row['cold_s']:7.1f}s  warm {row['warm_s']:6.1f}s  {row['warm']}  ({row['command']})")
    payload["load_after"] = load()
    print(f"load {payload['load_before']} -> {payload['load_after']}")
    if not args.no_save:
        path = save("warm_commands", payload)
        print(f"wrote {path} and {plot(payload, path.with_suffix('.png'))}")
    return payload


if __name__ == "__main__":
    print(json.dumps(main()["commands"], indent=1))
