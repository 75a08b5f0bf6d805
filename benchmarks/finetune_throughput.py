"""Generation speed of the fine-tuning records (`normjax.finetune`, docs/finetune.md).

Builds each task's records for one family and split, as `normjax finetune-data`
does (interaction-phase episodes of 200 steps, 16 per compiled call), and
reports, with the first build (which compiles the harvest program) timed
apart:

* ``compile_s``: the first build's wall time less the later builds' rate;
* per task, ``records_per_s``: records per second of a text-only build with a
  fresh seed (new episodes: harvesting, labelling and the host's prompt formatting),
  and ``records_per_s_frames``: the same with frames (`normjax finetune-data`'s
  default: each record's frame rendered and PNG-encoded), another fresh seed,
  the render program compiled before;
* ``harvest``: labelled steps per second of the harvest program alone
  (every step of every episode with its judgment labels and the newcomer's
  tie set and reasons).

* ``all_files``: the real command ``normjax finetune-data --task all --family
  all --split all`` (the 32 task x family x split files in one call, text-only by
  default, ``--frames`` for the default frames), run twice in fresh subprocesses
  with one fresh compilation cache directory: ``cold_s`` (the first run:
  Python start-up, imports, compiling every program and filling the cache, all
  32 builds and writes) and ``warm_s`` (the second: the programs loaded from the
  cache), each file's build time from its manifest (``wall_s``; the first
  file's includes the compiles), and whether the warm run wrote the same bytes.

    python -m benchmarks.finetune_throughput                # both parts, about 10 minutes on 2 cores
    python -m benchmarks.finetune_throughput --only tasks   # the per-task rates (about 2-3 minutes)
    python -m benchmarks.finetune_throughput --only files   # the 32-file call, cold and warm
    python -m benchmarks.finetune_throughput --only files --frames  # the same with frames
    python -m benchmarks.finetune_throughput --n 100        # quicker

Results: benchmarks/results/finetune_throughput.json (a part not run keeps its
earlier entry; ``all_files_frames`` is the 32-file call with ``--frames``) and .png (each file's
build time, cold and warm, text-only).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, save
from benchmarks.export_throughput import load, normjax
from normjax.finetune.dataset import DEFAULT_POLICY, build, split_norms
from normjax.finetune.harvest import harvest

TASKS = ("norm_judgment", "compliant_action", "norm_selection", "action_judgment")


TARGET_COLD_S = 300  # issue 52: all 32 files cold in at most 5 minutes on the 2-core machine


def tasks_part(args) -> dict:
    """Per task: records/s text-only and with frames; the first build's compile; the harvest program alone."""
    t0 = time.perf_counter()
    build("compliant_action", args.family, args.split, 1, seed=10_000, batch=args.batch)
    first_s = time.perf_counter() - t0
    # compiles the renderer
    build("compliant_action", args.family, args.split, 1, seed=10_001, batch=args.batch, frames=True)
    # compiles the judgment episodes' program (a norm-blind newcomer: dataset.JUDGMENT_POLICY)
    build("norm_judgment", args.family, args.split, 2, seed=10_002, batch=args.batch)

    norms = split_norms(args.family, args.split)
    ids = [norms[j % len(norms)] for j in range(args.batch)]
    t0 = time.perf_counter()
    h = harvest(ids, list(range(20_000, 20_000 + args.batch)), DEFAULT_POLICY)
    harvest_s = time.perf_counter() - t0
    steps = h.steps.t.size

    tasks = {}
    for j, task in enumerate(TASKS):
        t0 = time.perf_counter()
        recs, man = build(task, args.family, args.split, args.n, seed=j + 1, batch=args.batch)
        wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        framed, _ = build(task, args.family, args.split, args.n, seed=j + 101, batch=args.batch, frames=True)
        wall_f = time.perf_counter() - t0
        tasks[task] = dict(
            records=len(recs),
            wall_s=round(wall, 3),
            records_per_s=round(len(recs) / wall, 1),
            episodes={p: e["n"] for p, e in man["episodes"].items()},
            violation_share=man["violation_share"],
            frames=len(framed.pngs),
            wall_s_frames=round(wall_f, 3),
            records_per_s_frames=round(len(framed) / wall_f, 1),
        )
        print(task, tasks[task], flush=True)
    out = dict(
        family=args.family,
        split=args.split,
        batch=args.batch,
        policy=DEFAULT_POLICY,
        first_build_s=round(first_s, 2),
        harvest=dict(
            episodes=args.batch,
            labelled_steps=int(steps),
            wall_s=round(harvest_s, 3),
            steps_per_s=round(steps / harvest_s, 1),
        ),
        tasks=tasks,
    )
    print(out["harvest"], "first build (compiles):", out["first_build_s"], "s")
    return out


def _manifests(folder: Path) -> dict:
    return {
        p.name.removesuffix(".manifest.json"): json.loads(p.read_text()) for p in sorted(folder.glob("*.manifest.json"))
    }


def files_part(n: int, frames: bool, tmp: Path) -> dict:
    """`finetune-data --task all --family all --split all`, cold then warm, in fresh processes."""
    cmd = ["finetune-data", "--task", "all", "--family", "all", "--split", "all", "--examples", n, "--no-progress"]
    cmd += [] if frames else ["--text-only"]
    cache = tmp / "cache"  # fresh: nothing compiled yet
    load_before = load()
    runs = {}
    for run in ("cold", "warm"):
        wall, _ = normjax(*cmd, "--cache-dir", cache, "--out", tmp / run)
        runs[run] = (round(wall, 2), _manifests(tmp / run))
        print(f"{run}: {wall:.1f} s for {len(runs[run][1])} files", flush=True)
    written = {run: sorted(q.relative_to(tmp / run) for q in (tmp / run).rglob("*") if q.is_file()) for run in runs}
    same = written["cold"] == written["warm"] and all(  # every file and image but the manifests (wall_s)
        (tmp / "cold" / q).read_bytes() == (tmp / "warm" / q).read_bytes()
        for q in written["warm"]
        if not q.name.endswith(".manifest.json")
    )
    cold, warm = runs["cold"][1], runs["warm"][1]
    return dict(
        command="normjax " + " ".join(map(str, cmd)),
        records_per_file=n,
        frames=frames,
        files=len(cold),
        records=sum(m["records"] for m in cold.values()),
        cold_s=runs["cold"][0],
        warm_s=runs["warm"][0],
        target_cold_s=TARGET_COLD_S,
        same_bytes_warm_as_cold=same,
        per_file=[
            dict(
                file=name,
                records=m["records"],
                episodes={p: e["n"] for p, e in m["episodes"].items()},
                cold_s=m["wall_s"],
                warm_s=warm[name]["wall_s"],
            )
            for name, m in cold.items()
        ],
        load_before=load_before,
        load_after=load(),
    )


def plot(files: dict, path: Path) -> Path:
    """Each file's build time (its manifest's wall_s) in the cold and the warm call."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = files["per_file"]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.bar([i - 0.2 for i in x], [r["cold_s"] for r in rows], 0.4, label=f"cold call ({files['cold_s']:.0f} s in all)")
    ax.bar([i + 0.2 for i in x], [r["warm_s"] for r in rows], 0.4, label=f"warm call ({files['warm_s']:.0f} s in all)")
    ax.set_xticks(list(x), [r["file"] for r in rows], rotation=90, fontsize=6)
    ax.set_ylabel("build seconds (manifest wall_s)")
    ax.set_yscale("log")
    ax.set_title(f"finetune-data --task all --family all --split all, {files['records_per_file']} records a file")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("tasks", "files"), default=None, help="one part (the other's entry is kept)")
    ap.add_argument("--family", default="access")
    ap.add_argument("--split", default="train")
    ap.add_argument("--n", type=int, default=400, help="records per task (per file)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--frames", action="store_true", help="the 32-file call with frames (default: --text-only)")
    args = ap.parse_args()

    old = RESULTS / "finetune_throughput.json"
    payload = json.loads(old.read_text()) if old.exists() and args.only else {}
    payload.pop("machine", None)
    if args.only in (None, "tasks"):
        payload.update(tasks_part(args))
    if args.only in (None, "files"):
        key = "all_files_frames" if args.frames else "all_files"  # both kept
        with tempfile.TemporaryDirectory() as d:
            payload[key] = files_part(args.n, args.frames, Path(d))
        f = payload[key]
        print(
            f"all {f['files']} files: cold {f['cold_s']} s, warm {f['warm_s']} s (load {f['load_before']} -> {f['load_after']})"
        )
    path = save("finetune_throughput", payload)
    extra = f" and {plot(payload['all_files'], path.with_suffix('.png'))}" if "all_files" in payload else ""
    print(f"wrote {path}{extra}")


if __name__ == "__main__":
    main()
