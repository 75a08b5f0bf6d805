"""Where the full environment step spends its time: a stage breakdown.

A real rollout (batch B, train-phase params on the cafe, norms mixed: env i gets
norm i % 50, random newcomer actions) is recorded for T steps; then every stage
is timed as `jit(scan over the T recorded states of vmap(stage))`, so each call
sees the states of a real episode (nothing constant to hoist out of the loop):

* planner      `community_actions` (goal choice, prediction, per-action norm mask)
* norms        `episode_sanctions` of the episode's norm (the world step's part)
* physics      `resolve_moves` (collisions, pushes)
* progress     `progress`: goals, rewards, histories (on the step's recorded physics result)
* turnover     `turnover`: refills of exited slots, entry, t + 1 (on the recorded
               state after `progress`)
* world step   `step_world` (forced waits, norms, physics, progress, turnover)
* observation  `observe` of the newcomer, flattened
* full step    `env_step` (planner + world step + observation)

Times are this process's CPU time (all threads, `time.process_time`) per
env-step: on a shared machine far steadier than wall time.  The batch uses the
single-layout fast path (`WorldParams.static_layout`, the cafe), as training does.

Per stage: microseconds per env-step and share of the full step, and XLA's cost
analysis of one compiled vmapped step (bytes accessed and FLOPs per env-step; XLA
counts a while loop's body once, so these are lower bounds where loops run), plus a
summary of the compiled full step (while loops, gathers, scatters, fusions).

Beside the stages, the same count for one vmapped step through each environment's
public step at the same batch (`one_step_beside_references`): normjax's
`make("cafe", norm).step` (all-layouts path and single-layout path) and, where
the `[bench]` extra is installed, XLand-MiniGrid's Empty-8x8 and R1-9x9
(`env.step`, one rule of its own for R1), with the bytes each environment's state
takes.  Bytes per env-step mean little alone; beside a small reference environment
counted the same way on the same install, they say how far apart the steps are.

    python -m benchmarks.stage_breakdown --batch 1024 --steps 20
    python -m benchmarks.stage_breakdown --references-only   # only the one-step counts

Results: benchmarks/results/stage_breakdown.json.
"""

from __future__ import annotations

import argparse
import json
import re
import time

import jax
import jax.numpy as jnp

from benchmarks.common import RESULTS, best_of, block, compile_timed, save
from normjax import constants as C
from normjax.constants import ROLE_NEWCOMER
from normjax.env import community_actions, env_step, phase_params
from normjax.ground.moves import effective_actions
from normjax.layouts.tables import world_tables
from normjax.norms import episode_sanctions
from normjax.world.observation import observe
from normjax.world.physics import resolve_moves
from normjax.world.state import WorldConfig
from normjax.world.step import progress, reset_world, step_world, world_stages
from normjax.world.turnover import turnover


def batch_params(batch: int, static_layout: bool = True):
    p = phase_params("train", 0, 0, static_layout=static_layout)
    p = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), p)
    return p.replace(norm_id=(jnp.arange(batch) % 50).astype(jnp.int32))


def record(batch: int, steps: int):
    """(states [T, B], actions [T, B, K], keys [T, B], params [B]) of a real rollout.

    The world step runs as `world_stages` (what `step_world` runs), so the inputs of
    the later stages are recorded too:
    `joints` is (joint action, `Resolved`, state after `progress`)."""
    params = batch_params(batch)
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    state = jax.jit(jax.vmap(lambda k, p: reset_world(k, p, WorldConfig())))(keys, params)

    @jax.jit
    def run(state, key):
        def body(s, k):
            kb = jax.random.split(k, batch)
            ka, kc, kw = jax.vmap(lambda x: jax.random.split(x, 3))(kb).transpose(1, 0, 2)
            a = jax.random.randint(ka[0], (batch,), 0, C.N_ACTIONS)
            joint = jax.vmap(community_actions)(kc, s, params).at[:, 0].set(a)
            st = jax.vmap(world_stages)(kw, s, joint, params)
            return st.state, (s, (joint, st.resolved, st.progressed), kw)

        return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

    states, joints, wkeys = block(run(state, jax.random.PRNGKey(1)))
    return states, joints, wkeys, params


def _norms(key, s, rec, p):
    joint = rec[0]
    lt = world_tables().at(p.layout_id)
    ag = s.agents
    eff = effective_actions(lt.kind, ag.pos, joint)
    return episode_sanctions(lt, s.t, ag.pos, ag.active, eff, ag.group, ag.moves, ag.visited_q, p.norm_id)


def _physics(key, s, rec, p):
    joint = rec[0]
    lt = world_tables().at(p.layout_id)
    ag = s.agents
    eff = effective_actions(lt.kind, ag.pos, jnp.where(ag.active, joint, C.WAIT))
    return resolve_moves(key, ag.pos, ag.active, eff, lt.kind, ag.role != ROLE_NEWCOMER)


STAGES = {
    "planner": lambda k, s, rec, p: community_actions(k, s, p),
    "norms": _norms,
    "physics": _physics,
    "progress": lambda k, s, rec, p: progress(s, rec[1], world_tables().at(p.layout), p),
    "turnover": lambda k, s, rec, p: turnover(k, rec[2], rec[1].res.exited, world_tables().at(p.layout), p),
    # Whole outputs (state and step record), so no part of a step is dead code.
    "world_step": lambda k, s, rec, p: step_world(k, s, rec[0], p),
    "observation": lambda k, s, rec, p: observe(s, p).flat(),
    "full_step": lambda k, s, rec, p: env_step(k, k, s, rec[0][0], p),
}


def _checksum(x):
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(x))


def stage_program(fn):
    """jit of a scan over recorded steps of vmap(fn); returns a checksum (no dead code)."""

    @jax.jit
    def run(states, joints, keys, params):
        def body(acc, xs):
            s, j, k = xs
            return acc + _checksum(jax.vmap(fn)(k, s, j, params)), None

        return jax.lax.scan(body, jnp.float32(0), (states, joints, keys))[0]

    return run


def vmapped_cost(fn, *args) -> dict:
    """XLA's cost analysis of `jit(vmap(fn))(*args)`."""
    cost = jax.jit(jax.vmap(fn)).lower(*args).compile().cost_analysis()
    return cost[0] if isinstance(cost, (list, tuple)) else cost


def one_step_cost(fn, states, joints, keys, params) -> dict:
    """XLA's cost analysis of ONE vmapped step (loops' bodies are counted once by
    XLA, so a scanned program would under-report)."""
    first = jax.tree.map(lambda x: x[0], (states, joints, keys))
    return vmapped_cost(fn, first[2], first[0], first[1], params)


def public_step_cost(step, state, actions, batch: int) -> dict:
    """XLA's count for one `jit(vmap(step))(state, actions)`, per env, and the state's size."""
    cost = vmapped_cost(step, state, actions)
    state_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state)) / batch
    return dict(
        kb_accessed_per_env_step=round(cost.get("bytes accessed", 0.0) / batch / 1e3, 2),
        flops_per_env_step=round(cost.get("flops", 0.0) / batch, 1),
        state_kb_per_env=round(state_bytes / 1e3, 3),
    )


def _normjax_steps(norm: int) -> list:
    """(name, make_state(batch), step(state, actions)) of normjax's public step, both paths."""
    from normjax import make

    envs = [
        (name, make("cafe", norm, static_layout=static))
        for name, static in (("normjax_full_step", False), ("normjax_full_step_single_layout", True))
    ]
    return [
        (
            name,
            lambda b, env=env: jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), b))[1],
            lambda s, a, env=env: env.step(jax.random.PRNGKey(1), s, a),
        )
        for name, env in envs
    ]


def _xland_steps() -> list:
    """The same for XLand-MiniGrid's Empty-8x8 and R1-9x9; ImportError without the `[bench]` extra."""
    import xminigrid

    from benchmarks.compare_programs import own_ruleset

    out = []
    for name, env_id in (("xminigrid_empty_8x8", "MiniGrid-Empty-8x8"), ("xminigrid_r1_9x9", "XLand-MiniGrid-R1-9x9")):
        env, p = xminigrid.make(env_id)
        p = p.replace(ruleset=own_ruleset()[0]) if "XLand" in env_id else p
        out.append(
            (
                name,
                lambda b, env=env, p=p: jax.vmap(env.reset, in_axes=(None, 0))(
                    p, jax.random.split(jax.random.key(0), b)
                ),
                lambda t, a, env=env, p=p: env.step(p, t, a),
            )
        )
    return out


def references(batch: int, norm: int = 0) -> dict:
    """One vmapped step through each environment's public step, counted alike at
    `batch` and at 4x `batch`: the count per env-step at `batch`, and its split into
    a part that grows with the batch (KB per environment) and a part that does not
    (MB per call: XLA counts a whole table as read by a fused operation that
    reads entries of it)."""
    try:
        xland, missing = _xland_steps(), None
    except ImportError:
        xland, missing = [], 'not installed (pip install -e ".[bench]")'
    rows = {}
    for name, make_state, step in _normjax_steps(norm) + xland:
        small, big = (public_step_cost(step, make_state(b), jnp.zeros(b, jnp.int32), b) for b in (batch, 4 * batch))
        per_env = (big["kb_accessed_per_env_step"] * 4 - small["kb_accessed_per_env_step"]) / 3
        rows[name] = dict(
            small,
            kb_per_env=round(per_env, 2),
            mb_per_call=round((small["kb_accessed_per_env_step"] - per_env) * batch / 1e3, 2),
        )
    if missing:
        rows["xminigrid"] = missing
    return rows


def report_references(batch: int) -> dict:
    refs = references(batch)
    for name, r in refs.items():
        print(
            f"{name:<32} "
            + (
                r
                if isinstance(r, str)
                else f"{r['kb_accessed_per_env_step']:8.2f} KB  {r['flops_per_env_step']:>10,.0f} FLOP  "
                f"state {r['state_kb_per_env']:.2f} KB; {r['kb_per_env']:.2f} KB per env "
                f"+ {r['mb_per_call']:.2f} MB per call"
            ),
            flush=True,
        )
    return refs


def hlo_summary(compiled) -> dict:
    text = compiled.as_text()
    return {
        "while_loops": len(re.findall(r"\bwhile\(", text)),
        "gathers": len(re.findall(r"\bgather\(", text)),
        "scatters": len(re.findall(r"\bscatter\(", text)),
        "fusions": len(re.findall(r"\bfusion\(", text)) + len(re.findall(r"= \S+ fusion\(", text)),
    }


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--name", default="stage_breakdown")
    ap.add_argument(
        "--references-only",
        action="store_true",
        help="only the one-step counts beside the reference environments, replacing those of the "
        "saved results (stages kept)",
    )
    args = ap.parse_args(argv)
    if args.references_only:
        saved = json.loads((RESULTS / f"{args.name}.json").read_text())
        saved.pop("machine", None)
        save(args.name, dict(saved, one_step_beside_references=report_references(args.batch)))
        return
    states, joints, keys, params = record(args.batch, args.steps)
    n = args.batch * args.steps
    rows = {}
    for name, fn in STAGES.items():
        prog = stage_program(fn)
        compiled, compile_s = compile_timed(prog, states, joints, keys, params)
        run_s, _ = best_of(compiled, states, joints, keys, params, repeats=3, clock=time.process_time)
        cost = one_step_cost(fn, states, joints, keys, params)
        rows[name] = dict(
            cpu_us_per_env_step=round(1e6 * run_s / n, 3),
            kb_accessed_per_env_step=round(cost.get("bytes accessed", 0.0) / args.batch / 1e3, 2),
            flops_per_env_step=round(cost.get("flops", 0.0) / args.batch, 1),
            compile_s=round(compile_s, 2),
        )
        print(
            f"{name:<12} {rows[name]['cpu_us_per_env_step']:8.2f} CPU-us/env-step  "
            f"{rows[name]['kb_accessed_per_env_step']:8.2f} KB  {rows[name]['flops_per_env_step']:>10,.0f} FLOP  "
            f"(compile {compile_s:.1f}s)",
            flush=True,
        )
    full = rows["full_step"]["cpu_us_per_env_step"]
    for r in rows.values():
        r["share_of_full_step"] = round(r["cpu_us_per_env_step"] / full, 3)
    full_prog = jax.jit(jax.vmap(lambda k, s, a, p: env_step(k, k, s, a, p)[1]))
    s0 = jax.tree.map(lambda x: x[0], states)
    compiled = full_prog.lower(keys[0], s0, joints[0][0][:, 0], params).compile()
    summary = hlo_summary(compiled)
    print("compiled full step (one step, vmapped):", summary)
    path = save(
        args.name,
        {
            "what": __doc__.split("\n\n")[0],
            "batch": args.batch,
            "steps": args.steps,
            "stages": rows,
            "full_step_hlo": summary,
            "one_step_beside_references": report_references(args.batch),
        },
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
