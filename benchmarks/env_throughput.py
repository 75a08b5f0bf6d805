"""Env-steps per second of the FULL environment step, `normjax.env.env_step`.

One env-step here is everything an agent-environment loop pays per step:

* the scripted community planner for all K slots (`community_actions`:
  one-step prediction, norm-aware goal choice, per-action norm masks),
* the world step (`step_world`: forced waits, the 50-norm evaluation and the
  episode's sanctions, physics with collisions and pushes, tasks, rewards,
  turnover and entry),
* the newcomer's DQN observation (`observe`, docs/world.md §10, flattened),

with uniformly random newcomer actions (slot 0), K = 10, training-phase params
on the cafe (200-step horizon, newcomer replaced), and the 50 norms mixed across
the batch (env i gets norm i % 50).  Each timed call is a jit(vmap) of
`--steps` steps scanned from a fresh reset; the reset is outside the timed
region.  Compile time is excluded from throughput and reported separately.

    python -m benchmarks.env_throughput --batches 1 64 1024 4096
    python -m benchmarks.env_throughput --protocol      # also time normjax.protocol.evaluate

Results: benchmarks/results/env_throughput.json and env_throughput.png.

`--protocol`: the whole protocol run (50 norms x 6 test episodes = 300
episodes, each a fixed 100-step scan) is timed for the norm-aware planner
(`oracle_policy`), compile time separate (`evaluate`'s `timing` dict).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from benchmarks.common import RESULTS, block, save, time_compiled
from normjax import constants as C
from normjax.env import env_step, oracle_policy, phase_params
from normjax.protocol import evaluate
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

CAPACITY = 10


def batch_params(batch: int, static_layout: bool = False):
    """Training-phase params on the cafe, norm i % 50 for env i (`static_layout`:
    the single-layout fast path, tables as compile-time constants)."""
    p = phase_params("train", 0, 0, static_layout=static_layout)
    p = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), p)
    return p.replace(norm_id=(jnp.arange(batch) % 50).astype(jnp.int32))


@jax.jit
def batch_reset(keys, params):
    return jax.vmap(lambda k, p: reset_world(k, p, WorldConfig(capacity=CAPACITY)))(keys, params)


def full_step(key, state, action, params):
    """The full environment step seen by a learner (`normjax.env.env_step`)."""
    k_comm, k_world = jax.random.split(key)
    obs, state, info = env_step(k_comm, k_world, state, action, params)
    return obs.flat(), state, info.reward[0]


def make_rollout(n_steps: int):
    """jit(vmap) of n_steps full env steps with random newcomer actions."""

    def one_env(key, state, params):
        def body(carry, _):
            state, key, acc = carry
            key, ka, ks = jax.random.split(key, 3)
            action = jax.random.randint(ka, (), 0, C.N_ACTIONS)
            obs, state, r = full_step(ks, state, action, params)
            # Consume the observation so it is not dead code.
            return (state, key, acc + r + obs[0] * 0.0), None

        (state, _, acc), _ = jax.lax.scan(body, (state, key, jnp.float32(0.0)), None, length=n_steps)
        return acc, state.t

    return jax.jit(jax.vmap(one_env))


def bench_env(batches, steps_for, static_layout=False):
    rows = []
    fns = {}
    for batch in batches:
        n_steps = steps_for(batch)
        fn = fns.setdefault(n_steps, make_rollout(n_steps))
        keys = jax.random.split(jax.random.PRNGKey(0), batch)
        params = batch_params(batch, static_layout)
        state = block(batch_reset(keys, params))
        run_keys = jax.random.split(jax.random.PRNGKey(1), batch)
        t0 = time.perf_counter()
        compile_s, run_s, _ = time_compiled(fn, run_keys, state, params, repeats=2)
        total = time.perf_counter() - t0
        sps = batch * n_steps / run_s
        rows.append(
            dict(
                batch=batch,
                steps=n_steps,
                compile_s=round(compile_s, 3),
                run_s=round(run_s, 4),
                steps_per_s=round(sps, 1),
                us_per_env_step=round(1e6 / sps, 3),
                wall_s=round(total, 2),
            )
        )
        print(
            f"batch {batch:>6}  {sps:>12,.0f} env-steps/s  ({1e6 / sps:8.2f} us/env-step; "
            f"{n_steps} steps in {run_s:.3f}s; compile {compile_s:.1f}s)",
            flush=True,
        )
    return rows


def bench_protocol():
    """Time `normjax.protocol.evaluate` (300 episodes) for the oracle policy, compile separate."""
    timing = {}
    out = evaluate(oracle_policy, capacity=CAPACITY, timing=timing)
    result = {
        "policy": "oracle_policy",
        "episodes": int(timing["n_episodes"]),
        "compile_s": round(timing["compile_s"], 3),
        "run_s": round(timing["run_s"], 3),
    }
    result["episodes_per_s"] = round(result["episodes"] / result["run_s"], 2)
    result["env_steps_per_s_upper"] = round(result["episodes"] * 100 / result["run_s"], 1)
    result["seen_overall"] = out["seen"]["overall"]
    result["unseen_overall"] = out["unseen"]["overall"]
    print(
        f"protocol ({result['episodes']} episodes, oracle): run {result['run_s']:.2f}s, "
        f"compile {result['compile_s']:.1f}s",
        flush=True,
    )
    return result


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog([r["batch"] for r in rows], [r["steps_per_s"] for r in rows], "o-", label="full env step")
    for r in rows:
        ax.annotate(
            f"{r['steps_per_s']:,.0f}",
            (r["batch"], r["steps_per_s"]),
            fontsize=7,
            textcoords="offset points",
            xytext=(4, -10),
        )
    ax.set_xlabel("batch (environments)")
    ax.set_ylabel("env-steps / s")
    ax.set_title("normjax full env step (community+world+obs), K=10", fontsize=10)
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024, 4096, 16384])
    ap.add_argument("--steps", type=int, default=100, help="steps per timed rollout at small batches")
    ap.add_argument(
        "--max-env-steps",
        type=int,
        default=200_000,
        help="cap on batch x steps per timed call (large batches scan fewer steps)",
    )
    ap.add_argument("--protocol", action="store_true", help="also time normjax.protocol.evaluate")
    ap.add_argument("--name", default="env_throughput", help="result file name (without extension)")
    ap.add_argument(
        "--static-layout",
        action="store_true",
        help="single-layout fast path (WorldParams.static_layout): the layout's tables as constants",
    )
    args = ap.parse_args(argv)

    def steps_for(batch):
        return max(5, min(args.steps, args.max_env_steps // batch))

    rows = bench_env(args.batches, steps_for, args.static_layout)
    payload = {
        "what": "full env step (normjax.env.env_step): community planner + world step + observation; random newcomer; "
        "K=10; cafe; train-phase params; norms mixed (env i -> norm i % 50)",
        "static_layout": args.static_layout,
        "rows": rows,
    }
    if args.protocol:
        payload["protocol"] = bench_protocol()
    path = save(args.name, payload)
    print(f"saved {path}")
    try:
        plot(rows, RESULTS / f"{args.name}.png")
        print(f"saved {RESULTS / (args.name + '.png')}")
    except Exception as e:  # plotting is optional; the JSON is the result
        print(f"plot skipped: {e}")


if __name__ == "__main__":
    main()
