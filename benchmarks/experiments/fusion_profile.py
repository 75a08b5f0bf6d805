"""Which compiled operations of the full step take the time: a per-fusion profile.

The rollout of `benchmarks/env_throughput.py` (`jit(vmap(scan))` of the full
environment step, random newcomer actions) is compiled, run once, then run
`--repeats` times under `jax.profiler` with a Perfetto trace.  XLA's CPU runtime
records every executed thunk (a fusion, a sort, a while loop...) as a trace event,
so the trace gives each compiled operation's wall time.  Each operation is then
mapped to the Python source lines it came from, through the stack frames that the
optimised HLO text carries (`FileNames` / `FileLocations` / `StackFrames`); a
fusion built from several lines has its time split evenly among the lines of its
instructions, so the per-line and per-function totals are an approximate
attribution, the per-fusion times are measured.

Pin the process to one core (`taskset -c 0 python ...`) so that no operation's
time includes waiting for a second thread; on a shared machine other processes
still inflate every operation, roughly in proportion, so shares are more
reliable than absolute times.

    taskset -c 0 python -m benchmarks.experiments.fusion_profile --batch 1024 --steps 10
    taskset -c 0 python -m benchmarks.experiments.fusion_profile --world   # the world step alone

`--world` profiles `step_world` alone under uniformly random joint actions for
all K slots, as `compare.py`'s normjax-world row times it.

Results: benchmarks/experiments/results/fusion_profile.json (fusion_profile_world.json with
--world): top operations, functions and lines.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import re
import tempfile
from collections import defaultdict
from pathlib import Path

import jax

from benchmarks.common import block, machine, save_experiment
from benchmarks.env_throughput import batch_params, batch_reset, make_rollout
from normjax import constants as C
from normjax.world.step import step_world

ROOT = str(Path(__file__).resolve().parents[1]) + "/"


def source_map(hlo: str):
    """stack_frame_id -> (file, function, line) from the HLO text's frame tables."""
    files, funcs, locs, frames, section = {}, {}, {}, {}, None
    for line in hlo.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
            continue
        if section and not line.strip():
            section = None
            continue
        if section in ("FileNames", "FunctionNames"):
            i, v = line.split(" ", 1)
            (files if section == "FileNames" else funcs)[i] = v.strip('"').replace(ROOT, "")
        elif section == "FileLocations":
            m = re.match(r"(\d+) \{file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", line)
            locs[m.group(1)] = (files[m.group(2)], funcs[m.group(3)], int(m.group(4)))
        elif section == "StackFrames":
            m = re.match(r"(\d+) \{file_location_id=(\d+)", line)
            frames[m.group(1)] = locs.get(m.group(2))
    return frames


def operations(hlo: str):
    """instruction name -> the stack_frame_ids of its instructions (a fusion's body included)."""
    bodies, current, lines = {}, None, {}
    for line in hlo.splitlines():
        m = re.match(r"^%([\w.\-]+) .*\{$", line)
        if m:
            current = m.group(1)
            bodies[current] = []
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is not None:
            bodies[current].append(line)
        m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = ", line)
        if m:
            lines[m.group(1)] = line
    out = {}
    for name, line in lines.items():
        called = re.search(r"calls=%([\w.\-]+)", line)
        body = bodies.get(called.group(1), [line]) if called else [line]
        out[name] = [m.group(1) for b in body for m in [re.search(r"stack_frame_id=(\d+)", b)] if m]
    return out


def trace_times(trace_dir: str) -> dict[str, float]:
    """Total duration (us) per trace event name."""
    path = glob.glob(f"{trace_dir}/**/*.trace.json.gz", recursive=True)[0]
    events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    total = defaultdict(float)
    for e in events:
        if e.get("ph") == "X":
            total[e["name"]] += e.get("dur", 0.0)
    return total


def make_world_rollout(n_steps: int):
    """jit(vmap) of n_steps world steps (`step_world`) with random joint actions."""

    def one_env(key, state, params):
        def body(carry, _):
            state, key, acc = carry
            key, ka, ks = jax.random.split(key, 3)
            actions = jax.random.randint(ka, (state.agents.active.shape[0],), 0, C.N_ACTIONS)
            state, info = step_world(ks, state, actions, params)
            return (state, key, acc + info.reward[0]), None

        # The whole final state is the output (as in compare.py), so no part of
        # the step is dead code.
        (state, _, acc), _ = jax.lax.scan(body, (state, key, jax.numpy.float32(0.0)), None, length=n_steps)
        return acc, state

    return jax.jit(jax.vmap(one_env))


def main(argv=None) -> dict:
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--static-layout", action="store_true", help="single-layout fast path")
    ap.add_argument("--world", action="store_true", help="the world step alone, random joint actions")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    if args.batch < 1 or args.steps < 1 or args.repeats < 1:
        ap.error(f"--batch, --steps and --repeats must be >= 1, got {args.batch}, {args.steps}, {args.repeats}")

    keys = jax.random.split(jax.random.PRNGKey(0), args.batch)
    run_keys = jax.random.split(jax.random.PRNGKey(1), args.batch)
    params = batch_params(args.batch, args.static_layout)
    state = block(batch_reset(keys, params))
    rollout = make_world_rollout if args.world else make_rollout
    compiled = rollout(args.steps).lower(run_keys, state, params).compile()
    hlo = compiled.as_text()
    block(compiled(run_keys, state, params))
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp, create_perfetto_trace=True)
        for _ in range(args.repeats):
            block(compiled(run_keys, state, params))
        jax.profiler.stop_trace()
        times = trace_times(tmp)

    env_steps = args.batch * args.steps * args.repeats
    executed = times.get("ThunkExecutor::Execute", 0.0)
    frames, ops = source_map(hlo), operations(hlo)
    by_op = sorted(((n, t) for n, t in times.items() if n in ops), key=lambda x: -x[1])
    by_func, by_line = defaultdict(float), defaultdict(float)
    for name, t in by_op:
        where = [frames.get(f) for f in ops[name]]
        where = [w for w in where if w] or [("?", "?", 0)]
        for file, func, line in where:
            by_func[f"{file}:{func}"] += t / len(where)
            by_line[f"{file}:{line}"] += t / len(where)

    def rows(items, key):
        return [
            {key: k, "us_per_env_step": round(v / env_steps, 4), "share": round(v / executed, 4)}
            for k, v in sorted(items, key=lambda x: -x[1])[: args.top]
        ]

    payload = dict(
        machine=machine(),
        what=__doc__.splitlines()[0],
        batch=args.batch,
        steps=args.steps,
        repeats=args.repeats,
        static_layout=args.static_layout,
        program="world step" if args.world else "full step",
        executed_us_per_env_step=round(executed / env_steps, 3),
        operations=rows(by_op, "operation"),
        functions=rows(by_func.items(), "function"),
        lines=rows(by_line.items(), "line"),
    )
    print(f"executed: {payload['executed_us_per_env_step']} us (wall, thunks) per env-step, batch {args.batch}")
    for title, key in (("operations", "operation"), ("functions", "function"), ("lines", "line")):
        print(f"\ntop {title}:")
        for r in payload[title][:15]:
            print(f"  {100 * r['share']:5.1f}%  {r[key]}")
    if not args.no_save:
        print(f"\nwrote {save_experiment('fusion_profile_world' if args.world else 'fusion_profile', payload)}")
    return payload


if __name__ == "__main__":
    main()
