"""World state and parameters as pytrees (docs/world.md §2, 5, 6).

`WorldState` holds everything that changes during an episode, with a fixed
leading agent axis of size K (the capacity) and masks for slots not in use, so
shapes are static and `vmap` batches environments.  `WorldParams` holds the
traced per-episode settings (layout, norm, reward weights, horizon): one
compiled step serves every layout, norm and reward condition, and a batch may
mix them.  Static settings (the capacity K) live in `WorldConfig`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from normjax import constants as C
from normjax.layouts.parse import ALL_LAYOUTS
from normjax.norms.registry import N_NORMS
from normjax.world.habits import check_distractor

# Goal-1 kinds (docs/world.md §5): a specified cell, or a free choice among a category.
GOAL_CELL, GOAL_ANY_CHAIR, GOAL_ANY_R = 0, 1, 2
ANY_DOOR = -1  # exit_door value for "chosen door (any)"

REWARD_CONDITIONS = ("sparse_penalty", "no_penalty", "dense")
# Reward weights (docs/world.md §6); the penalties are 0 under no_penalty, the
# shaping weight is 0 except under dense.
GOAL_REWARD = 10.0  # per goal completed
STEP_COST = 0.1  # per active unfinished step
COLLISION_PENALTY = 5.0
SANCTION_PENALTY = 20.0  # lambda
DENSE_SHAPING = 6.0
MAX_CAPACITY = max(C.CAPACITIES)
SERVICE_STEPS = 3  # steps a service (goal 1 at a specified cell) takes by default (docs/world.md §5)


@dataclasses.dataclass(frozen=True)
class WorldConfig:
    """Static (compile-time) configuration of the world."""

    capacity: int = 10

    def __post_init__(self):
        if self.capacity not in C.CAPACITIES:
            raise ValueError(f"capacity must be one of {C.CAPACITIES}, got {self.capacity!r}")


@struct.dataclass
class WorldParams:
    """Traced per-episode parameters (scalars; vmappable)."""

    layout_id: jax.Array  # int32: index into normjax.layouts.ALL_LAYOUTS (0..9 = LAYOUTS)
    norm_id: jax.Array  # int32: 0..49, or -1 for no norm
    max_steps: jax.Array  # int32: horizon (200 interaction / training, 100 test)
    service_steps: jax.Array  # int32: steps to stand on goal 1 (docs/world.md §5, default 3)
    goal_reward: jax.Array  # float32: +10 per goal (docs/world.md §6)
    step_cost: jax.Array  # float32: 0.1 per active unfinished step
    collision_penalty: jax.Array  # float32: 5 (0 under no_penalty)
    sanction_penalty: jax.Array  # float32: 20 (lambda; 0 under no_penalty)
    dense_reward: jax.Array  # float32: 6 under the dense condition, else 0
    replace_newcomer: jax.Array  # bool: refill slot 0 after it finishes (interaction, training)
    turnover_delay: jax.Array  # int32 [2]: refill delay range [lo, hi] in steps
    n_blind: jax.Array  # int32: background slots 1..n_blind use the norm-blind planner
    min_agents: jax.Array  # int32: the episode uses m in [min_agents, K] slots (docs/world.md §2)
    habit: jax.Array  # int32: the episode's distractor habit (C.HABIT_*, docs/world.md §8.5), 0 = none
    habit_share: jax.Array  # float32: share of norm-aware background agents given it (0 = off)
    # Static (not traced): >= 0 promises that every environment stepped with these
    # params uses this layout, so the layout's tables are compile-time constants
    # (gathers from constants instead of per-environment copies under vmap: the
    # single-layout fast path, e.g. DQN training on the cafe).  -1: the traced
    # `layout_id` decides, and a batch may mix layouts.
    static_layout: int = struct.field(pytree_node=False, default=-1)
    # Static: how `run_where` (normjax.ground.rare) runs a step's rare work under
    # `vmap`: packed for the environments that need it (True), or computed for
    # all and selected (False: for a batch the compiler shards over devices).
    # Part of the params' structure, so a compiled program is cached per setting.
    packing: bool = struct.field(pytree_node=False, default=True)

    @property
    def layout(self):
        """The layout index to read tables with: the static one when promised."""
        return self.static_layout if self.static_layout >= 0 else self.layout_id


def make_params(
    layout: int = 0,
    norm: int = -1,
    *,
    max_steps: int = C.INTERACTION_STEPS,
    service_steps: int = SERVICE_STEPS,
    reward_condition: str = "sparse_penalty",
    replace_newcomer: bool = True,
    turnover_delay: tuple[int, int] = (1, 5),
    n_blind: int = 0,
    min_agents: int = 6,
    static_layout: bool = False,
    distractor: str = "none",
    distractor_share: float = 0.0,
) -> WorldParams:
    """Build WorldParams from plain values, validating them before any tracing.

    `distractor` names a habit of docs/world.md §8.5 (`C.HABIT_NAMES`) and
    `distractor_share` in [0, 1] the share of norm-aware background agents that
    have it; the default is off.
    """
    habit, habit_share = check_distractor(distractor, distractor_share)
    if reward_condition not in REWARD_CONDITIONS:
        raise ValueError(f"unknown reward_condition {reward_condition!r}; valid: {', '.join(REWARD_CONDITIONS)}")
    if not 0 <= int(layout) < len(ALL_LAYOUTS):
        raise ValueError(
            f"layout id must be in 0..{len(ALL_LAYOUTS) - 1} (ids of normjax.layouts.ALL_LAYOUTS: "
            f"0..9 the paper's layouts, 10.. the validation cafes), got {layout!r}"
        )
    if not -1 <= int(norm) < N_NORMS:
        raise ValueError(f"norm id must be in -1..{N_NORMS - 1} (-1 = no norm), got {norm!r}")
    if max_steps < 1 or service_steps < 1:
        raise ValueError(f"max_steps and service_steps must be >= 1, got {max_steps}, {service_steps}")
    if not 0 <= n_blind < MAX_CAPACITY or not 1 <= min_agents <= MAX_CAPACITY:
        raise ValueError(
            f"n_blind must be in 0..{MAX_CAPACITY - 1} and min_agents in 1..{MAX_CAPACITY}, got {n_blind}, {min_agents}"
        )
    lo, hi = turnover_delay
    if not 0 <= lo <= hi:
        raise ValueError(f"turnover_delay must satisfy 0 <= lo <= hi, got {turnover_delay}")
    penalties = reward_condition != "no_penalty"
    f32 = jnp.float32
    return WorldParams(
        layout_id=jnp.int32(layout),
        norm_id=jnp.int32(norm),
        max_steps=jnp.int32(max_steps),
        service_steps=jnp.int32(service_steps),
        goal_reward=f32(GOAL_REWARD),
        step_cost=f32(STEP_COST),
        collision_penalty=f32(COLLISION_PENALTY if penalties else 0.0),
        sanction_penalty=f32(SANCTION_PENALTY if penalties else 0.0),
        dense_reward=f32(DENSE_SHAPING if reward_condition == "dense" else 0.0),
        replace_newcomer=jnp.bool_(replace_newcomer),
        turnover_delay=jnp.asarray([lo, hi], dtype=jnp.int32),
        n_blind=jnp.int32(n_blind),
        min_agents=jnp.int32(min_agents),
        habit=jnp.int32(habit),
        habit_share=f32(habit_share),
        static_layout=int(layout) if static_layout else -1,
    )


def with_packing(tree, packing: bool):
    """`tree` with `WorldParams.packing` set to `packing` in every WorldParams it holds."""
    return jax.tree.map(
        lambda x: x.replace(packing=bool(packing)) if isinstance(x, WorldParams) else x,
        tree,
        is_leaf=lambda x: isinstance(x, WorldParams),
    )


@struct.dataclass
class Agents:
    """Per-slot agent arrays, leading axis K (docs/world.md §2)."""

    in_use: jax.Array  # bool: the slot takes part in the episode (m of K slots)
    active: jax.Array  # bool: on the grid now
    spawn_t: jax.Array  # int32: earliest step at which a pending agent enters
    uid: jax.Array  # int32: unique per agent within the episode
    role: jax.Array  # int32: constants.ROLE_NEWCOMER / ROLE_AWARE / ROLE_BLIND
    habit: jax.Array  # int32: distractor habit of a background agent (0 = none)
    group: jax.Array  # int32: social group 0..2
    pos: jax.Array  # int32 [K, 2]
    prev_pos: jax.Array  # int32 [K, 2]: cell at the start of the last step
    entry_door: jax.Array  # int32: 0..2
    goal_kind: jax.Array  # int32: GOAL_CELL / GOAL_ANY_CHAIR / GOAL_ANY_R
    goal_cell: jax.Array  # int32 [K, 2]: goal-1 cell (-1 for free choice)
    exit_door: jax.Array  # int32: 0..2, or ANY_DOOR
    leg: jax.Array  # int32: 0 = goal 1 (reach), 1 = goal 2 (exit)
    timer: jax.Array  # int32: consecutive service steps stood on goal 1
    goals_done: jax.Array  # int32: 0, 1 or 2
    moves: jax.Array  # bool [K, 3]: own effective move on turns t-1, t-2, t-3
    visited_q: jax.Array  # bool: stood in Q at some step so far
    last_action: jax.Array  # int32: last effective action
    sanctioned: jax.Array  # bool: sanctioned on the last step (public)
    collided: jax.Array  # bool: charged a collision on the last step
    displaced: jax.Array  # bool: pushed on the last step
    n_sanctions: jax.Array  # int32: sanctions of the current occupant
    n_collisions: jax.Array  # int32: collisions of the current occupant
    steps: jax.Array  # int32: steps since the current occupant entered
    ret: jax.Array  # float32: reward accumulated by the current occupant


@struct.dataclass
class WorldState:
    """Everything that changes within an episode."""

    t: jax.Array  # int32: global step index (the one norms use), starts at 0
    agents: Agents
    next_uid: jax.Array  # int32
    # The newcomer's (slot 0) outcome of its current task, kept after it exits.
    newcomer_done: jax.Array  # bool: its task ended (exited)
    newcomer_tasks: jax.Array  # int32: newcomer tasks ended so far (with replacement)
    # Community statistics over background agents that finished (docs/world.md §9 metrics).
    community_finished: jax.Array  # int32
    community_steps: jax.Array  # int32
    community_return: jax.Array  # float32


def empty_agents(capacity: int) -> Agents:
    """All-pending, unused slots (a neutral starting point for resets and tests)."""
    k = capacity
    i32 = lambda v=0: jnp.full((k,), v, dtype=jnp.int32)
    b = lambda v=False: jnp.full((k,), v, dtype=bool)
    return Agents(
        in_use=b(),
        active=b(),
        spawn_t=i32(0),
        uid=i32(-1),
        role=jnp.where(jnp.arange(k) == 0, C.ROLE_NEWCOMER, C.ROLE_AWARE).astype(jnp.int32),
        habit=i32(0),
        group=i32(0),
        pos=jnp.zeros((k, 2), jnp.int32),
        prev_pos=jnp.zeros((k, 2), jnp.int32),
        entry_door=i32(0),
        goal_kind=i32(GOAL_CELL),
        goal_cell=jnp.full((k, 2), -1, jnp.int32),
        exit_door=i32(0),
        leg=i32(0),
        timer=i32(0),
        goals_done=i32(0),
        moves=jnp.zeros((k, 3), bool),
        visited_q=b(),
        last_action=i32(C.WAIT),
        sanctioned=b(),
        collided=b(),
        displaced=b(),
        n_sanctions=i32(0),
        n_collisions=i32(0),
        steps=i32(0),
        ret=jnp.zeros((k,), jnp.float32),
    )


def empty_state(capacity: int) -> WorldState:
    z = jnp.int32(0)
    return WorldState(
        t=z,
        agents=empty_agents(capacity),
        next_uid=z,
        newcomer_done=jnp.bool_(False),
        newcomer_tasks=z,
        community_finished=z,
        community_steps=z,
        community_return=jnp.float32(0.0),
    )
