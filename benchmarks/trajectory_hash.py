"""A hash of full-step trajectories, for checking that a speed change is bit-identical.

Every speed change of the environment step must leave trajectories unchanged for
fixed keys.  This script steps `--envs` environments for `--steps` full steps
(`normjax.env.env_step`: community planner, world step, observation) from fixed
keys and hashes every state, step record and observation, in two groups:

  traced   layouts and norms traced (one program): env i on layout i % 10 and
           norm i % 51 (the 50 norms and no norm), half of them in the train
           phase, half in the interaction phase (one norm-blind slot), under
           reward condition i % 3 (sparse_penalty, no_penalty, dense);
  static   the single-layout path (`WorldParams.static_layout`) on three
           layouts (cafe, the first and the last of the others; `--static-layouts`
           picks others), norms mixed;
  world    the world step alone (`step_world`, which then judges the norm
           itself) under uniformly random joint actions, as `traced`.

It prints one SHA-256 per group; run it on two checkouts and compare:

    python -m benchmarks.trajectory_hash            # this checkout
    git worktree add --detach /tmp/base HEAD~1 && (cd /tmp/base && python -m benchmarks.trajectory_hash)

The hashes depend on the platform's arithmetic only through float rewards and
noise (the same machine and jax version give the same hashes).
"""

from __future__ import annotations

import argparse
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from normjax.env import env_step, phase_params
from normjax.layouts.parse import ALL_LAYOUTS
from normjax.world.observation import observe
from normjax.world.state import REWARD_CONDITIONS, WorldConfig
from normjax.world.step import reset_world, step_world

N_NORMS_AND_NONE = 51  # norm ids 0..49 and -1 (no norm)


def stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def batch_params(n: int, static_layout: int | None):
    """Params of env i: layout i % 10 (or the static one), norm i % 51 (the last is none),
    phase train for even i, interaction for odd i, reward condition i % 3."""
    rows = []
    for i in range(n):
        norm = i % N_NORMS_AND_NONE
        norm = -1 if norm == N_NORMS_AND_NONE - 1 else norm
        phase = "train" if i % 2 == 0 else "interaction"
        layout = i % len(ALL_LAYOUTS) if static_layout is None else static_layout
        rows.append(
            phase_params(
                phase,
                layout,
                norm,
                static_layout=static_layout is not None,
                reward_condition=REWARD_CONDITIONS[i % len(REWARD_CONDITIONS)],
            )
        )
    return stack(rows)


def full_step(key, state, p):
    """One full step (`env_step`) with a random newcomer action -> (key, state, record)."""
    key, k_act, k_comm, k_world = jax.random.split(key, 4)
    action = jax.random.randint(k_act, (), 0, 5)
    obs, state, info = env_step(k_comm, k_world, state, action, p)
    return key, state, (state, info, obs)


def world_step(key, state, p):
    """One world step (`step_world`) with random joint actions -> (key, state, record)."""
    key, k_act, k_world = jax.random.split(key, 3)
    actions = jax.random.randint(k_act, state.agents.active.shape, 0, 5)
    state, info = step_world(k_world, state, actions, p)
    return key, state, (state, info)


def rollout(params, n: int, steps: int, seed: int, step=full_step):
    """The first observation and every step's record of `steps` steps per env."""
    cfg = WorldConfig()

    def one(key, p):
        k0, key = jax.random.split(key)
        state = reset_world(k0, p, cfg)

        def body(c, _):
            state, key = c
            key, state, record = step(key, state, p)
            return (state, key), record

        _, out = jax.lax.scan(body, (state, key), None, length=steps)
        return observe(state, p), out

    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    return jax.jit(jax.vmap(one))(keys, params)


def digest(tree) -> str:
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(tree):
        a = np.asarray(leaf)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", type=int, default=200)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--static-layouts",
        default=f"0,1,{len(ALL_LAYOUTS) - 1}",
        help=f"comma-separated layout indices (0-{len(ALL_LAYOUTS) - 1}) of the static group",
    )
    args = ap.parse_args(argv)
    allowed = [str(i) for i in range(len(ALL_LAYOUTS))]
    if not all(x.strip() in allowed for x in args.static_layouts.split(",")):
        ap.error(f"--static-layouts {args.static_layouts!r}: layout indices in 0..{len(ALL_LAYOUTS) - 1}")
    static_layouts = tuple(int(x) for x in args.static_layouts.split(","))
    traced = rollout(batch_params(args.envs, None), args.envs, args.steps, args.seed)
    print("traced", digest(traced), flush=True)
    per_layout = max(1, args.envs // (2 * len(static_layouts)))
    outs = [
        rollout(batch_params(per_layout, lid), per_layout, args.steps, args.seed + 1 + lid) for lid in static_layouts
    ]
    print("static", digest(outs), flush=True)
    world = rollout(batch_params(args.envs, None), args.envs, args.steps, args.seed + 100, step=world_step)
    print("world", digest(world), flush=True)


if __name__ == "__main__":
    main()
