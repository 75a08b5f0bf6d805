"""The programs that `benchmarks/compare.py` times: one environment each, as its harness drives it.

normjax's full step (with and without auto-reset, the single-layout path) and
world step, XLand-MiniGrid Empty-8x8 and R1-9x9, gymnax CartPole-v1.  The
comparison packages are imported only when their programs are built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


@dataclasses.dataclass
class Program:
    """One environment as the harness drives it (all functions are for ONE env; vmapped here)."""

    name: str
    label: str
    group: str
    what: str
    reset: Callable  # (key, params) -> carry
    step: Callable  # (key, carry, action, params) -> (carry, reward)
    action: Callable  # key -> action
    params: Any  # params with a leading batch axis, or None (constants closed over)
    notes: dict = dataclasses.field(default_factory=dict)


# --------------------------------------------------------------------------- programs


def _batched(p, batch: int):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), p)


def normjax_programs(batch: int) -> list[Program]:
    from normjax import constants as C
    from normjax.env import make
    from normjax.world.step import step_world
    from normjax.wrappers import AutoResetWrapper

    env = make(layout="cafe", norm=None, phase="train")
    params = _batched(env.default_params, batch).replace(norm_id=(jnp.arange(batch) % 50).astype(jnp.int32))
    scalar_action = lambda k: jax.random.randint(k, (), 0, env.num_actions)

    def reset(key, p):
        return env.reset(key, p)  # (obs, state)

    def full(key, carry, action, p):
        obs, state, reward, _term, _trunc, _info = env.step(key, carry[1], action, p)
        return (obs, state), reward

    auto_reset = AutoResetWrapper(env)

    def full_autoreset(key, carry, action, p):
        obs, state, reward, _term, _trunc, _info = auto_reset.step(key, carry[1], action, p)
        return (obs, state), reward

    def world_reset(key, p):
        return env.reset(key, p)[1]

    def world(key, state, actions, p):
        state, info = step_world(key, state, actions, p)
        return state, info.reward[0]

    static_env = make(layout="cafe", norm=None, phase="train", static_layout=True)
    static_params = _batched(static_env.default_params, batch).replace(norm_id=params.norm_id)

    common = dict(
        group="normjax",
        reset=reset,
        action=scalar_action,
        params=params,
        notes={"layout": "cafe", "capacity": env.capacity, "phase": "train", "norms": "env i -> norm i % 50"},
    )
    return [
        Program(
            name="normjax-full",
            label="normjax full step",
            step=full,
            what="NormGymEnv.step: community planner + world step (50 norms mixed) + observation; no auto-reset",
            **common,
        ),
        Program(
            name="normjax-full-static",
            label="normjax full step, single-layout path",
            step=full,
            what="as normjax-full with make(..., static_layout=True): the cafe's tables as compile-time "
            "constants (the DQN trainer's path)",
            **dict(common, params=static_params),
        ),
        Program(
            name="normjax-full-ar",
            label="normjax full step + auto-reset",
            step=full_autoreset,
            what="AutoResetWrapper(NormGymEnv).step: a new episode started inside the step that ends one "
            "(the reset runs only for the environments whose episode ended)",
            **common,
        ),
        Program(
            name="normjax-world",
            label="normjax world step",
            group="normjax",
            reset=world_reset,
            step=world,
            action=lambda k: jax.random.randint(k, (env.capacity,), 0, C.N_ACTIONS),
            params=params,
            what="step_world only: random joint actions for all K slots, 50 norms mixed; no observation",
            notes=common["notes"],
        ),
    ]


def own_ruleset():
    """A one-rule XLand-MiniGrid ruleset built with the library's API (no download).

    Goal: hold a blue key.  Rule: picking up the red ball turns it into a blue key.
    Objects placed: the red ball and three distractors (green square, yellow pyramid,
    purple key): one real rule and four objects, like a depth-1 chain of the library's
    generated benchmarks.
    """
    from xminigrid.core.constants import Colors, Tiles
    from xminigrid.core.goals import AgentHoldGoal
    from xminigrid.core.rules import AgentHoldRule
    from xminigrid.types import RuleSet

    tile = lambda t, c: jnp.array([t, c], dtype=jnp.uint8)
    goal = AgentHoldGoal(tile=tile(Tiles.KEY, Colors.BLUE))
    rule = AgentHoldRule(tile=tile(Tiles.BALL, Colors.RED), prod_tile=tile(Tiles.KEY, Colors.BLUE))
    init_tiles = jnp.stack(
        [
            tile(Tiles.BALL, Colors.RED),
            tile(Tiles.SQUARE, Colors.GREEN),
            tile(Tiles.PYRAMID, Colors.YELLOW),
            tile(Tiles.KEY, Colors.PURPLE),
        ]
    )
    ruleset = RuleSet(goal=goal.encode(), rules=rule.encode()[None, :], init_tiles=init_tiles)
    desc = {
        "source": "own (benchmarks/compare.py own_ruleset)",
        "goal": "AgentHoldGoal(key, blue)",
        "rules": ["AgentHoldRule(ball red -> key blue)"],
        "init_tiles": ["ball red", "square green", "pyramid yellow", "key purple"],
    }
    return ruleset, desc


def xland_programs(batch: int, benchmark: str | None) -> list[Program]:
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    out = []
    for name, env_id in (("xland-empty-8x8", "MiniGrid-Empty-8x8"), ("xland-r1-9x9", "XLand-MiniGrid-R1-9x9")):
        env, env_params = xminigrid.make(env_id)
        env = GymAutoResetWrapper(env)
        notes = {
            "env_id": env_id,
            "wrapper": "GymAutoResetWrapper",
            "view_size": env_params.view_size,
            "max_steps": env_params.max_steps,
        }
        label = f"xminigrid {env_id}"
        if "XLand" in env_id:
            ruleset, desc = None, None
            if benchmark is not None:
                try:
                    ruleset = xminigrid.load_benchmark(benchmark).sample_ruleset(jax.random.PRNGKey(0))
                    desc = {"source": f"xminigrid.load_benchmark({benchmark!r}).sample_ruleset(PRNGKey(0))"}
                except Exception as e:  # no network: fall back to our own
                    print(
                        f"  could not load XLand-MiniGrid benchmark {benchmark!r} ({type(e).__name__}: {e}); "
                        "using own_ruleset()",
                        flush=True,
                    )
            if ruleset is None:
                ruleset, desc = own_ruleset()
                label += " (own 1-rule ruleset)"
            env_params = env_params.replace(ruleset=ruleset)
            notes["ruleset"] = desc
        n_act = env.num_actions(env_params)

        def reset(key, _p, env=env, env_params=env_params):
            return env.reset(env_params, key)

        def step(_key, timestep, action, _p, env=env, env_params=env_params):
            timestep = env.step(env_params, timestep, action)
            return timestep, timestep.reward

        out.append(
            Program(
                name=name,
                label=label,
                group="xminigrid",
                reset=reset,
                step=step,
                action=lambda k, n=n_act: jax.random.randint(k, (), 0, n),
                params=None,
                what=f"{env_id} step with GymAutoResetWrapper, {n_act} actions, "
                f"{env_params.view_size}x{env_params.view_size} view",
                notes=notes,
            )
        )
    return out


def gymnax_programs(batch: int) -> list[Program]:
    import gymnax

    env, env_params = gymnax.make("CartPole-v1")
    n_act = env.num_actions

    def reset(key, _p):
        return env.reset(key, env_params)  # (obs, state)

    def step(key, carry, action, _p):
        obs, state, reward, _term, _trunc, _info = env.step(key, carry[1], action, env_params)
        return (obs, state), reward

    return [
        Program(
            name="gymnax-cartpole",
            label="gymnax CartPole-v1",
            group="gymnax",
            reset=reset,
            step=step,
            action=lambda k: jax.random.randint(k, (), 0, n_act),
            params=None,
            what="gymnax CartPole-v1 step (auto-resets)",
            notes={"env_id": "CartPole-v1"},
        )
    ]
