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

    python -m benchmarks.finetune_throughput            # about 2-3 minutes on 2 cores
    python -m benchmarks.finetune_throughput --n 100    # quicker

Results: benchmarks/results/finetune_throughput.json.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import save
from normjax.finetune.dataset import build, split_norms
from normjax.finetune.harvest import harvest

TASKS = ("norm_judgment", "compliant_action", "norm_selection", "action_judgment")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="access")
    ap.add_argument("--split", default="train")
    ap.add_argument("--n", type=int, default=400, help="records per task")
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()

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
    h = harvest(ids, list(range(20_000, 20_000 + args.batch)), "oracle")
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
    payload = dict(
        family=args.family,
        split=args.split,
        batch=args.batch,
        first_build_s=round(first_s, 2),
        harvest=dict(
            episodes=args.batch,
            labelled_steps=int(steps),
            wall_s=round(harvest_s, 3),
            steps_per_s=round(steps / harvest_s, 1),
        ),
        tasks=tasks,
    )
    print(payload["harvest"], "first build (compiles):", payload["first_build_s"], "s")
    print("wrote", save("finetune_throughput", payload))


if __name__ == "__main__":
    main()
