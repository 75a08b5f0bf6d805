"""What the ideal observer costs beside the environment step.

A real interaction-phase rollout (batch B, the cafe, one norm-blind member,
norms mixed: env i gets norm i % 50, random newcomer actions) is recorded for
T steps, with the observer's belief carried along.  Each stage is then timed as
`jit(scan over the T recorded steps of vmap(stage))`, as in
`benchmarks/stage_breakdown.py`:

* env_step        `env_step` (community planner + world step + observation),
                  the whole new state and observation kept
* update          the belief update `normjax.observer.update`, positions evidence,
                  the whole new belief kept
* update_actions  the same with the public effective actions as evidence
* env+update      both in one step (what an observing newcomer runs)
* bayes_map       the newcomer's action: the planner under the MAP norm
* bayes_safe      bayes_map plus the newcomer's [50, 5] masks

Per stage: microseconds per env-step (best of interleaved rounds), the ratio
to env_step, and XLA's cost
analysis of ONE compiled vmapped step (bytes accessed and FLOPs per env-step;
while-loop bodies are counted once, so these are lower bounds where loops run).

    python -m benchmarks.observer_cost --batch 1024 --steps 20

Results: benchmarks/results/observer_cost.json.
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import block, compile_timed, save
from normjax import constants as C
from normjax.env import env_step, phase_params
from normjax.layouts.tables import world_tables
from normjax.observer import bayes_map, bayes_safe, init_belief, update
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world


def batch_params(batch: int):
    p = phase_params("interaction", 0, 0)
    p = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), p)
    return p.replace(norm_id=(jnp.arange(batch) % 50).astype(jnp.int32))


def _lt(p):
    return world_tables().at(p.layout_id)


def record(batch: int, steps: int):
    """(states, infos, beliefs, actions, keys) [T, B] of a real rollout, and params [B]."""
    params = batch_params(batch)
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    state = jax.jit(jax.vmap(lambda k, p: reset_world(k, p, WorldConfig())))(keys, params)
    belief = jax.jit(jax.vmap(lambda s, p: init_belief(_lt(p), s)))(state, params)

    @jax.jit
    def run(state, belief, key):
        def body(carry, k):
            s, b = carry
            kb = jax.random.split(k, batch)
            ka, kc, kw = jax.vmap(lambda x: jax.random.split(x, 3))(kb).transpose(1, 0, 2)
            a = jax.random.randint(ka[0], (batch,), 0, C.N_ACTIONS)
            _, s2, info = jax.vmap(env_step)(kc, kw, s, a, params)
            b2 = jax.vmap(lambda bb, ss, ii, pp: update(bb, ss, ii, _lt(pp)))(b, s, info, params)
            return (s2, b2), (s, info, b, a, kc)

        return jax.lax.scan(body, (state, belief), jax.random.split(key, steps))[1]

    return block(run(state, belief, jax.random.PRNGKey(1))), params


def _checksum(x):
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(x) if jnp.size(leaf))


def _finite(x):
    return jax.tree.map(lambda v: jnp.where(jnp.isfinite(v), v, 0) if v.dtype.kind == "f" else v, x)


def _env(k, s, i, b, a, p):
    obs, s2, _ = env_step(k, k, s, a, p)
    return obs.flat(), s2  # everything a rollout carries on: nothing is dead code


def _update(source):
    def fn(k, s, i, b, a, p):
        return _finite(update(b, s, i, _lt(p), 0.0, source))

    return fn


def _env_and_update(k, s, i, b, a, p):
    obs, s2, info = env_step(k, k, s, a, p)
    return obs.flat(), s2, _finite(update(b, s, info, _lt(p)))


# Each stage: one step for one environment, (key, state, info, belief, action, params) -> output.
# Outputs are whole states / beliefs, as in a rollout (a partial output would let XLA drop work).
STAGES = {
    "env_step": _env,
    "update": _update("positions"),
    "update_actions": _update("actions"),
    "env+update": _env_and_update,
    "bayes_map": lambda k, s, i, b, a, p: bayes_map(k, s, p, b),
    "bayes_safe": lambda k, s, i, b, a, p: bayes_safe(k, s, p, b),
}


def stage_program(fn, params):
    @jax.jit
    def run(xs):
        def body(acc, x):
            s, info, b, a, k = x
            return acc + _checksum(jax.vmap(fn)(k, s, info, b, a, params)), None

        return jax.lax.scan(body, jnp.float32(0), xs)[0]

    return run


def one_step_cost(fn, xs, params) -> dict:
    s, info, b, a, k = jax.tree.map(lambda x: x[0], xs)
    cost = jax.jit(jax.vmap(fn)).lower(k, s, info, b, a, params).compile().cost_analysis()
    return cost[0] if isinstance(cost, (list, tuple)) else cost


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument(
        "--rounds",
        type=int,
        default=7,
        help="timing rounds; each round runs every stage once (interleaved, so load drift on a "
        "shared machine hits all stages alike); the best round per stage is kept",
    )
    ap.add_argument("--name", default="observer_cost")
    args = ap.parse_args(argv)
    xs, params = record(args.batch, args.steps)
    n = args.batch * args.steps
    programs, rows = {}, {}
    for name, fn in STAGES.items():
        compiled, compile_s = compile_timed(stage_program(fn, params), xs)
        block(compiled(xs))  # warm-up
        cost = one_step_cost(fn, xs, params)
        programs[name] = compiled
        rows[name] = dict(
            kb_accessed_per_env_step=round(cost.get("bytes accessed", 0.0) / args.batch / 1e3, 2),
            flops_per_env_step=round(cost.get("flops", 0.0) / args.batch, 1),
            compile_s=round(compile_s, 2),
        )
    times = {name: [] for name in STAGES}
    for _ in range(args.rounds):
        for name, compiled in programs.items():
            t0 = time.perf_counter()
            block(compiled(xs))
            times[name].append(time.perf_counter() - t0)
    for name, r in rows.items():
        r["us_per_env_step"] = round(1e6 * min(times[name]) / n, 3)
        r["us_per_env_step_median"] = round(1e6 * float(np.median(times[name])) / n, 3)
        print(
            f"{name:<15} {r['us_per_env_step']:8.2f} us/env-step (median {r['us_per_env_step_median']:.2f})  "
            f"{r['kb_accessed_per_env_step']:8.2f} KB  {r['flops_per_env_step']:>10,.0f} FLOP  "
            f"(compile {r['compile_s']:.1f}s)",
            flush=True,
        )
    base = rows["env_step"]
    for r in rows.values():
        r["time_vs_env_step"] = round(r["us_per_env_step"] / base["us_per_env_step"], 3)
        r["bytes_vs_env_step"] = round(r["kb_accessed_per_env_step"] / max(base["kb_accessed_per_env_step"], 1e-9), 3)
        r["flops_vs_env_step"] = round(r["flops_per_env_step"] / max(base["flops_per_env_step"], 1e-9), 3)
    added = rows["env+update"]["us_per_env_step"] / base["us_per_env_step"] - 1.0
    print(
        f"the update adds {100 * rows['update']['time_vs_env_step']:.1f}% to the env step timed alone, "
        f"{100 * added:.1f}% when fused into it (target < 30%); "
        f"{100 * rows['update']['flops_vs_env_step']:.0f}% of its FLOPs, "
        f"{100 * rows['update']['bytes_vs_env_step']:.0f}% of its bytes"
    )
    path = save(
        args.name,
        {
            "what": __doc__.split("\n\n")[0],
            "batch": args.batch,
            "steps": args.steps,
            "rounds": args.rounds,
            "load_average_1min": round(os.getloadavg()[0], 2),
            "stages": rows,
            "update_added_fraction_fused": round(added, 3),
        },
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
