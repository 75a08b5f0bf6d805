"""Harvesting labelled steps in-graph: the interaction phase's episodes, with
every step's verifier information computed inside the same compiled program.

    harvest(norm_ids, seeds, policy="oracle") -> Harvest (numpy, [E, T, ...])
    harvest(norm_ids, seeds, "replay", actions=A) -> the same, slot 0 taking A[e, t]

Each episode is the interaction phase of docs/world.md §9.1 (the cafe, 200
steps, a norm-following majority and one norm-blind member, the newcomer
replaced when it finishes), run by `normjax.observer.interaction.learn` (its
keys, its loop) with the newcomer acting by the chosen state policy and a
`probe` that records, per step:

* the public state before the step (positions, groups, uids, last step's
  sanctions) and the newcomer's task, for the prompts;
* what every agent did (effective action, target, sanction, forced WAIT,
  collision), for the Norm Judgment records: a transition's label is the
  episode norm's permissibility of its effective action on the state before
  the step (`state_norm(...).permitted`, the mask the world's sanctions read);
* for the newcomer, the norm-aware oracle's action costs (`action_costs`):
  the tie set (every action at the oracle's minimum cost: equally fast and,
  being finite, permitted) and, for the Compliant Action verifier, which
  actions score 1 and why each other one scores 0, found by stepping the world
  once per action from the same state, the other agents doing what they did
  in the step: it would be sanctioned (violating), it collides or is pushed
  (colliding), the move is blocked (blocked), it is not in the tie set
  (suboptimal); a tie action that collides scores 0 (the paper's rule).

The world state before every step is kept as well (`Harvest.states`, about
1 KB a step), so that a record's frame is rendered from the very state its
prompt describes (`normjax.finetune.frames`).  The ``replay`` policy takes
slot 0's actions from a given array [E, T] instead (states read back from
`llm-eval` transcripts, `normjax.finetune.readback`); its episodes then have
the world capacity of that run.

The oracle of the verifier plans with a key derived from the state (step index
and the newcomer's uid, `verifier_key`), so the tie set is reproducible from
the recorded state alone.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.community.planner import INF, action_costs, plan_actions
from normjax.env import COMMUNITY, blind_policy, env_step, oracle_policy
from normjax.norms import N_NORMS
from normjax.observer.interaction import INTERACTION_STEPS, learn
from normjax.world.state import WorldConfig
from normjax.world.step import state_norm

HARVEST_POLICIES = ("oracle", "blind", "mixture", "epsilon_blind")
# epsilon_blind: the oracle, but at each step with this probability the norm-blind policy acts
EPSILON_BLIND = 0.1
# Why an action scores 0 for the Compliant Action verifier (index = code; 0 scores 1).
REASONS = ("compliant", "violating", "colliding", "blocked", "suboptimal")
VERIFIER_SALT = 0x6E6A  # keeps the verifier's keys apart from the episode's


class StepData(NamedTuple):
    """One step of one episode (leading axes [E, T] once harvested)."""

    t: jax.Array  # int32: global step index
    active: jax.Array  # bool [K]: on the grid before the step
    pos: jax.Array  # int32 [K, 2]: cell before the step
    group: jax.Array  # int32 [K]
    uid: jax.Array  # int32 [K]
    was_sanctioned: jax.Array  # bool [K]: public sanction of the previous step (red cross now)
    was_pushed: jax.Array  # bool [K]: collided or displaced in the previous step
    goal_kind: jax.Array  # int32: slot 0's task
    goal_cell: jax.Array  # int32 [2]
    exit_door: jax.Array  # int32
    leg: jax.Array  # int32
    action: jax.Array  # int32 [K]: effective action of the step
    target: jax.Array  # int32 [K, 2]
    next_pos: jax.Array  # int32 [K, 2]
    sanctioned: jax.Array  # bool [K]: the world's sanction of the step (withheld from judgment prompts)
    violates: jax.Array  # bool [K]: the norm's mask on the effective action (the judgment label)
    forced_wait: jax.Array  # bool [K]
    tie: jax.Array  # bool [5]: the oracle's tie set (equally fast, permitted)
    oracle_action: jax.Array  # int32: the verifier oracle's action (in `tie`)
    reason: jax.Array  # int32 [5]: REASONS code per action (0: scores 1 for the newcomer)


def check_policy(name: str) -> str:
    if name not in HARVEST_POLICIES:
        raise ValueError(f"unknown harvest policy {name!r}; valid: {', '.join(HARVEST_POLICIES)}")
    return name


def verifier_key(state):
    """The verifier oracle's key: a function of the state only (step and newcomer uid)."""
    key = jax.random.fold_in(jax.random.PRNGKey(VERIFIER_SALT), state.t)
    return jax.random.fold_in(key, state.agents.uid[0])


def newcomer_verdict(state, params, joint=None):
    """(tie bool [5], oracle action, reason int32 [5]) for slot 0 on `state`.

    Each action is stepped once from `state`; with `joint` (the step's effective actions [K])
    the other agents do what they did in the harvested step (the moves the prompt shows),
    else the community plans afresh.  An action scores 1 (reason 0) only if it is in the
    oracle's tie set (equally fast, permitted) and, stepped, is not sanctioned, does not collide,
    is not pushed and is not blocked: the paper scores a colliding action 0."""
    key = verifier_key(state)
    k_plan, k_comm, k_world = jax.random.split(key, 3)
    k = state.agents.active.shape[0]
    aware = jnp.arange(k) == 0
    cost = action_costs(k_plan, state, params, aware)[0][0]  # [5]
    best = jnp.min(cost)
    tie = (cost == best) & (best < INF)
    oracle = plan_actions(k_plan, state, params, aware)[0]

    def replay(a):
        if joint is None:
            _, _, info = env_step(k_comm, k_world, state, a, params, COMMUNITY)
        else:
            everyone = jnp.ones((k,), bool)
            _, _, info = env_step(k_comm, k_world, state, joint.at[0].set(a), params, COMMUNITY, controlled=everyone)
        return info.sanctioned[0], info.collided[0] | info.displaced[0], info.action[0] != a

    sanc, hit, blocked = jax.vmap(replay)(jnp.arange(C.N_ACTIONS, dtype=jnp.int32))
    reason = jnp.where(sanc, 1, jnp.where(hit, 2, jnp.where(blocked, 3, jnp.where(tie, 0, 4))))
    return tie, oracle.astype(jnp.int32), reason.astype(jnp.int32)


def probe(state, info, belief, params) -> StepData:
    """`learn`'s per-step probe: the step's record (the belief is not used)."""
    ag = state.agents
    permitted = state_norm(state, params).permitted  # [K, 5]
    violates = ~jnp.take_along_axis(permitted, info.action[:, None], 1)[:, 0] & info.active
    tie, oracle, reason = newcomer_verdict(state, params, info.action)
    return StepData(
        t=state.t,
        active=ag.active,
        pos=ag.pos,
        group=ag.group,
        uid=ag.uid,
        was_sanctioned=ag.sanctioned & ag.active,
        was_pushed=(ag.collided | ag.displaced) & ag.active,
        goal_kind=ag.goal_kind[0],
        goal_cell=ag.goal_cell[0],
        exit_door=ag.exit_door[0],
        leg=ag.leg[0],
        action=info.action,
        target=info.target,
        next_pos=info.next_pos,
        sanctioned=info.sanctioned,
        violates=violates,
        forced_wait=info.forced_wait,
        tie=tie,
        oracle_action=oracle,
        reason=reason,
    )


def _mixture(key, state, params):
    """Oracle or blind with equal probability at every step."""
    k_pick, k_act = jax.random.split(key)
    return jnp.where(
        jax.random.bernoulli(k_pick), oracle_policy(k_act, state, params), blind_policy(k_act, state, params)
    )


def _epsilon_blind(key, state, params):
    """The oracle, except that at each step with probability EPSILON_BLIND the norm-blind policy acts."""
    k_pick, k_act = jax.random.split(key)
    return jnp.where(
        jax.random.bernoulli(k_pick, EPSILON_BLIND),
        blind_policy(k_act, state, params),
        oracle_policy(k_act, state, params),
    )


_POLICIES = {"oracle": oracle_policy, "blind": blind_policy, "mixture": _mixture, "epsilon_blind": _epsilon_blind}


def _with_state(state, info, belief, params):
    return probe(state, info, belief, params), state


@functools.cache
def _program(policy: str, steps: int, capacity: int = 10):
    config = WorldConfig(capacity=capacity)
    if policy == "replay":

        def one(key, norm_id, actions):
            # the interaction phase's step index t runs 0..steps-1: it indexes the recorded actions
            act = lambda k, s, p, b: actions[jnp.minimum(s.t, steps - 1)]
            return learn(key, norm_id, act, config=config, steps=steps, probe=_with_state)[1]
    else:
        act_fn = _POLICIES[policy]

        def one(key, norm_id):
            return learn(
                key, norm_id, lambda k, s, p, b: act_fn(k, s, p), config=config, steps=steps, probe=_with_state
            )[1]

    return jax.jit(jax.vmap(one))


class Harvest(NamedTuple):
    norm_ids: np.ndarray  # int [E]
    seeds: np.ndarray  # int [E]: episode key PRNGKey(seed)
    policy: str
    steps: StepData  # numpy, [E, T, ...]
    states: object = None  # WorldState, numpy [E, T, ...]: the world before each step


def harvest(
    norm_ids, seeds, policy: str = "oracle", steps: int = INTERACTION_STEPS, actions=None, capacity: int = 10
) -> Harvest:
    """Run one interaction-phase episode per (norm id, seed) in one compiled program
    (`policy` "replay": slot 0 takes `actions` [E, steps], e.g. read back from a transcript)."""
    if policy != "replay":
        check_policy(policy)
    norm_ids = np.asarray(norm_ids, np.int32)
    seeds = np.asarray(seeds, np.int64)
    if norm_ids.shape != seeds.shape or norm_ids.ndim != 1 or norm_ids.size == 0:
        raise ValueError(
            f"norm_ids and seeds must be equal-length non-empty lists, got {norm_ids.shape} and {seeds.shape}"
        )
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    bad = [int(n) for n in norm_ids if not 0 <= int(n) < N_NORMS]
    if bad:
        raise ValueError(f"norm ids must be in 0..{N_NORMS - 1}, got {bad}")
    keys = jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])
    args = (keys, jnp.asarray(norm_ids))
    if policy == "replay":
        if actions is None:
            raise ValueError("the replay policy needs the recorded actions [episodes, steps]")
        actions = np.asarray(actions, np.int32)
        if actions.shape != (norm_ids.size, steps) or actions.min() < 0 or actions.max() >= C.N_ACTIONS:
            raise ValueError(
                f"replay actions must be ints in 0..{C.N_ACTIONS - 1} of shape "
                f"{(norm_ids.size, steps)}, got shape {actions.shape}"
            )
        args += (jnp.asarray(actions),)
    data, states = _program(policy, int(steps), int(capacity))(*args)
    return Harvest(norm_ids, seeds, policy, jax.tree.map(np.asarray, data), jax.device_get(states))


__all__ = [
    "EPSILON_BLIND",
    "HARVEST_POLICIES",
    "Harvest",
    "REASONS",
    "StepData",
    "check_policy",
    "harvest",
    "newcomer_verdict",
    "probe",
    "verifier_key",
]
