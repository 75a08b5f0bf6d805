"""Env-steps per second of the jitted, vmapped world step.

Measures `step_world` (physics, tasks, rewards, turnover, and the evaluation of
all 50 norms with the episode's sanctions) under random joint actions for
K = 10 at several batch sizes, plus the cost of the all-50 permissibility mask
alone.  Compile time is excluded from throughput and reported separately.
Results go to benchmarks/results/world_throughput.json and a plot .png.

    python -m benchmarks.world_throughput            # default batches
    python -m benchmarks.world_throughput --batches 1 64 --steps 50
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from benchmarks.common import RESULTS, save, time_compiled
from normjax import constants as C
from normjax.layouts.tables import world_tables
from normjax.norms import permissible, permissible_per_action
from normjax.world.state import WorldConfig, make_params
from normjax.world.step import reset_world, step_world


def make_rollout(n_steps: int, with_norm: bool):
    """jit(vmap) of n_steps world steps with uniformly random joint actions."""

    def one_env(key, params):
        state = reset_world(key, params, WorldConfig(capacity=10))

        def body(carry, _):
            state, key = carry
            key, ka, ks = jax.random.split(key, 3)
            actions = jax.random.randint(ka, (10,), 0, C.N_ACTIONS)
            state, info = step_world(ks, state, actions, params)
            return (state, key), info.reward[0]

        (state, _), rewards = jax.lax.scan(body, (state, key), None, length=n_steps)
        return rewards.sum()

    return jax.jit(jax.vmap(one_env))


def make_mask_only(n_steps: int):
    """Cost of the all-50 mask [50, K] and per-action mask [50, K, 5] alone."""

    def one_env(key, params):
        state = reset_world(key, params, WorldConfig(capacity=10))
        lt = world_tables().at(params.layout_id)
        ag = state.agents

        def body(acc, i):
            acts = jax.random.randint(jax.random.fold_in(key, i), (10,), 0, 5)
            m = permissible(lt, i, ag.pos, ag.active, acts, ag.group, ag.moves, ag.visited_q)
            pa = permissible_per_action(lt, i, ag.pos, ag.active, ag.group, ag.moves, ag.visited_q)
            return acc + m.sum() + pa.sum(), None

        acc, _ = jax.lax.scan(body, jnp.int32(0), jnp.arange(n_steps))
        return acc

    return jax.jit(jax.vmap(one_env))


def batch_params(batch: int, with_norm: bool):
    norm = jnp.arange(batch) % 50 if with_norm else jnp.full((batch,), -1)
    p = make_params(0, -1)
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), p).replace(
        norm_id=norm.astype(jnp.int32)
    )


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024, 4096, 16384])
    ap.add_argument("--steps", type=int, default=100, help="steps per timed rollout")
    args = ap.parse_args(argv)

    rows = []
    for kind in ("no_norm", "with_norms", "mask_only"):
        fn = make_mask_only(args.steps) if kind == "mask_only" else make_rollout(args.steps, kind == "with_norms")
        for batch in args.batches:
            keys = jax.random.split(jax.random.PRNGKey(0), batch)
            params = batch_params(batch, with_norm=(kind != "no_norm"))
            compile_s, run_s, _ = time_compiled(fn, keys, params)
            sps = batch * args.steps / run_s
            rows.append(
                dict(kind=kind, batch=batch, steps=args.steps, compile_s=compile_s, run_s=run_s, steps_per_s=sps)
            )
            print(
                f"{kind:>10}  batch {batch:>6}  {sps:>14,.0f} env-steps/s   "
                f"(run {run_s:.3f}s, compile {compile_s:.2f}s)",
                flush=True,
            )
    path = save("world_throughput", {"rows": rows})
    print(f"saved {path}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for kind in ("no_norm", "with_norms", "mask_only"):
            r = [x for x in rows if x["kind"] == kind]
            ax.loglog([x["batch"] for x in r], [x["steps_per_s"] for x in r], "o-", label=kind)
        ax.set_xlabel("batch (environments)")
        ax.set_ylabel("env-steps / s")
        ax.set_title("normjax world step, K=10")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(RESULTS / "world_throughput.png", dpi=120)
        print(f"saved {RESULTS / 'world_throughput.png'}")
    except Exception as e:  # plotting is optional; the JSON is the result
        print(f"plot skipped: {e}")


if __name__ == "__main__":
    main()
