"""Training throughput of the in-graph DQN population.

Transitions per second for the 50-norm population (one run per norm, one
reward condition), DQN-MLP and DQN-CNN, each measured over a compiled block of
chunks after a warm-up block; compile time reported separately.  Every
transition includes the scripted community, the world step with norms, the
newcomer's observation, epsilon-greedy action selection, replay writes, and
one gradient update per 4 transitions (docs/world.md §10).

    python -m benchmarks.train_throughput                 # mlp and cnn, 50 runs
    python -m benchmarks.train_throughput --archs mlp --chunks 200
    python -m benchmarks.train_throughput --archs mlp --breakdown   # + env-only and update-only
    python -m benchmarks.train_throughput --archs cnn --breakdown-only  # only those, added to the saved row

`--breakdown` times the two halves of a chunk on their own: acting and
stepping the environment (community, world, observation, epsilon-greedy
forward pass, episode resets) and the learning step (replay sampling and one
gradient update per run).  Their projected minutes for 50 runs x 1M
transitions show which half bounds the whole.  The update half is also given
as attained GFLOP/s (XLA's FLOP count of the compiled update over its time),
beside the rate of a large float32 matrix product on the same device: the
distance to what the hardware does on dense work.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import RESULTS, save
from normjax.train import replay as rp
from normjax.train.config import FIRST_LAYERS, DQNConfig
from normjax.train.dqn import make_train, per_device
from normjax.train.run import population_mesh, shard


def _setup(arch: str, buffer_size: int, runs_norms: int, seeds: int = 1, first_layer: str = "factorised"):
    cfg = DQNConfig(
        arch=arch,
        norms=("all",) if runs_norms == 50 else tuple(__import__("normjax").NORMS[i].name for i in range(runs_norms)),
        seeds_per_norm=seeds,
        total_steps=1_000_000,
        buffer_size=buffer_size,
        learning_starts=0,
        first_layer=first_layer,
    )
    tr = make_train(cfg)
    # As in training: with several devices (e.g. XLA_FLAGS=--xla_force_host_platform_device_count=2)
    # the run axis is sharded over them.
    mesh = population_mesh(len(tr.rows))
    tr = dataclasses.replace(tr, specs=shard(tr.specs, mesh))
    return cfg, tr, shard(tr.init_population(jax.random.PRNGKey(0)), mesh)


def _first_layer(cfg) -> str:
    """The first layer a row measured: DQN-CNN's is always dense (train.first_layer)."""
    return cfg.first_layer if cfg.arch == "mlp" else "dense"


def _devices(tr) -> int:
    return len(jax.tree.leaves(tr.specs)[0].sharding.device_set)


def _mesh(tr):
    """The mesh the runs are sharded over, or None on one device (as `train.run`)."""
    return jax.tree.leaves(tr.specs)[0].sharding.mesh if _devices(tr) > 1 else None


def _time(fn, carry, specs, flops: list | None = None):
    """(compile seconds, seconds of the second call) of fn(carry, specs), carry donated.
    `flops`, when given, receives XLA's FLOP count of the compiled program."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn, donate_argnums=0).lower(carry, specs).compile()
    compile_s = time.perf_counter() - t0
    if flops is not None:
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        flops.append(float((cost or {}).get("flops", float("nan"))))
    carry = jax.block_until_ready(compiled(carry, specs))  # warm-up block
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(carry, specs))
    return compile_s, time.perf_counter() - t0


def matmul_gflops(n: int = 1024, repeats: int = 5) -> float:
    """This device's attained float32 matrix-product rate (GFLOP/s): the best of
    `repeats` n x n x n products, a practical peak to set the update's rate against."""
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    jax.block_until_ready(f(a))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(a))
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def measure(arch: str, chunks: int, buffer_size: int, runs_norms: int, seeds: int = 1, first_layer: str = "factorised"):
    cfg, tr, carry = _setup(arch, buffer_size, runs_norms, seeds, first_layer)
    compile_s, run_s = _time(lambda c, s: tr.run_chunks(c, s, chunks, mesh=_mesh(tr)), carry, tr.specs)
    n_runs = len(tr.rows)
    transitions = n_runs * chunks * cfg.train_freq
    return dict(
        arch=arch,
        runs=n_runs,
        devices=_devices(tr),
        first_layer=_first_layer(cfg),
        chunks=chunks,
        transitions=transitions,
        run_s=run_s,
        compile_s=compile_s,
        transitions_per_s=transitions / run_s,
        projected_minutes_for_1M_each=n_runs * 1_000_000 / (transitions / run_s) / 60,
    )


def measure_parts(
    arch: str, chunks: int, buffer_size: int, runs_norms: int, seeds: int = 1, first_layer: str = "factorised"
):
    """Env-only and update-only blocks of `chunks` chunks (see the module docstring)."""
    cfg, tr, carry = _setup(arch, buffer_size, runs_norms, seeds, first_layer)
    n_runs = len(tr.rows)

    # Each part as the trainer runs it: on several devices, each device its own runs.
    def env_only(c, specs):
        def body(runners, _):
            runners, _items = jax.vmap(tr.collect)(runners, specs)
            return tr.reset_due(runners, specs), None

        return jax.lax.scan(body, c[0], None, length=chunks)[0], c[1]

    def update_only(c, specs):
        def body(runners, _):
            keys = jax.vmap(lambda k: jax.random.split(k))(runners.key)
            batch = rp.sample(c[1], keys[:, 1], cfg.batch_size)
            return tr.update_population(runners.replace(key=keys[:, 0]), batch), None

        return jax.lax.scan(body, c[0], None, length=chunks)[0], c[1]

    out = {}
    for name, fn in (("env", env_only), ("update", update_only)):
        flops: list = []
        compile_s, run_s = _time(per_device(fn, _mesh(tr)), carry, tr.specs, flops)
        carry = _setup(arch, buffer_size, runs_norms, seeds, first_layer)[2]  # the last part consumed (donated) it
        per_s = n_runs * chunks * (cfg.train_freq if name == "env" else 1) / run_s
        total = 1_000_000 * n_runs / (1 if name == "env" else cfg.train_freq)
        out[name] = dict(
            run_s=run_s,
            compile_s=compile_s,
            per_s=per_s,
            unit="transitions" if name == "env" else "updates",
            projected_minutes_for_1M_each=total / per_s / 60,
        )
        if name == "update":
            # XLA counts the scanned body (one chunk: one update per run) once, and
            # a program sharded over several devices per device.
            total = flops[0] * _devices(tr)
            out[name]["gflop_per_s"] = total * chunks / run_s / 1e9
            out[name]["flops_per_update"] = total / n_runs
    return dict(arch=arch, runs=n_runs, devices=_devices(tr), first_layer=_first_layer(cfg), chunks=chunks, parts=out)


def ab_first_layers(chunks: int, buffer_size: int, runs_norms: int, rounds: int) -> dict:
    """DQN-MLP's whole chunk with the dense and the factorised first layer, both compiled in
    this process and timed alternately for `rounds` rounds: the per-round ratio is far less
    disturbed by other load on a shared machine than two separate runs."""
    progs = {}
    for layer in FIRST_LAYERS:
        cfg, tr, carry = _setup("mlp", buffer_size, runs_norms, 1, layer)
        fn = jax.jit(lambda c, s, tr=tr: tr.run_chunks(c, s, chunks, mesh=_mesh(tr)), donate_argnums=0)
        t0 = time.perf_counter()
        compiled = fn.lower(carry, tr.specs).compile()
        progs[layer] = [compiled, jax.block_until_ready(compiled(carry, tr.specs)), tr.specs, time.perf_counter() - t0]
    times = {layer: [] for layer in progs}
    for _ in range(rounds):
        for layer, p in progs.items():
            t0 = time.perf_counter()
            p[1] = jax.block_until_ready(p[0](p[1], p[2]))
            times[layer].append(time.perf_counter() - t0)
    n = runs_norms * chunks * 4  # transitions per timed block
    ratios = [d / f for d, f in zip(times["dense"], times["factorised"])]
    return {
        "runs": runs_norms,
        "chunks": chunks,
        "rounds": rounds,
        "devices": _devices(tr),
        "transitions_per_s": {k: [n / t for t in v] for k, v in times.items()},
        "compile_and_first_block_s": {k: p[3] for k, p in progs.items()},
        "speedup_per_round": ratios,
        "speedup_median": float(np.median(ratios)),
    }


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archs", nargs="+", default=["mlp", "cnn"])
    ap.add_argument("--chunks", type=int, default=250, help="chunks (4 transitions per run) per timed block")
    ap.add_argument("--buffer-size", type=int, default=10_000)
    ap.add_argument("--norms", type=int, default=50, help="population size (first N norms)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per norm (population = norms x seeds)")
    ap.add_argument(
        "--first-layer",
        default="factorised",
        choices=FIRST_LAYERS,
        help="DQN-MLP's first layer in training (train.first_layer); rows keep it",
    )
    ap.add_argument("--breakdown", action="store_true", help="also time env-only and update-only blocks")
    ap.add_argument(
        "--breakdown-only",
        action="store_true",
        help="time only the env-only and update-only blocks, added to the saved row of the same "
        "architecture and population (e.g. after a run without --breakdown)",
    )
    ap.add_argument(
        "--ab-rounds",
        type=int,
        default=0,
        help="instead: time the dense and factorised DQN-MLP chunk alternately in one process "
        "for this many rounds (saved to train_first_layer_ab_<N>dev.json)",
    )
    args = ap.parse_args(argv)
    if args.ab_rounds:
        r = ab_first_layers(args.chunks, args.buffer_size, args.norms, args.ab_rounds)
        for layer, v in r["transitions_per_s"].items():
            print(f"mlp {layer}: {', '.join(f'{x:,.0f}' for x in v)} transitions/s")
        print(
            f"factorised / dense per round: {', '.join(f'{x:.2f}' for x in r['speedup_per_round'])} "
            f"(median {r['speedup_median']:.2f}) on {r['devices']} device(s)"
        )
        print("saved", save(f"train_first_layer_ab_{r['devices']}dev", r))
        return
    # Rows of (architecture, population size, devices) not measured this time are kept (e.g. --archs mlp);
    # the file is rewritten after every architecture, so a later failure keeps the earlier rows.
    path = RESULTS / "train_throughput.json"
    # Rows from before the factorised first layer have no "first_layer": they were dense.
    key = lambda r: (r["arch"], r["runs"], r.get("devices", 1), r.get("first_layer", "dense"))
    old = json.loads(path.read_text()).get("rows", []) if path.exists() else []
    rows = []

    def write():
        measured = {key(r) for r in rows}
        return save("train_throughput", {"rows": [r for r in old if key(r) not in measured] + rows})

    for arch in args.archs:
        chunks = args.chunks if arch == "mlp" else max(args.chunks // 5, 10)
        if args.breakdown_only:
            parts = measure_parts(arch, chunks, args.buffer_size, args.norms, args.seeds, args.first_layer)
            prev = [r for r in old if key(r) == key(parts)]
            r = dict(prev[-1]) if prev else {k: parts[k] for k in ("arch", "runs", "devices", "first_layer")}
            r["parts"] = parts["parts"]
            r["parts_chunks"] = chunks
            rows.append(r)
        else:
            r = measure(arch, chunks, args.buffer_size, args.norms, args.seeds, args.first_layer)
            print(
                f"{arch} ({r['first_layer']}): {r['transitions_per_s']:,.0f} transitions/s for {r['runs']} runs on "
                f"{r['devices']} "
                f"device(s) (compile {r['compile_s']:.1f}s); 1M each would take "
                f"{r['projected_minutes_for_1M_each']:.0f} min",
                flush=True,
            )
            rows.append(r)
            if args.breakdown:
                saved = write()  # the main row is kept if the breakdown fails
                r["parts"] = measure_parts(arch, chunks, args.buffer_size, args.norms, args.seeds, args.first_layer)[
                    "parts"
                ]
        for name, p in r.get("parts", {}).items():
            print(
                f"  {arch} {name} only: {p['per_s']:,.0f} {p['unit']}/s -> {p['projected_minutes_for_1M_each']:.0f} "
                f"min of the 1M-each budget (compile {p['compile_s']:.1f}s)",
                flush=True,
            )
        if "parts" in r:
            r["matmul_gflop_per_s"] = matmul_gflops()
            u = r["parts"]["update"]
            print(
                f"  {arch} update: {u['flops_per_update'] / 1e6:.2f} MFLOP per update, {u['gflop_per_s']:.1f} "
                f"GFLOP/s attained, against {r['matmul_gflop_per_s']:.0f} GFLOP/s of a 1024^3 float32 matrix "
                f"product ({u['gflop_per_s'] / r['matmul_gflop_per_s']:.0%})",
                flush=True,
            )
        saved = write()
    print(f"saved {saved}")


if __name__ == "__main__":
    main()
