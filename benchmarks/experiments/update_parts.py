"""Where one DQN update's time goes: the layers' share of parameters and FLOPs, and the optimiser's.

Issue 37 asked for DQN-CNN's convolutions to be made cheaper "where the CPU allows".
This script shows where an update of the 50-run population spends its time, so that
the question can be answered from numbers:

* per layer: parameters and forward FLOPs per observation, counted from the kernels'
  shapes (a 3x3 convolution: 2 x H x W x 9 x C_in x C_out; a dense layer: 2 x in x out);
* three programs, each `updates` updates of every run (`lax.scan` over `vmap`), on
  random minibatches of the trainer's width (the dense layers' time does not depend on
  the values):

  - `update`          the trainer's learning step: the TD loss's gradient, global-norm
                      clipping and Adam (`train.dqn.td_loss`, `train.first_layer`'s `tx`)
  - `update_sgd`      the same gradient, then a plain SGD step instead of clipping and Adam
  - `optimiser_only`  clipping and Adam on a fixed gradient, no forward or backward pass

  timed in interleaved rounds in one process (process CPU time, best of three after a
  warm-up), with XLA's count of FLOPs and bytes accessed for each;
* with `--profile`, the compiled operations of `update` that take the most time, from a
  `jax.profiler` trace of one call (as `fusion_profile.py` reads it; pin the process to
  one core with `taskset -c 0` so that no operation's time includes waiting for a thread).

    python -m benchmarks.experiments.update_parts --arch cnn                  # 50 runs, 5 updates per program
    python -m benchmarks.experiments.update_parts --arch mlp --first-layer dense --updates 100
    taskset -c 0 python -m benchmarks.experiments.update_parts --arch cnn --runs 10 --profile

Results: benchmarks/experiments/results/update_parts_<arch>[_<first layer>].json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks.common import best_of, compile_timed, save_experiment, xla_cost
from benchmarks.experiments.fusion_profile import operations, trace_times
from normjax import constants as C
from normjax.train.config import FIRST_LAYERS, DQNConfig
from normjax.train.dqn import td_loss
from normjax.train.first_layer import training_net
from normjax.world.observation import obs_size

PROGRAMS = ("update", "update_sgd", "optimiser_only")


def layer_table(params, n_obs_planes_hw: tuple[int, int]) -> dict:
    """Parameters and forward FLOPs per observation of each top-level layer of one run."""
    h, w = n_obs_planes_hw
    out = {}
    for name, layer in params.items():
        leaves = jax.tree.leaves(layer)
        n_params = int(sum(x.size for x in leaves))
        kernels = [x for x in leaves if x.ndim >= 2]
        flops = 0
        for k in kernels:
            flops += 2 * h * w * k.size if k.ndim == 4 else 2 * k.size  # conv: every cell; dense: once
        out[name] = {"params": n_params, "forward_flops_per_obs": flops}
    return out


def _cost(compiled) -> dict:
    c = xla_cost(compiled)
    return {"flops": c["flops"], "bytes_accessed": c["bytes"]}


def profile(compiled, args, top: int) -> dict:
    """The `top` compiled operations of one call by wall time, with their share of it."""
    hlo = compiled.as_text()
    ops = operations(hlo)
    shapes = {
        ln.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%"): ln.split(" = ")[1].split(" ")[0]
        for ln in hlo.splitlines()
        if " = " in ln
    }
    jax.block_until_ready(compiled(*args))
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp, create_perfetto_trace=True)
        jax.block_until_ready(compiled(*args))
        jax.profiler.stop_trace()
        times = trace_times(tmp)
    executed = times.get("ThunkExecutor::Execute", 0.0)
    rows = sorted(((n, t) for n, t in times.items() if n in ops), key=lambda x: -x[1])[:top]
    return {
        "executed_ms": executed / 1e3,
        "operations": [
            {"operation": n, "result": shapes.get(n, "?"), "ms": t / 1e3, "share": t / executed} for n, t in rows
        ],
    }


def build(arch: str, first_layer: str, runs: int, updates: int):
    cfg = DQNConfig(arch=arch, first_layer=first_layer)
    n_obs = obs_size(cfg.capacity)
    net = training_net(arch, first_layer, cfg.layout, n_obs, cfg.max_grad_norm, cfg.learning_rate)
    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    params, frozen = jax.vmap(net.init)(keys)
    width = len(net.columns)
    kb = jax.random.split(jax.random.PRNGKey(1), 4)
    batch = {
        "obs": jax.random.uniform(kb[0], (runs, cfg.batch_size, width)),
        "next_obs": jax.random.uniform(kb[1], (runs, cfg.batch_size, width)),
        "action": jax.random.randint(kb[2], (runs, cfg.batch_size), 0, C.N_ACTIONS),
        "reward": jax.random.normal(kb[3], (runs, cfg.batch_size)),
        "terminated": jnp.zeros((runs, cfg.batch_size)),
    }
    opt_state = jax.vmap(net.tx.init)(params)

    def grad_of(p, fz, b):
        return jax.grad(lambda q: td_loss(lambda pp, x: net.apply(pp, fz, x), q, p, b, cfg.gamma)[0])(p)

    def one(kind):
        def step(p, s, fz, b, g):
            if kind != "optimiser_only":
                g = grad_of(p, fz, b)
            if kind == "update_sgd":
                return jax.tree.map(lambda x, d: x - cfg.learning_rate * d, p, g), s
            upd, s = net.tx.update(g, s, p)
            return optax.apply_updates(p, upd), s

        def program(p, s, fz, b, g):
            def body(c, _):
                return jax.vmap(step)(c[0], c[1], fz, b, g), None

            return jax.lax.scan(body, (p, s), None, length=updates)[0]

        return jax.jit(program)

    grads = jax.jit(jax.vmap(grad_of))(params, frozen, batch)
    args = (params, opt_state, frozen, batch, grads)
    one_run = jax.tree.map(lambda x: x[0], params)
    return cfg, args, {k: one(k) for k in PROGRAMS}, one_run


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=("mlp", "cnn"), default="cnn")
    ap.add_argument(
        "--first-layer",
        choices=FIRST_LAYERS,
        default="dense",
        help="DQN-MLP's first layer in training (DQN-CNN is always dense)",
    )
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--updates", type=int, default=5, help="updates of every run per timed program")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also profile one call of `update` per operation")
    args = ap.parse_args(argv)
    first_layer = args.first_layer if args.arch == "mlp" else "dense"
    cfg, call_args, programs, one_run = build(args.arch, first_layer, args.runs, args.updates)

    layers = layer_table(one_run, (C.H, C.W))
    total = sum(v["forward_flops_per_obs"] for v in layers.values())
    n_params = sum(v["params"] for v in layers.values())
    for name, v in layers.items():
        print(
            f"{name:>6}: {v['params']:>10,} parameters, {v['forward_flops_per_obs'] / 1e6:7.3f} MFLOP forward "
            f"per observation ({v['forward_flops_per_obs'] / total:.0%})"
        )

    compiled, compile_s, cost = {}, {}, {}
    for name, fn in programs.items():
        compiled[name], compile_s[name] = compile_timed(fn, *call_args)
        # XLA counts a scan's body once: the cost of one update of every run.
        cost[name] = _cost(compiled[name])
    secs = {k: [] for k in PROGRAMS}
    for _ in range(args.rounds):
        for name in PROGRAMS:
            best, _ = best_of(compiled[name], *call_args, clock=time.process_time)
            secs[name].append(best / args.updates)  # CPU seconds per update of the population
    med = {k: statistics.median(v) for k, v in secs.items()}
    print(
        f"{args.runs} runs of DQN-{args.arch.upper()} ({first_layer}), {n_params:,} parameters each; "
        f"CPU seconds per update of the population (median of {args.rounds} rounds), XLA's count per update:"
    )
    for name in PROGRAMS:
        print(
            f"  {name:>15}: {med[name] * 1e3:8.1f} ms ({med[name] / med['update']:.0%} of update), "
            f"{cost[name]['flops'] / 1e9:6.2f} GFLOP, {cost[name]['bytes_accessed'] / 1e6:8.1f} MB accessed"
        )
    r = {
        "arch": args.arch,
        "first_layer": first_layer,
        "runs": args.runs,
        "updates_per_program": args.updates,
        "rounds": args.rounds,
        "batch_size": cfg.batch_size,
        "params_per_run": n_params,
        "layers": layers,
        "cpu_s_per_population_update": secs,
        "median_cpu_s_per_population_update": med,
        "share_of_update": {k: med[k] / med["update"] for k in PROGRAMS},
        "xla_cost_per_population_update": cost,
        "compile_s": compile_s,
    }
    if args.profile:
        r["profile_update"] = prof = profile(compiled["update"], call_args, top=12)
        print(f"update, one call of {args.updates} updates: {prof['executed_ms']:.0f} ms executed; top operations:")
        for o in prof["operations"]:
            print(f"  {100 * o['share']:5.1f}%  {o['operation']}  {o['result']}")
    suffix = args.arch if args.arch == "cnn" else f"{args.arch}_{first_layer}"
    print("saved", save_experiment(f"update_parts_{suffix}", r))


if __name__ == "__main__":
    main()
