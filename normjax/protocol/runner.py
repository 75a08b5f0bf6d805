"""The test protocol (docs/world.md §9, paper §4.1 and §10.1, Table 1).

`evaluate(policy, norms=None, seed=0)` runs, for every requested norm, its 3
seen (cafe) and 3 unseen (the norm's unseen layout) test episodes of
`normjax.protocol.scenarios` in ONE compiled, vmapped program: each episode is a scan of
100 steps in which slot 0 acts by `policy(key, state, params) -> action` (a
state policy: `env.oracle_policy`, `env.blind_policy`, `env.random_policy`, or
an observation policy wrapped by `env.obs_policy`) and the other slots by the
scenario's scripted community (`scenarios.scenario_community_actions`).

An episode ends when the newcomer exits (terminated) or after 100 steps.  The
scan always runs 100 steps (static shapes); the newcomer's counters freeze by
themselves when it leaves (an exited newcomer is not replaced in test
episodes), and the community statistics are snapshotted at termination.

Per-episode metrics (docs/world.md §9):
* task = goals_done / 2 of the newcomer; joint = task 1 and zero sanctions;
* path_length = the newcomer's steps on the grid (to finishing, or all the
  steps it took when unfinished);
* collision = at least one newcomer collision;
* community_path_length / community_welfare = mean steps / mean total reward
  of the background agents that finished (exited) before the episode ended
  (None when none finished).
Aggregates (by family and overall, seen and unseen): joint, task and
collision_rate in percent; path_length in steps (mean over episodes);
community_path_length and community_welfare as the mean of the per-episode
means over episodes where some background agent finished.

Seeds: `seed` (default 0) shifts every norm's base seed (see
`scenarios.base_seed`); `seed=0` is the canonical protocol.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.env import env_step
from normjax.norms import FAMILIES, N_NORMS, norm_id as _norm_id
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.protocol.seeds import CONDITIONS, TEST_STEPS, test_episodes
from normjax.world.state import WorldConfig
from normjax.world.step import terminated

METRICS = ("joint", "task", "path_length", "collision_rate", "community_path_length", "community_welfare")


def resolve_norms(norms: Iterable | None) -> list[int]:
    """Norm ids from names / ids (None = all 50); unknown names raise ValueError."""
    if norms is None:
        return list(range(N_NORMS))
    out = []
    for n in norms:
        if isinstance(n, (int, np.integer)):
            if not 0 <= int(n) < N_NORMS:
                raise ValueError(f"norm id must be in 0..{N_NORMS - 1}, got {n}")
            out.append(int(n))
        else:
            i = _norm_id(n)
            if i is None or i < 0:
                raise ValueError(f"a test episode needs a norm, got {n!r}")
            out.append(int(i))
    return out


def run_episode(policy: Callable, key, layout_id, norm_id, group, config: WorldConfig = WorldConfig()):
    """One test episode -> dict of per-episode raw metrics (jittable, vmappable)."""
    k_build, k_run = jax.random.split(key)
    state, params = build_test_episode(k_build, layout_id, norm_id, group, config)
    f32 = jnp.float32

    def snap(s):
        return (s.community_finished, s.community_steps, s.community_return.astype(f32))

    def body(carry, k):
        s, done, frozen, waits = carry
        kc, kp, kw = jax.random.split(k, 3)
        _, s2, info = env_step(kc, kw, s, policy(kp, s, params), params, SCENARIO_COMMUNITY)
        # The newcomer's own WAITs (forced service waits excluded), for the
        # paper's wait statistics of DQN policies (A14).
        waited = info.active[0] & (info.action[0] == C.WAIT) & ~info.forced_wait[0] & ~done
        # Once the newcomer has finished, the world keeps running but nothing
        # of the episode's metrics changes: keep the state at termination.
        s2 = jax.tree.map(lambda a, b: jnp.where(done, a, b), s, s2)
        new_done = done | terminated(s2, params)
        frozen = jax.tree.map(lambda a, b: jnp.where(done, a, b), frozen, snap(s2))
        return (s2, new_done, frozen, waits + waited), None

    init = (state, jnp.bool_(False), snap(state), jnp.int32(0))
    (final, done, (fin, steps, ret), waits), _ = jax.lax.scan(body, init, jax.random.split(k_run, TEST_STEPS))
    ag = final.agents
    goals = ag.goals_done[0]
    return dict(
        goals=goals,
        sanctions=ag.n_sanctions[0],
        collisions=ag.n_collisions[0],
        path_length=ag.steps[0],
        finished=done,
        t_end=final.t,
        community_finished=fin,
        community_steps=steps,
        community_return=ret,
        waits=waits,
    )


@functools.lru_cache(maxsize=None)
def _compiled(policy: Callable, capacity: int):
    cfg = WorldConfig(capacity=capacity)
    fn = functools.partial(run_episode, policy, config=cfg)
    return jax.jit(jax.vmap(fn))


def run_episodes(policy: Callable, episodes: list[dict], capacity: int = 10) -> dict[str, np.ndarray]:
    """Run the given episode list (from `scenarios.test_episodes`) in one program."""
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in episodes])
    lay = jnp.asarray([e["layout_id"] for e in episodes], jnp.int32)
    nid = jnp.asarray([e["norm_id"] for e in episodes], jnp.int32)
    grp = jnp.asarray([e["group"] for e in episodes], jnp.int32)
    out = _compiled(policy, capacity)(keys, lay, nid, grp)
    return {k: np.asarray(v) for k, v in jax.block_until_ready(out).items()}


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(xs)) if xs else None


def _aggregate(rows: list[dict]) -> dict:
    return dict(
        joint=100.0 * float(np.mean([r["joint"] for r in rows])),
        task=100.0 * float(np.mean([r["task"] for r in rows])),
        path_length=float(np.mean([r["path_length"] for r in rows])),
        collision_rate=100.0 * float(np.mean([r["collision"] for r in rows])),
        community_path_length=_mean([r["community_path_length"] for r in rows]),
        community_welfare=_mean([r["community_welfare"] for r in rows]),
        episodes=len(rows),
    )


def summarize(episodes: list[dict], raw: dict[str, np.ndarray]) -> dict:
    """Per-episode rows and seen / unseen aggregates by family and overall."""
    rows = []
    for i, e in enumerate(episodes):
        fin = int(raw["community_finished"][i])
        task = int(raw["goals"][i]) / 2.0
        sanc = int(raw["sanctions"][i])
        rows.append(dict(
            norm_id=e["norm_id"], norm=e["norm"], family=e["family"], condition=e["condition"],
            layout=e["layout"], episode=e["episode"], seed=e["seed"], group=e["group"],
            task=task, joint=bool(task == 1.0 and sanc == 0), sanctions=sanc,
            path_length=int(raw["path_length"][i]),
            collision=bool(raw["collisions"][i] > 0), collisions=int(raw["collisions"][i]),
            finished=bool(raw["finished"][i]), steps=int(raw["t_end"][i]),
            community_finished=fin,
            community_path_length=(float(raw["community_steps"][i]) / fin) if fin else None,
            community_welfare=(float(raw["community_return"][i]) / fin) if fin else None,
        ))
    result = {}
    for cond in CONDITIONS:
        sub = [r for r in rows if r["condition"] == cond]
        if not sub:
            continue
        block = {"overall": _aggregate(sub)}
        for fam in FAMILIES:
            fr = [r for r in sub if r["family"] == fam]
            if fr:
                block[fam] = _aggregate(fr)
        result[cond] = block
    result["episodes"] = rows
    return result


def evaluate(policy: Callable, norms=None, seed: int = 0, capacity: int = 10, timing: dict | None = None) -> dict:
    """Run the protocol for `policy` on `norms` (names or ids; None = all 50).

    Returns `{"seen": {"overall": {...}, "access": {...}, ...}, "unseen": {...},
    "episodes": [...]}` with the metric keys of `METRICS` (percent for joint,
    task and collision_rate).  If `timing` is a dict, it receives
    `compile_s` and `run_s` (wall time of the run after compilation).
    """
    ids = resolve_norms(norms)
    episodes = test_episodes(ids, seed)
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in episodes])
    args = (
        keys,
        jnp.asarray([e["layout_id"] for e in episodes], jnp.int32),
        jnp.asarray([e["norm_id"] for e in episodes], jnp.int32),
        jnp.asarray([e["group"] for e in episodes], jnp.int32),
    )
    fn = _compiled(policy, capacity)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    t2 = time.perf_counter()
    if timing is not None:
        timing.update(compile_s=t1 - t0, run_s=t2 - t1, n_episodes=len(episodes))
    raw = {k: np.asarray(v) for k, v in out.items()}
    return summarize(episodes, raw)


def _fmt(v):
    return "-" if v is None else f"{v:.1f}"


def format_table(result: dict) -> str:
    """A Table-1-style text table: rows condition x (overall, families)."""
    head = f"{'condition':<8} {'family':<13} {'n':>4} {'joint%':>7} {'task%':>7} {'path':>6} {'coll%':>6} {'c.path':>7} {'c.welf':>7}"
    lines = [head, "-" * len(head)]
    for cond in CONDITIONS:
        block = result.get(cond)
        if not block:
            continue
        for fam in ("overall",) + FAMILIES:
            a = block.get(fam)
            if a is None:
                continue
            lines.append(
                f"{cond:<8} {fam:<13} {a['episodes']:>4} {_fmt(a['joint']):>7} {_fmt(a['task']):>7} "
                f"{_fmt(a['path_length']):>6} {_fmt(a['collision_rate']):>6} "
                f"{_fmt(a['community_path_length']):>7} {_fmt(a['community_welfare']):>7}"
            )
    return "\n".join(lines)


__all__ = ["METRICS", "evaluate", "format_table", "run_episode", "run_episodes", "summarize", "resolve_norms"]
