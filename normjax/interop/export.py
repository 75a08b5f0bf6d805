"""Trajectory export (docs/world.md §12): one episode as a JSON Lines file
readable without normjax.

    rollout(key, layout_id, norm_id, phase, policy)  -> (states, infos, params)
    trajectory_records(states, infos, params, header_info) -> [header, step, step, ...]
    write_jsonl(path, records)
    export_episode(norm, phase, seed, policy_name, out_path, frames_dir=None, layout=None)

Episodes (docs/world.md §9).  `rollout` runs the environment step
(`normjax.env.env_step`) in one jitted `lax.scan`: the scripted community
drives slots 1..K-1 and a state policy `policy(key, state, params) -> action`
drives slot 0 (the newcomer).

* ``interaction``: the cafe (unless another layout is given), 200 steps, one
  norm-blind background slot, the newcomer replaced when it finishes
  (`phase_params('interaction', ...)`).
* ``train``: as interaction, with every background agent norm-aware.
* ``seen`` / ``unseen``: one test episode (<= 100 steps) on the cafe / on the
  norm's unseen layout, built by `normjax.protocol.scenarios.build_test_episode`
  with the scenario community (holders) and the protocol's own episode step
  (`normjax.env.episode.episode_step`), so `export_episode(..., episode=e)`
  writes the very episode the protocol scores.  The scan keeps a fixed length
  (the horizon; the state is kept from the newcomer's exit on); recording is
  cut on the host after the step in which the newcomer exits.

Decisions where the format leaves room:

* ``states`` returned by `rollout` has T + 1 entries: ``states[t]`` is the world
  at the start of step t and ``states[T]`` the world after the last step.  Step
  line t describes step t (``t`` is ``states[t].t``, the global index the norms
  use).  Rendered frames ``frame_<t>.png`` show ``states[t]``; one extra frame
  ``frame_<T>.png`` shows the final world.
* An inactive slot carries no agent on that line: ``uid``, ``group``, ``leg``,
  ``pos``, ``target``, ``next`` and ``goal`` are null, ``action`` is 4 (WAIT,
  the effective action of an inactive slot), flags are false and ``reward`` 0.
  An agent that enters during step t is first active on line t + 1.
* ``goal`` is the goal of the agent's current leg (``leg`` at the start of the
  step): goal 1's cell when it is a specified cell (the service cell for queue
  tasks), the specified exit door's cell on leg 1, null for a free choice
  (any chair, any cell of R, any door).
* ``next`` is null for an agent that exited during the step (its ``target`` is
  the door cell and the extra field ``exited`` is true).
* ``reward`` is rounded to 6 decimals (the world computes float32).
* ``seed`` is the integer seed of the episode key ``jax.random.PRNGKey(seed)``.
  By default it is the seed given to `export_episode` and a test newcomer's
  group is ``seed % 3``; with ``episode`` it is the protocol's episode seed
  (docs/world.md §9: base seed s for interaction, s+1..s+3 seen, s+4..s+6 unseen) and the
  group is the protocol's (header fields ``protocol_seed``, ``episode``,
  ``newcomer_group``).
* Extra fields: header ``policy``, ``newcomer_group``, ``max_steps``,
  ``n_steps``, ``action_names``, ``group_names``, ``scenario`` (how the test
  episode was built), ``norm.description`` / ``condition`` / ``held_out``,
  ``cells.counter`` and ``cells.door_inward``; per agent ``action_name``,
  ``role`` (newcomer / aware / blind), ``exited``, ``goals_completed`` and
  ``forced_wait`` (a service WAIT).
* Distractors (docs/world.md §8.5): only when an episode has them on, the
  header has ``distractor: {habit, share}`` and every agent a ``habit`` (its
  habit's name, or null); with them off the file is exactly as without them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.cache import compiled
from normjax.env import STATE_POLICIES, check_policy_name, phase_params
from normjax.env.episode import episode_step, start_episode, state_newcomer
from normjax.interop.plan import (  # noqa: F401  (re-exported: the plan of an export)
    EXPORT_PHASES,
    episode_summary,
    plan_episode,
    protocol_episode,
    resolve_layout,
)
from normjax.layouts import ALL_LAYOUTS, load_layout
from normjax.norms import NORMS
from normjax.norms.table import NORM_TABLE
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.world.habits import check_distractor, habit_name
from normjax.world.state import ANY_DOOR, GOAL_CELL, WorldConfig
from normjax.world.step import reset_world

FORMAT = "normjax.trajectory/1"
ROLE_NAMES = {C.ROLE_NEWCOMER: "newcomer", C.ROLE_AWARE: "aware", C.ROLE_BLIND: "blind"}
POLICIES: dict[str, Callable] = dict(STATE_POLICIES)


# ---------------------------------------------------------------------------
# Rollout
# ---------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("policy", "steps"))
def _scan(key, state, params, policy, steps):
    """`steps` environment steps; returns (states [steps + 1], infos [steps]).

    Each step is the protocol's (`normjax.env.episode.episode_step`), with the
    test scenarios' community (`SCENARIO_COMMUNITY`), which acts exactly like
    the default community in episodes without holders: an exported test
    episode is the protocol's episode by construction.
    """
    newcomer = state_newcomer(policy)

    def body(episode, k):
        after, info = episode_step(k, episode, params, newcomer, SCENARIO_COMMUNITY)
        return after, (episode.state, info)

    final, (states, infos) = jax.lax.scan(body, start_episode(state), jax.random.split(key, steps))
    final = final.state
    states = jax.tree.map(lambda s, f: jnp.concatenate([s, f[None]], axis=0), states, final)
    return states, infos


@functools.partial(jax.jit, static_argnames=("capacity",))
def _reset_start(key, params, capacity):
    return reset_world(key, params, WorldConfig(capacity=capacity))


@functools.partial(jax.jit, static_argnames=("capacity",))
def _test_start(key, layout_id, norm_id, group, habit, share, capacity):
    return build_test_episode(key, layout_id, norm_id, group, WorldConfig(capacity=capacity), habit, share)


def _start(key, layout_id, norm_id, phase, capacity, newcomer_group, distractor=("none", 0.0)):
    """(state, params, how it was built) at the start of an exported episode.

    Each start is one compiled program rather than a few hundred eager
    operations; with the CLI's cache configured, the start and the scan are
    loaded whole from its executable cache (`normjax.cache.compiled`) on a
    repeated export.
    """
    WorldConfig(capacity=capacity)
    static, static_key = {"capacity": capacity}, f"capacity={capacity}"
    habit, share = check_distractor(*distractor)
    if phase in ("interaction", "train"):
        params = phase_params(phase, layout_id, norm_id, distractor=distractor[0], distractor_share=share)
        args = (key, params)
        return compiled("export_reset_start", _reset_start, args, static, static_key)(*args), params, "reset_world"
    if phase in ("seen", "unseen"):
        group = 0 if newcomer_group is None else int(newcomer_group)
        args = (key, *(np.int32(x) for x in (layout_id, norm_id, group, habit)), np.float32(share))
        state, params = compiled("export_test_start", _test_start, args, static, static_key)(*args)
        return state, params, "scenarios.build_test_episode"
    raise ValueError(f"unknown phase {phase!r}; valid: {', '.join(EXPORT_PHASES)}")


def rollout(
    key,
    layout_id,
    norm_id,
    phase,
    policy,
    capacity=10,
    steps=None,
    newcomer_group=None,
    return_scenario=False,
    distractor=None,
    distractor_share=0.0,
):
    """Simulate one episode of the full environment (docs/world.md §9).

    `policy(key, state, params) -> action` drives slot 0 (a jittable function;
    `normjax.env.oracle_policy`, `blind_policy`, `random_policy`, or a name of
    `POLICIES`).  Returns (states, infos, params): `states` is the time-stacked
    WorldState with T + 1 entries (start of each step, then the final world),
    `infos` the time-stacked StepInfo with T entries.  T is `steps` (default
    200 for interaction / train, 100 for tests), cut for test phases after the
    step in which the newcomer exits.  With `return_scenario` a fourth value
    says how the start state was built.  `distractor` / `distractor_share`:
    docs/world.md §8.5 (default off).
    """
    if isinstance(policy, str):
        policy = POLICIES[check_policy_name(policy)]
    WorldConfig(capacity=capacity)
    k_reset, k_run = jax.random.split(key)
    state, params, how = _start(
        k_reset, int(layout_id), int(norm_id), phase, capacity, newcomer_group, (distractor or "none", distractor_share)
    )
    if steps is None:
        steps = int(params.max_steps)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    name = next((n for n, f in POLICIES.items() if f is policy), None)
    if name is None:  # a policy without a stable name: compiled in this process only
        states, infos = _scan(k_run, state, params, policy, int(steps))
    else:  # kept whole in the CLI's executable cache (normjax.cache.compiled)
        args = (k_run, state, params)
        states, infos = compiled(
            "export_scan", _scan, args, {"policy": policy, "steps": int(steps)}, f"policy={name} steps={int(steps)}"
        )(*args)
    n = int(steps)
    if phase in ("seen", "unseen"):
        exited = np.asarray(infos.exited[:, 0])
        if exited.any():
            n = int(np.argmax(exited)) + 1
    if n < steps:
        states = jax.tree.map(lambda x: x[: n + 1], states)
        infos = jax.tree.map(lambda x: x[:n], infos)
    if return_scenario:
        return states, infos, params, how
    return states, infos, params


# ---------------------------------------------------------------------------
# Records (docs/world.md §12)
# ---------------------------------------------------------------------------


def _cell(x) -> list[int]:
    return [int(x[0]), int(x[1])]


def _cells(xs) -> list[list[int]]:
    return [_cell(x) for x in np.asarray(xs).reshape(-1, 2)]


def layout_cells(layout_name: str, norm_id: int | None) -> dict:
    """The header's `cells` object of a layout (docs/world.md §12); `queue_path` needs a queue norm."""
    lay = load_layout(layout_name)
    chairs = np.asarray(lay.chairs)
    regions = {
        name: _cells([c for c in chairs if int(lay.region[c[0], c[1]]) == i]) for i, name in enumerate(C.REGION_NAMES)
    }
    queue_path = None
    j = -1 if norm_id is None else int(NORM_TABLE.queue_path[int(norm_id) + 1])
    if j >= 0:
        queue_path = _cells(lay.queue_paths[j][: lay.queue_len[j]])
    ring = [
        {"cell": [int(r), int(c)], "cw": [int(lay.cw[r, c, 0]), int(lay.cw[r, c, 1])]} for r, c in np.argwhere(lay.ring)
    ]
    return {
        "doors": {name: _cell(lay.doors[i]) for i, name in enumerate(C.DOOR_NAMES)},
        "chairs": _cells(chairs),
        "regions": regions,
        "Q": _cells(np.argwhere(lay.zone_q)),
        "R": _cells(np.argwhere(lay.zone_r)),
        "service": _cell(lay.service),
        "queue_path": queue_path,
        "ring": ring,
        "seat_order": {"l2r": _cells(lay.seat_order[0]), "r2l": _cells(lay.seat_order[1])},
        "counter": _cell(lay.counter),
        "door_inward": {name: _cell(lay.door_inward[i]) for i, name in enumerate(C.DOOR_NAMES)},
    }


def _norm_object(norm_id: int):
    if norm_id < 0:
        return None
    n = NORMS[norm_id]
    return {
        "id": n.id,
        "name": n.name,
        "family": n.family,
        "description": n.description,
        "condition": n.condition,
        "held_out": bool(n.held_out),
    }


def header_record(params, header_info: dict, capacity: int, n_steps: int) -> dict:
    """Line 1 of a trajectory file (docs/world.md §12)."""
    layout_name = ALL_LAYOUTS[int(params.layout_id)]
    nid = int(params.norm_id)
    lay = load_layout(layout_name)
    header = {
        "format": FORMAT,
        "layout": layout_name,
        "grid": list(lay.grid),
        "norm": _norm_object(nid),
        "seed": header_info.get("seed"),
        "phase": header_info.get("phase"),
        "capacity": int(capacity),
        "cells": layout_cells(layout_name, nid if nid >= 0 else None),
        "max_steps": int(params.max_steps),
        "n_steps": int(n_steps),
        "action_names": list(C.ACTION_NAMES),
        "group_names": list(C.GROUP_NAMES),
    }
    for k, v in header_info.items():
        if k not in header:
            header[k] = v
    return header


# The fields a step line reads (only these are converted to Python lists).
_INFO_FIELDS = (
    "active",
    "uid",
    "pos",
    "action",
    "target",
    "next_pos",
    "displaced",
    "collided",
    "sanctioned",
    "reward",
    "exited",
    "goals_completed",
    "forced_wait",
)
_AGENT_FIELDS = ("role", "leg", "goal_kind", "goal_cell", "exit_door", "group", "habit")


def trajectory_records(states, infos, params, header_info: dict) -> list[dict]:
    """Header and one record per step (docs/world.md §12) from a rollout's arrays.

    `states` holds at least T entries (the start of each step; a final extra
    entry is ignored), `infos` T entries.  `header_info` gives `seed`, `phase`
    and any extra header fields (e.g. `policy`).
    """
    # Python lists up front: indexing numpy scalars element by element costs most of the time.
    n_steps, capacity = np.shape(infos.active)
    rows = lambda x: np.asarray(x)[:n_steps].tolist()
    inf = SimpleNamespace(**{f: rows(getattr(infos, f)) for f in _INFO_FIELDS})
    ag = SimpleNamespace(**{f: rows(getattr(states.agents, f)) for f in _AGENT_FIELDS})
    ts = rows(states.t)
    layout_name = ALL_LAYOUTS[int(params.layout_id)]
    doors = np.asarray(load_layout(layout_name).doors).tolist()
    habits = "distractor" in header_info  # docs/world.md §8.5: a habit per agent only when on
    records = [header_record(params, header_info, capacity, n_steps)]
    for t in range(n_steps):
        agents = []
        for k in range(capacity):
            role = ROLE_NAMES[ag.role[t][k]]
            if not inf.active[t][k]:
                agents.append(
                    {
                        "slot": k,
                        "active": False,
                        "uid": None,
                        "group": None,
                        "pos": None,
                        "action": int(C.WAIT),
                        "action_name": "WAIT",
                        "target": None,
                        "next": None,
                        "displaced": False,
                        "collided": False,
                        "sanctioned": False,
                        "leg": None,
                        "goal": None,
                        "reward": 0.0,
                        "role": role,
                        "exited": False,
                        "goals_completed": 0,
                        "forced_wait": False,
                        **({"habit": None} if habits else {}),
                    }
                )
                continue
            leg = ag.leg[t][k]
            if leg == 0:
                goal = ag.goal_cell[t][k] if ag.goal_kind[t][k] == GOAL_CELL else None
            else:
                door = ag.exit_door[t][k]
                goal = None if door == ANY_DOOR else list(doors[door])
            exited = inf.exited[t][k]
            action = inf.action[t][k]
            agents.append(
                {
                    "slot": k,
                    "active": True,
                    "uid": inf.uid[t][k],
                    "group": ag.group[t][k],
                    "pos": inf.pos[t][k],
                    "action": action,
                    "action_name": C.ACTION_NAMES[action],
                    "target": inf.target[t][k],
                    "next": None if exited else inf.next_pos[t][k],
                    "displaced": inf.displaced[t][k],
                    "collided": inf.collided[t][k],
                    "sanctioned": inf.sanctioned[t][k],
                    "leg": leg,
                    "goal": goal,
                    "reward": round(inf.reward[t][k], 6),
                    "role": role,
                    "exited": exited,
                    "goals_completed": inf.goals_completed[t][k],
                    "forced_wait": inf.forced_wait[t][k],
                    **({"habit": habit_name(ag.habit[t][k])} if habits else {}),
                }
            )
        records.append({"t": ts[t], "agents": agents})
    return records


def write_jsonl(path, records) -> Path:
    """One JSON object per line (standard-library `json`, no NaN)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, separators=(",", ":"), allow_nan=False))
            f.write("\n")
    return path


def read_jsonl(path) -> list[dict]:
    """The records of a trajectory file (standard-library `json`)."""
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_frames(states, params, frames_dir, cell_px: int = 32) -> list[Path]:
    """PNG frames named by step (`frame_000.png`, ...) of a time-stacked state."""
    from normjax.interop.render import render_rollout, save_png

    frames = np.asarray(render_rollout(states, params, cell_px=cell_px))
    width = max(3, len(str(len(frames) - 1)))
    out = Path(frames_dir)
    return [save_png(f, out / f"frame_{t:0{width}d}.png") for t, f in enumerate(frames)]


# ---------------------------------------------------------------------------
# End to end
# ---------------------------------------------------------------------------


def export_episode(
    norm,
    phase: str,
    seed: int,
    policy_name: str,
    out_path,
    frames_dir=None,
    layout: str | None = None,
    capacity: int = 10,
    newcomer_group: int | None = None,
    steps: int | None = None,
    cell_px: int = 32,
    episode: int | None = None,
    distractor: str | None = None,
    distractor_share: float = 0.0,
) -> dict:
    """Simulate one episode and write it as docs/world.md §12 JSON Lines (and PNG frames).

    `norm` is a norm name or id (None / "none" for no norm); names and values
    are validated before anything is traced.  By default the episode key is
    `PRNGKey(seed)` and a test newcomer's group is `seed % 3` (or
    `newcomer_group`).  With `episode` (0..2) the episode is the protocol's
    own (`protocol_episode`: `seed` is then the protocol seed, 0 = canonical),
    so an exported seen / unseen episode is the one `normjax.protocol.evaluate`
    scores; `distractor` / `distractor_share` as in docs/world.md §8.5.  Returns
    a small summary dict.  Many episodes in one compiled program:
    `normjax.interop.export_many.export_many`.
    """
    plan = plan_episode(
        norm, phase, seed, policy_name, layout, capacity, newcomer_group, episode, distractor, distractor_share
    )
    states, infos, params = rollout(
        jax.random.PRNGKey(plan["key_seed"]),
        plan["layout_id"],
        plan["norm_id"],
        phase,
        POLICIES[policy_name],
        capacity=capacity,
        steps=steps,
        newcomer_group=plan["group"],
        distractor=plan["distractor"][0],
        distractor_share=plan["distractor"][1],
    )
    records = trajectory_records(states, infos, params, plan["info"])
    path = write_jsonl(out_path, records)
    frames = write_frames(states, params, frames_dir, cell_px) if frames_dir is not None else []
    return episode_summary(plan, path, records, infos, len(frames))


__all__ = [
    "FORMAT",
    "EXPORT_PHASES",
    "POLICIES",
    "rollout",
    "trajectory_records",
    "header_record",
    "layout_cells",
    "protocol_episode",
    "write_jsonl",
    "read_jsonl",
    "write_frames",
    "export_episode",
    "plan_episode",
    "episode_summary",
]
