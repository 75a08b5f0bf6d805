"""Cold and warm wall time of the `normjax` commands that compile.

Each command runs twice as the real command (`python -m normjax.cli ...`) in fresh
subprocesses with one fresh cache directory: the first run (cold) compiles and
fills the cache, the second (warm) should load whole programs instead of tracing
and compiling them again.  The times include Python start-up, imports, host-side
preparation, compilation or loading, the run itself and writing the output.

    python -m benchmarks.warm_commands                 # all commands, a few minutes on 2 cores
    python -m benchmarks.warm_commands --only evaluate # one (the other commands' rows in the file are kept)

`llm-eval` runs against a local fake OpenAI-compatible endpoint started here (the
scripted shortest-path model of normjax/testing/fake_openai.py; no network), one norm with a
20-step interaction phase and the six test episodes, frames on.  `play` starts the
real server and plays one participant over HTTP (normjax/testing/play_driver.py: start, then
per turn the frame and the step, the same scripted moves read from the prompt); its
time runs from the server's launch to the finished session.  Both print how they got
their programs (``programs:`` line), and the row says whether the warm run wrote the
same results as the cold one.

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
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, save
from benchmarks.export_throughput import _env, load, normjax

ROOT = Path(__file__).resolve().parents[1]

TARGET_WARM_S = 5.0

# name -> the command's arguments; "OUT" is replaced by a path in the run's temporary folder.
COMMANDS = {
    "evaluate": ["evaluate", "--policy", "oracle", "--out", "OUT/oracle.json"],
    "identify": ["identify", "--norms", "forbidden_zone_q", "bend_right_1", "--out", "OUT/identify"],
    "train": ["train", "--config", "test_tiny", "--out", "OUT/train", "--no-checkpoints"],
    "export": [
        "export",
        "--norm",
        "bend_right_1",
        "--phase",
        "seen",
        "--episode",
        "0",
        "--policy",
        "oracle",
        "--out",
        "OUT/ep.jsonl",
    ],
    # URL: the fake endpoint's; the run directory is OUT/run.
    "llm-eval": [
        "llm-eval",
        "--base-url",
        "URL",
        "--model",
        "fake",
        "--norms",
        "forbidden_zone_q",
        "--interaction-steps",
        "20",
        "--out",
        "OUT/run",
    ],
    # --port is added by normjax/testing/play_driver.py; one participant, "bench", plays the whole session.
    "play": ["play", "--norms", "forbidden_zone_q", "--interaction-steps", "20", "--out", "OUT/study"],
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


def _play(out: Path, cache: Path) -> tuple[float, str]:
    """`normjax play` in a fresh process, one scripted participant over HTTP -> (wall seconds from the
    server's launch to the finished session, the server's stdout)."""
    from normjax.testing.play_driver import PlayServer, play

    t0 = time.perf_counter()
    with PlayServer(_args("play", out)[1:] + ["--cache-dir", str(cache)], out / "logs", env=_env()) as srv:
        play(srv.url, "bench")
        wall = time.perf_counter() - t0
        time.sleep(0.2)  # the session prints its programs line as it finishes
        return wall, srv.stdout()


def _results(name: str, out: Path) -> dict | None:
    path = {"llm-eval": out / "run" / "results.json", "play": out / "study" / "bench" / "results.json"}.get(name)
    if path is None:
        return None
    return json.loads(path.read_text())["episodes"]


def bench(name: str, tmp: Path) -> dict:
    cache = tmp / f"cache_{name}"
    dirs = tmp / f"{name}_cold", tmp / f"{name}_warm"
    command = "normjax " + " ".join(COMMANDS[name]).replace("OUT", "DIR") + " --cache-dir CACHE"
    row = {"measured_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "load_before": load()}
    if name == "play":
        (cold_s, cold_out), (warm_s, warm_out) = (_play(d, cache) for d in dirs)
        command += " (one participant played over HTTP: start, then frame and step per turn)"
    elif name == "llm-eval":
        from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text

        with FakeOpenAI(lambda p, a: Reply(navigator_text(p))) as srv:
            (cold_s, cold_out), (warm_s, warm_out) = (
                normjax(*[a.replace("URL", srv.base_url) for a in _args(name, d)], "--cache-dir", cache) for d in dirs
            )
        command = command.replace("URL", "FAKE") + " (FAKE: a local scripted endpoint, normjax/testing/fake_openai.py)"
    else:
        cold_s, cold_out = normjax(*_args(name, dirs[0]), "--cache-dir", cache)
        warm_s, warm_out = normjax(*_args(name, dirs[1]), "--cache-dir", cache)
    row.update(
        command=command,
        cold_s=round(cold_s, 2),
        warm_s=round(warm_s, 2),
        warm_under_target=warm_s < TARGET_WARM_S,
        cold=_split(name, dirs[0], cold_out),
        warm=_split(name, dirs[1], warm_out),
        load_after=load(),
    )
    if _results(name, dirs[0]) is not None:
        row["same_results"] = _results(name, dirs[0]) == _results(name, dirs[1])
    return row


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
    ax.set_title(
        f"normjax commands, cold vs warm cache (load {payload['load_before'][0]} -> {payload['load_after'][0]})"
    )
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
            print(
                f"{name:9s} cold {row['cold_s']:7.1f}s  warm {row['warm_s']:6.1f}s  {row['warm']}  ({row['command']})"
            )
    payload["load_after"] = load()
    print(f"load {payload['load_before']} -> {payload['load_after']}")
    if not args.no_save:
        old = RESULTS / "warm_commands.json"  # rows of commands not run now are kept
        if old.exists():
            payload["commands"] = {**json.loads(old.read_text()).get("commands", {}), **payload["commands"]}
        path = save("warm_commands", payload)
        print(f"wrote {path} and {plot(payload, path.with_suffix('.png'))}")
    return payload


if __name__ == "__main__":
    print(json.dumps(main()["commands"], indent=1))
