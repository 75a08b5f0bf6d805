"""Side-by-side env-steps/s: normjax against XLand-MiniGrid and gymnax, one harness, one process.

Every environment is timed the same way: `jit(vmap(scan))` of `--steps` steps with
uniformly random actions (drawn inside the scan from a per-env key), the env state
carried step to step, starting from a batch reset done outside the timed region.
Compile time is measured on its own; throughput is the best of `--repeats` (5) runs
after one warm-up run: env-steps/s = batch * steps / best.  The programs of one
batch are compiled first and then timed in interleaved rounds (each once per round,
in turn), so a shared machine that slows down or speeds up during the run slows
every program alike; besides the ratio of the best runs, each ratio is also given
as the median of its per-round ratios.  The final state (with the last
observation) and the summed reward are the program's output, so every step's
observation is computed.

Programs (`--only` selects by group: normjax, xminigrid, gymnax):

  normjax-full       normjax's public env: `make(layout="cafe", phase="train")` reset/step
                     (scripted community planner + world step + newcomer observation),
                     K = 10, norms mixed across the batch (env i -> norm i % 50). No auto-reset
                     (NormGymEnv.step has none; 200-step training episodes outlast the scan).
  normjax-full-static  the same with `make(..., static_layout=True)`: every env on the cafe,
                     its tables compile as constants (the single-layout path the trainer uses).
  normjax-full-ar    the same step through `AutoResetWrapper` (XLand-MiniGrid's and gymnax's
                     steps below auto-reset too).  The wrapper resets only the environments
                     whose episode ended (`normjax.ground.rare.run_where`); in the timed steps
                     none ends, so this row shows the wrapper's cost between resets.
  normjax-world      the world step alone (`step_world`, random joint actions for all K slots).
  xland-empty-8x8    XLand-MiniGrid `MiniGrid-Empty-8x8`, GymAutoResetWrapper.
  xland-r1-9x9       XLand-MiniGrid `XLand-MiniGrid-R1-9x9`, GymAutoResetWrapper, one ruleset
                     for the whole batch (as XLand-MiniGrid's own benchmark script).  Its
                     benchmark rulesets are downloaded from the internet; by default this harness
                     builds its own one-rule ruleset with the library's API (`own_ruleset`), or
                     loads a benchmark's ruleset with `--xland-benchmark NAME` when it can.
  gymnax-cartpole    gymnax `CartPole-v1` (its step auto-resets).
  normjax-dqn        normjax's in-graph DQN trainer (train/dqn.py, `make_train` with the
                     50-norm DQN-MLP population, replay 10k, updates from the start):
                     `--train-chunks` chunks (4 transitions + 1 update per run) in transitions/s.

XLA cost analysis (`compiled.cost_analysis()`: 'bytes accessed' and 'flops') is reported per
env-step.  XLA counts a while-loop body once whatever its trip count (checked at run time
with a tiny scan, `xla_counts_loop_body_once`), so the scanned program's cost is divided by
the batch only; loops inside a step are counted once too (their count is shown).  That
count also holds what runs once per rollout, outside the loop (per-episode table reads that
XLA hoists out of it, the carry copied in and out), so each program is compiled a second
time with two steps per loop body: the difference is XLA's count for one more step
(`*_per_step_marginal`; `--no-step-cost` skips it).  The
compiled HLO text is searched for `while`, `gather` and `fusion` instructions.

    python -m benchmarks.compare                                  # batches 1024 4096, 100 steps
    python -m benchmarks.compare --only normjax --skip-train      # without the optional packages
    python -m benchmarks.compare --batches 256 --steps 20

Results: benchmarks/results/compare.json and compare.png.  The comparison packages
are the optional extra `pip install -e ".[bench]"`; without them their rows are skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _host_devices_from_argv(argv) -> int:
    """`--devices N` must act before JAX starts: CPU devices are fixed at import."""
    for i, a in enumerate(argv):
        if a == "--devices" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--devices="):
            return int(a.split("=", 1)[1])
    return 1


if _host_devices_from_argv(sys.argv) > 1 and "jax" not in sys.modules:
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + " --xla_force_host_platform_device_count="
        + str(_host_devices_from_argv(sys.argv))
    ).strip()

import jax  # noqa: E402 (after XLA_FLAGS is set)
import jax.numpy as jnp  # noqa: E402 (after XLA_FLAGS is set)

from benchmarks.common import RESULTS, block, compile_timed, save  # noqa: E402 (after XLA_FLAGS is set)
from benchmarks.common import xla_cost as cost  # noqa: E402 (after XLA_FLAGS is set)
from benchmarks.compare_programs import Program, gymnax_programs, normjax_programs, xland_programs  # noqa: E402 (after XLA_FLAGS is set)
from benchmarks.compare_report import plot, print_table, ratios, versions  # noqa: E402 (after XLA_FLAGS is set)
from normjax.world.state import with_packing  # noqa: E402 (after XLA_FLAGS is set)

BENCH_HINT = 'pip install -e ".[bench]"'
GROUPS = ("normjax", "xminigrid", "gymnax")


# --------------------------------------------------------------------------- measuring


def make_rollout(prog: Program, steps: int, unroll: int = 1):
    """jit(vmap(scan)) of `steps` steps of one env, random actions, carry in and out
    (`unroll` steps per loop body: only for counting what one step costs)."""

    def one_env(key, carry, params):
        def body(c, _):
            carry, key, acc = c
            key, k_act, k_step = jax.random.split(key, 3)
            carry, reward = prog.step(k_step, carry, prog.action(k_act), params)
            return (carry, key, acc + jnp.asarray(reward, jnp.float32)), None

        (carry, _, acc), _ = jax.lax.scan(body, (carry, key, jnp.float32(0.0)), None, length=steps, unroll=unroll)
        return carry, acc

    def rollout(keys, carry, params):
        # A batch split over devices (--devices N) must not pack environments
        # across them (WorldParams.packing); other libraries ignore this.
        return jax.vmap(one_env)(keys, carry, with_packing(params, len(jax.local_devices()) == 1))

    return jax.jit(rollout)


_OPS = re.compile(r"(?<![\w.-])(while|gather|fusion)\(")


def hlo_counts(hlo_text: str) -> dict:
    """Instructions of the optimized HLO module by opcode (fused computations included)."""
    counts = {"while": 0, "gather": 0, "fusion": 0}
    for m in _OPS.finditer(hlo_text):
        counts[m.group(1)] += 1
    return counts


def xla_counts_loop_body_once() -> bool:
    """True if XLA's cost analysis counts a scan's body once (independent of the trip count)."""

    def f(n):
        return jax.jit(lambda x: jax.lax.scan(lambda c, _: (jnp.tanh(c) @ c, None), x, None, length=n)[0])

    x = jnp.ones((16, 16), jnp.float32)
    a, b = (cost(f(n).lower(x).compile())["flops"] for n in (2, 8))
    return abs(b - a) < 0.5 * a


def split_batch(tree):
    """Place every leaf's leading (batch) axis across all local devices (identity on one).

    With several CPU devices (`--devices N`: XLA's host platform split into N) the
    compiled program runs one shard of the batch per device, each on its own
    thread; with one, XLA:CPU spreads only some large operations over the cores.
    """
    devices = jax.local_devices()
    if len(devices) == 1 or tree is None:
        return tree
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(devices, ("batch",)), PartitionSpec("batch"))
    return jax.device_put(tree, sharding)


def step_cost(prog: Program, steps: int, args, whole: dict) -> dict | None:
    """XLA's count for one more step: the rollout compiled with two steps per loop
    body, less the rollout as timed (`whole`), per environment.  The whole
    program's count also holds what runs once per rollout, outside the loop
    (per-episode table reads that XLA hoists, the carry copied in and out),
    spread as if it ran every step.  Only meaningful where XLA counts a loop
    body once (the caller checks); None where `steps` is odd (the unrolled scan
    would add a remainder step)."""
    if steps % 2:
        return None
    two = cost(make_rollout(prog, steps, unroll=2).lower(*args).compile())
    return {k: two[k] - whole[k] for k in ("bytes", "flops")}


def prepare(prog: Program, batch: int, steps: int, body_once: bool, per_step: bool = True):
    """Compile `prog`'s rollout at `batch` (timed) and run it once -> (run, row):
    `run()` executes the compiled rollout once; `row` has the compile time, XLA's
    cost analysis per env-step (with `per_step`, also the count for one more step,
    `step_cost`) and the HLO counts."""
    keys = split_batch(jax.random.split(jax.random.PRNGKey(0), batch))
    params = split_batch(prog.params)
    carry = block(jax.jit(jax.vmap(prog.reset))(keys, params))  # outside the timed region
    run_keys = split_batch(jax.random.split(jax.random.PRNGKey(1), batch))
    fn = make_rollout(prog, steps)
    compiled, compile_s = compile_timed(fn, run_keys, carry, params)
    block(compiled(run_keys, carry, params))  # warm-up
    c = cost(compiled)
    per = batch if body_once else batch * steps
    one = step_cost(prog, steps, (run_keys, carry, params), c) if per_step and body_once else None
    row = dict(
        env=prog.name,
        label=prog.label,
        group=prog.group,
        batch=batch,
        steps=steps,
        compile_s=round(compile_s, 3),
        xla_bytes_per_env_step=round(c["bytes"] / per, 1),
        xla_flops_per_env_step=round(c["flops"] / per, 1),
        xla_bytes_total=c["bytes"],
        xla_flops_total=c["flops"],
        xla_bytes_per_step_marginal=None if one is None else round(one["bytes"] / batch, 1),
        xla_flops_per_step_marginal=None if one is None else round(one["flops"] / batch, 1),
        hlo=hlo_counts(compiled.as_text()),
    )
    return (lambda: block(compiled(run_keys, carry, params))), row


def timed(run) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def finish(row: dict, times: list[float]) -> dict:
    """The row with its timings: env-steps/s from the best of `times`."""
    best = min(times)
    sps = row["batch"] * row["steps"] / best
    return dict(
        row,
        run_s=round(best, 5),
        run_s_rounds=[round(t, 5) for t in times],
        steps_per_s=round(sps, 1),
        us_per_env_step=round(1e6 / sps, 4),
    )


def measure_interleaved(
    progs: list[Program], batch: int, steps: int, repeats: int, body_once: bool, failed: list, per_step: bool = True
) -> list[dict]:
    """Every program of one batch, timed in `repeats` interleaved rounds (each
    program once per round, in turn), so that a machine that slows down or
    speeds up during the run affects every program alike; a program that
    fails to build or run is recorded in `failed` and left out."""
    ready = []
    for p in progs:
        try:
            ready.append((p, *prepare(p, batch, steps, body_once, per_step)))
        except Exception as e:  # one program's failure (or out of memory) does not stop the others
            failed.append(
                {"program": p.name, "batch": batch, "stage": "compile", "error": f"{type(e).__name__}: {e}"[:2000]}
            )
            print(f"FAILED {p.label} batch {batch}: {type(e).__name__}: {str(e)[:500]}", flush=True)
    times = {p.name: [] for p, _, _ in ready}
    for _ in range(repeats):
        for p, run, _ in ready:
            if p.name in times:
                try:
                    times[p.name].append(timed(run))
                except Exception as e:
                    failed.append(
                        {
                            "program": p.name,
                            "batch": batch,
                            "stage": "measure",
                            "error": f"{type(e).__name__}: {e}"[:2000],
                        }
                    )
                    print(f"FAILED {p.label} batch {batch}: {type(e).__name__}: {str(e)[:500]}", flush=True)
                    del times[p.name]
    return [finish(row, times[p.name]) for p, _, row in ready if p.name in times]


def measure_train(chunks: int, repeats: int, body_once: bool, buffer_size: int = 10_000) -> dict:
    """Transitions/s of normjax's in-graph DQN population (50 norms, MLP), compile separate."""
    from benchmarks.train_throughput import _mesh, _setup

    cfg, tr, carry = _setup("mlp", buffer_size, 50)
    runs = len(tr.rows)
    mesh = _mesh(tr)

    fn = jax.jit(lambda c, s: tr.run_chunks(c, s, chunks, mesh=mesh), donate_argnums=0)  # as train.run
    compiled, compile_s = compile_timed(fn, carry, tr.specs)
    carry = block(compiled(carry, tr.specs))  # warm-up; the carry is donated, so each run continues
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        carry = block(compiled(carry, tr.specs))
        best = min(best, time.perf_counter() - t0)
    c = cost(compiled)
    transitions = runs * chunks * cfg.train_freq
    # One loop body = one population chunk: train_freq env steps and one update per run.
    per_chunk = runs if body_once else runs * chunks
    return dict(
        env="normjax-dqn",
        label="normjax DQN-MLP chunk (50 runs)",
        group="normjax",
        runs=runs,
        chunks=chunks,
        transitions_per_chunk=cfg.train_freq,
        transitions=transitions,
        buffer_size=buffer_size,
        learning_starts=cfg.learning_starts,
        compile_s=round(compile_s, 3),
        run_s=round(best, 5),
        transitions_per_s=round(transitions / best, 1),
        xla_bytes_per_run_chunk=round(c["bytes"] / per_chunk, 1),
        xla_flops_per_run_chunk=round(c["flops"] / per_chunk, 1),
        xla_bytes_total=c["bytes"],
        xla_flops_total=c["flops"],
        hlo=hlo_counts(compiled.as_text()),
    )


# --------------------------------------------------------------------------- main


def available(groups) -> tuple[list[str], list[dict]]:
    """The groups whose package imports, and the skipped ones with the reason."""
    ok, skipped = [], []
    for g in groups:
        if g == "normjax":
            ok.append(g)
            continue
        try:
            __import__(g)
            ok.append(g)
        except Exception as e:  # ImportError, or a broken install
            skipped.append(
                {"group": g, "reason": f"{type(e).__name__}: {e}; install the comparison packages with {BENCH_HINT}"}
            )
    return ok, skipped


def _programs(groups, batch: int, args, failed: list) -> list[Program]:
    """The selected programs at `batch`; a group whose programs cannot be built is recorded in `failed`."""
    makers = {
        "normjax": lambda: normjax_programs(batch),
        "xminigrid": lambda: xland_programs(batch, args.xland_benchmark),
        "gymnax": lambda: gymnax_programs(batch),
    }
    progs = []
    for g in GROUPS:
        if g not in groups:
            continue
        try:
            progs += makers[g]()
        except Exception as e:  # e.g. an API the installed jax no longer has
            failed.append({"program": g, "batch": batch, "stage": "build", "error": f"{type(e).__name__}: {e}"})
            print(f"FAILED to build the {g} programs at batch {batch}: {type(e).__name__}: {e}", flush=True)
    if args.envs:
        progs = [p for p in progs if p.name in args.envs]
    return progs


def run(args, on_progress: Callable[[dict], None] | None = None) -> dict:
    """Measure every selected program; `on_progress(payload)` after each row (partial results).

    A program that fails (to build, compile or run) is recorded under `failed` and the
    others are still measured.
    """
    if args.devices != jax.device_count():
        print(
            f"note: --devices {args.devices} asked, but JAX already started with {jax.device_count()} "
            "device(s) (set it on the command line, before anything imports jax)",
            flush=True,
        )
    groups = args.only or list(GROUPS)
    skipped = [
        {"group": g, "reason": "not selected (--only " + " ".join(groups) + ")"} for g in GROUPS if g not in groups
    ]
    groups, missing = available(groups)
    skipped += missing
    for s in skipped:
        print(f"skipped {s['group']}: {s['reason']}", flush=True)
    if args.skip_train:
        skipped.append({"group": "normjax-dqn", "reason": "--skip-train"})
    elif "normjax" not in groups:
        skipped.append({"group": "normjax-dqn", "reason": "normjax not selected"})

    load_start = os.getloadavg()
    print(f"load average (1, 5, 15 min) at start: {load_start}", flush=True)
    body_once = xla_counts_loop_body_once()
    rows, notes, failed = [], {}, []
    train = None

    def payload() -> dict:
        return {
            "what": "env-steps/s of jit(vmap(scan)) over random-action steps from a reset outside the timed "
            "region; compile separate; best of `repeats` runs after one warm-up, the programs of a "
            "batch timed in interleaved rounds (run_s_rounds; median_round_ratio: the median of the "
            "per-round ratios)",
            "versions": versions(),
            "config": {
                "batches": list(args.batches),
                "steps": args.steps,
                "repeats": args.repeats,
                "train_chunks": None if args.skip_train else args.train_chunks,
                "only": args.only,
                "envs": args.envs,
                "xland_benchmark": args.xland_benchmark,
                "devices": jax.device_count(),
            },
            "load_average": {
                "start": load_start,
                "end": os.getloadavg(),
                "note": "os.getloadavg() (1, 5, 15 min): other processes sharing the cores slow every row",
            },
            "xla_counts_loop_body_once": body_once,
            "cost_note": "xla_*_per_env_step = cost_analysis() of the whole scanned program divided by batch when "
            "XLA counts a while body once (xla_counts_loop_body_once), else by batch*steps; while "
            "loops inside a step are counted once as well, so these are lower bounds where "
            "hlo.while > 1. xla_*_per_step_marginal: what one more step adds, XLA's count of "
            "the rollout with two steps per loop body less the rollout's, per env (benchmarks/"
            "compare.py step_cost): the whole-program count also holds the work outside the loop "
            "(per-episode table reads XLA hoists, the carry copied in and out) as if it ran every "
            "step",
            "programs": notes,
            "rows": rows,
            "train": train,
            "ratios": ratios(rows),
            "skipped": skipped,
            "failed": failed,
        }

    for batch in args.batches:
        progs = _programs(groups, batch, args, failed)
        for r in measure_interleaved(
            progs, batch, args.steps, args.repeats, body_once, failed, per_step=not args.no_step_cost
        ):
            p = next(q for q in progs if q.name == r["env"])
            rows.append(r)
            notes[p.name] = {"label": p.label, "what": p.what, **p.notes}
            print(
                f"{p.label:<52} batch {batch:>6}: {r['steps_per_s']:>13,.0f} env-steps/s "
                f"(best of {args.repeats}: {r['run_s']:.3f}s; compile {r['compile_s']:.1f}s)",
                flush=True,
            )
        if on_progress is not None:
            on_progress(payload())
    if not args.skip_train and "normjax" in groups:
        try:
            train = measure_train(args.train_chunks, args.repeats, body_once)
            print(
                f"{train['label']}: {train['transitions_per_s']:,.0f} transitions/s "
                f"(best of {args.repeats}: {train['run_s']:.3f}s; compile {train['compile_s']:.1f}s)",
                flush=True,
            )
        except Exception as e:
            failed.append(
                {
                    "program": "normjax-dqn",
                    "batch": None,
                    "stage": "measure",
                    "error": f"{type(e).__name__}: {e}"[:2000],
                }
            )
            print(f"FAILED normjax-dqn: {type(e).__name__}: {str(e)[:500]}", flush=True)
    print_table(rows, train, ratios(rows))
    for f in failed:
        print(f"failed: {f['program']} (batch {f['batch']}, {f['stage']}): {f['error'][:300]}")
    return payload()


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--steps", type=int, default=100, help="steps scanned per timed call")
    ap.add_argument(
        "--repeats", type=int, default=5, help="interleaved timing rounds (best taken per program), after one warm-up"
    )
    ap.add_argument("--only", nargs="+", choices=GROUPS, help="run only these groups (normjax needs no extra package)")
    ap.add_argument("--envs", nargs="+", help="run only these programs (e.g. normjax-full xland-empty-8x8)")
    ap.add_argument("--skip-train", action="store_true", help="skip the DQN training chunk")
    ap.add_argument(
        "--no-step-cost",
        action="store_true",
        help="skip the count for one more step (a second compile of each program)",
    )
    ap.add_argument("--train-chunks", type=int, default=100, help="DQN chunks (4 transitions per run) per timed call")
    ap.add_argument(
        "--xland-benchmark",
        default=None,
        help="XLand-MiniGrid benchmark to take the R1 ruleset from (e.g. trivial-21k; downloads it); "
        "default: own_ruleset(), no download",
    )
    ap.add_argument(
        "--devices",
        type=int,
        default=1,
        help="split the CPU into this many XLA devices and every program's batch over them "
        "(e.g. the core count); the same for every library",
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of compare.json / compare.png")
    ap.add_argument("--name", default="compare")
    ap.add_argument("--no-plot", action="store_true")
    return ap.parse_args(argv)


def main(argv=None) -> dict:
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    args = parse(argv)
    # The JSON is rewritten after every row: a run cut short (time limit) keeps what it measured.
    payload = run(args, on_progress=lambda partial: save(args.name, {**partial, "partial": True}, results=args.results))
    path = save(args.name, payload, results=args.results)
    print(f"\nsaved {path}")
    if not args.no_plot:
        try:
            plot(payload["rows"], payload["train"], Path(args.results) / f"{args.name}.png")
            print(f"saved {Path(args.results) / (args.name + '.png')}")
        except Exception as e:  # plotting is optional; the JSON is the result
            print(f"plot skipped: {e}")
    return payload


if __name__ == "__main__":
    main()
