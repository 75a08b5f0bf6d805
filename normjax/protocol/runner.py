"""The test protocol (docs/world.md §9, paper §4.1 and §10.1, Table 1).

`evaluate(policy, norms=None, seed=0)` runs, for every requested norm, its 3
seen (cafe) and 3 unseen (the norm's unseen layout) test episodes of
`normjax.protocol.scenarios` in ONE compiled, vmapped program: each episode is a scan of
100 steps in which slot 0 acts by `policy(key, state, params) -> action` (a
state policy: `env.oracle_policy`, `env.blind_policy`, `env.random_policy`, or
an observation policy wrapped by `env.obs_policy`) and the other slots by the
scenario's scripted community (`scenarios.scenario_community_actions`).

An episode ends when the newcomer exits (terminated) or after 100 steps.  The
scan always runs 100 steps (static shapes) of the one episode step
(`normjax.env.episode.episode_step`: the key schedule, the newcomer, and the
state, memory and counters kept from termination on).

Per-episode metrics (docs/world.md §9.4; per-step pieces in
`normjax.protocol.metrics`):
* task = goals_done / 2 of the newcomer; joint = task 1 and zero sanctions;
* path_length = the newcomer's steps on the grid (to finishing, or all the
  steps it took when unfinished);
* collision = the newcomer was involved in at least one collision before the
  episode ended: charged as the mover, moved into while standing still, or
  pushed;
* community_path_length / community_welfare = mean steps / mean total reward
  of every other agent of the episode (each uid apart, turnover arrivals
  included) that took at least one step on the grid, each from its entry to
  its exit or to the episode's end (the newcomer's exit or step 100);
  None only when no other agent took a step.
Aggregates (by family and overall, seen and unseen): joint, task and
collision_rate in percent; path_length in steps (mean over episodes);
community_path_length and community_welfare as the mean of the per-episode
means over episodes where they are defined.

Distractors (docs/world.md §8.5): `evaluate(..., distractor=NAME,
distractor_share=S)` gives that share of the norm-aware background agents the
habit in every test episode, and then also reports each newcomer's
over-imitation rate (`normjax.protocol.imitation`): per episode
`over_imitation` (a rate in [0, 1]) and `habit_steps`, aggregated as the mean
rate in percent.  Off by default; with it off the program and results are as
before.

Seeds: `seed` (default 0) shifts every norm's base seed (see
`scenarios.base_seed`); `seed=0` is the canonical protocol.

Stateful policies.  A `StatefulPolicy` (e.g. the Bayesian observer of
`normjax.observer`) carries memory: `prepare(key, norm_id, config)` builds it
once per norm before the tests (key `PRNGKey(base_seed(norm, seed))`, the
interaction phase's), `begin` adapts it to each test episode's first state,
`act` chooses the newcomer's action from it, and `observe` updates it after
every step.  Every test episode starts from the prepared carry (the six
episodes stay independent, as for state policies).  State policies take the
same code path as before, so their results are unchanged.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from normjax.env.episode import Newcomer, episode_step, start_episode
from normjax.norms import FAMILIES, N_NORMS
from normjax.norms import norm_id as _norm_id
from normjax.protocol import imitation
from normjax.protocol.metrics import community_totals
from normjax.protocol.scenario_tables import host_scenarios
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.protocol.seeds import CONDITIONS, TEST_STEPS, base_seed, test_episodes
from normjax.world.habits import check_distractor
from normjax.world.state import WorldConfig

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


class StatefulPolicy(NamedTuple):
    """A newcomer policy with memory (all four functions jittable and vmappable).

    prepare(key, norm_id, config) -> carry   once per norm, before its test episodes
    begin(carry, state, params) -> carry     at the start of each test episode
    act(key, state, params, carry) -> action
    observe(carry, state_before, info, params) -> carry   after every step
    """

    prepare: Callable
    begin: Callable
    act: Callable
    observe: Callable


def _stateless(policy: Callable) -> StatefulPolicy:
    """A state policy as a `StatefulPolicy` with an empty carry (same operations)."""
    return StatefulPolicy(
        prepare=lambda key, norm_id, config: (),
        begin=lambda carry, state, params: (),
        act=lambda key, state, params, carry: policy(key, state, params),
        observe=lambda carry, state, info, params: carry,
    )


def run_episode(
    policy: Callable,
    key,
    layout_id,
    norm_id,
    group,
    config: WorldConfig = WorldConfig(),
    policy_state=None,
    habit=0,
    habit_share=0.0,
    imitation_on: bool = False,
):
    """One test episode -> dict of per-episode raw metrics (jittable, vmappable).

    `policy` is a state policy `policy(key, state, params) -> action`, or a
    `StatefulPolicy` whose prepared carry is `policy_state`.  `habit` (code)
    and `habit_share` are the episode's distractor settings (may be traced);
    with `imitation_on` (static) the result also counts `habit_steps`.
    """
    stateful = policy if isinstance(policy, StatefulPolicy) else _stateless(policy)
    k_build, k_run = jax.random.split(key)
    state, params = build_test_episode(k_build, layout_id, norm_id, group, config, habit, habit_share)

    newcomer = Newcomer(act=stateful.act, observe=stateful.observe)

    def body(carry, k):
        episode, imit = carry
        after, info = episode_step(k, episode, params, newcomer, SCENARIO_COMMUNITY)
        if imitation_on:  # from the step's start; the newcomer is off the grid once done, so nothing counts after
            imit = imitation.update(imit, episode.state, info, params)
        return (after, imit), None

    init = (start_episode(state, stateful.begin(policy_state, state, params)), imitation.init())
    (episode, imit), _ = jax.lax.scan(body, init, jax.random.split(k_run, TEST_STEPS))
    final, done, involved, waits = episode.state, episode.done, episode.collisions, episode.waits
    agents, steps, ret = community_totals(final)
    ag = final.agents
    goals = ag.goals_done[0]
    extra = dict(habit_steps=imit.follows) if imitation_on else {}
    return dict(
        goals=goals,
        sanctions=ag.n_sanctions[0],
        collisions=ag.n_collisions[0],
        involved=involved,
        path_length=ag.steps[0],
        finished=done,
        t_end=final.t,
        community_finished=final.community_finished,
        community_agents=agents,
        community_steps=steps,
        community_return=ret.astype(jnp.float32),
        waits=waits,
        **extra,
    )


@functools.cache
def _compiled(policy: Callable, capacity: int, imitation_on: bool = False):
    """Without distractors: the program as before; with them: habit and share as
    (batched) arguments, so every habit shares one program."""
    cfg = WorldConfig(capacity=capacity)
    if not imitation_on:

        def fn(key, layout_id, norm_id, group, policy_state=None):
            return run_episode(policy, key, layout_id, norm_id, group, cfg, policy_state)

        return jax.jit(jax.vmap(fn))

    def fn_d(key, layout_id, norm_id, group, habit, share, policy_state=None):
        return run_episode(policy, key, layout_id, norm_id, group, cfg, policy_state, habit, share, True)

    return jax.jit(jax.vmap(fn_d))


@functools.cache
def _compiled_prepare(prepare: Callable, capacity: int):
    """Keyed on the prepare function: policies that learn alike share one program."""
    cfg = WorldConfig(capacity=capacity)
    return jax.jit(jax.vmap(lambda key, nid: prepare(key, nid, cfg)))


def prepare_states(policy: StatefulPolicy, norm_ids: list[int], seed: int = 0, capacity: int = 10):
    """The prepared carry of every norm in `norm_ids` (stacked on a leading axis),
    each from key `PRNGKey(base_seed(norm, seed))` (docs/world.md §9)."""
    keys = jnp.stack([jax.random.PRNGKey(base_seed(n, seed)) for n in norm_ids])
    return _compiled_prepare(policy.prepare, capacity)(keys, jnp.asarray(norm_ids, jnp.int32))


def _episode_states(states, norm_ids: list[int], episodes: list[dict]):
    """Gather each episode's norm's prepared carry."""
    row = {n: i for i, n in enumerate(norm_ids)}
    idx = jnp.asarray([row[e["norm_id"]] for e in episodes], jnp.int32)
    return jax.tree.map(lambda x: x[idx], states)


def _episode_args(episodes: list[dict], distractor: str | None, share: float) -> tuple[tuple, bool]:
    """(vmapped program arguments, whether distractors are on), validated first."""
    habit, share = check_distractor(distractor, share)
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in episodes])
    cols = tuple(jnp.asarray([e[f] for e in episodes], jnp.int32) for f in ("layout_id", "norm_id", "group"))
    on = habit != 0 and share > 0.0
    if not on:
        return (keys, *cols), False
    n = len(episodes)
    return (keys, *cols, jnp.full((n,), habit, jnp.int32), jnp.full((n,), share, jnp.float32)), True


def run_episodes(
    policy: Callable,
    episodes: list[dict],
    capacity: int = 10,
    seed: int = 0,
    distractor: str | None = None,
    distractor_share: float = 0.0,
) -> dict[str, np.ndarray]:
    """Run the given episode list (from `scenarios.test_episodes`) in one program
    (a `StatefulPolicy` is first prepared per norm with protocol seed `seed`)."""
    args, on = _episode_args(episodes, distractor, distractor_share)
    if isinstance(policy, StatefulPolicy):
        norm_ids = sorted({e["norm_id"] for e in episodes})
        args += (_episode_states(prepare_states(policy, norm_ids, seed, capacity), norm_ids, episodes),)
    out = _compiled(policy, capacity, on)(*args)
    return {k: np.asarray(v) for k, v in jax.block_until_ready(out).items()}


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(xs)) if xs else None


def _aggregate(rows: list[dict]) -> dict:
    extra = {}
    if rows and "over_imitation" in rows[0]:
        extra["over_imitation"] = 100.0 * float(np.mean([r["over_imitation"] for r in rows]))
    return dict(
        joint=100.0 * float(np.mean([r["joint"] for r in rows])),
        task=100.0 * float(np.mean([r["task"] for r in rows])),
        path_length=float(np.mean([r["path_length"] for r in rows])),
        collision_rate=100.0 * float(np.mean([r["collision"] for r in rows])),
        community_path_length=_mean([r["community_path_length"] for r in rows]),
        community_welfare=_mean([r["community_welfare"] for r in rows]),
        episodes=len(rows),
        **extra,
    )


def summarize(episodes: list[dict], raw: dict[str, np.ndarray]) -> dict:
    """Per-episode rows and seen / unseen aggregates by family and overall.  A row's
    `non_discriminative` is true where the scenario construction could not make
    every norm-blind shortest route violate (docs/world.md §9.3, §13)."""
    flags = host_scenarios()["non_discriminative"]
    rows = []
    for i, e in enumerate(episodes):
        n = int(raw["community_agents"][i])
        task = int(raw["goals"][i]) / 2.0
        sanc = int(raw["sanctions"][i])
        rows.append(
            dict(
                norm_id=e["norm_id"],
                norm=e["norm"],
                family=e["family"],
                condition=e["condition"],
                layout=e["layout"],
                episode=e["episode"],
                seed=e["seed"],
                group=e["group"],
                task=task,
                joint=bool(task == 1.0 and sanc == 0),
                sanctions=sanc,
                path_length=int(raw["path_length"][i]),
                collision=bool(raw["involved"][i] > 0),
                collision_steps=int(raw["involved"][i]),
                collisions=int(raw["collisions"][i]),
                finished=bool(raw["finished"][i]),
                steps=int(raw["t_end"][i]),
                community_finished=int(raw["community_finished"][i]),
                community_agents=n,
                community_path_length=(float(raw["community_steps"][i]) / n) if n else None,
                community_welfare=(float(raw["community_return"][i]) / n) if n else None,
                non_discriminative=bool(flags[e["layout_id"], e["norm_id"], e["group"]]),
            )
        )
        if "habit_steps" in raw:  # distractors on (docs/world.md §8.5)
            rows[-1].update(
                habit_steps=int(raw["habit_steps"][i]),
                over_imitation=imitation.rate(raw["habit_steps"][i], raw["path_length"][i]),
            )
    return dict(aggregate_rows(rows), episodes=rows)


def aggregate_rows(rows: list[dict]) -> dict:
    """`summarize`'s seen / unseen aggregates (overall and per family) of per-episode rows,
    e.g. rows pooled from several results."""
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
    return result


def evaluate(
    policy: Callable,
    norms=None,
    seed: int = 0,
    capacity: int = 10,
    timing: dict | None = None,
    distractor: str | None = None,
    distractor_share: float = 0.0,
    program_key: str | None = None,
) -> dict:
    """Run the protocol for `policy` on `norms` (names or ids; None = all 50),
    with optional distractor habits (module doc; validated before tracing).

    Returns `{"seen": {"overall": {...}, "access": {...}, ...}, "unseen": {...},
    "episodes": [...]}` with the metric keys of `METRICS` (percent for joint,
    task and collision_rate).  If `timing` is a dict, it receives
    `compile_s` and `run_s` (wall time of the run after compilation; for a
    `StatefulPolicy` both include its `prepare` program, e.g. the interaction
    phases).  `program_key` names the policy across processes (e.g. its command-line
    name and settings): with it, the compiled programs go through the executable cache
    (`normjax.cache.compiled`), so a repeated command loads them instead of tracing
    and compiling; without it they are compiled here.
    """
    ids = resolve_norms(norms)
    episodes = test_episodes(ids, seed)
    args, on = _episode_args(episodes, distractor, distractor_share)
    prep_compile = prep_run = 0.0
    if isinstance(policy, StatefulPolicy):
        pkeys = jnp.stack([jax.random.PRNGKey(base_seed(n, seed)) for n in ids])
        pargs = (pkeys, jnp.asarray(ids, jnp.int32))
        t0 = time.perf_counter()
        prep = _build("evaluate-prepare", _compiled_prepare(policy.prepare, capacity), pargs, program_key)
        t1 = time.perf_counter()
        states = jax.block_until_ready(prep(*pargs))
        prep_compile, prep_run = t1 - t0, time.perf_counter() - t1
        args += (_episode_states(states, ids, episodes),)
    fn = _compiled(policy, capacity, on)
    t0 = time.perf_counter()
    compiled = _build("evaluate", fn, args, program_key)
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    t2 = time.perf_counter()
    if timing is not None:
        timing.update(compile_s=prep_compile + t1 - t0, run_s=prep_run + t2 - t1, n_episodes=len(episodes))
    raw = {k: np.asarray(v) for k, v in out.items()}
    return summarize(episodes, raw)


def _build(name: str, jitted, args: tuple, program_key: str | None):
    """`jitted` compiled for `args`: through the executable cache when the program has a key."""
    if program_key is None:
        return jitted.lower(*args).compile()
    from normjax.cache import compiled

    return compiled(name, jitted, args, static_key=program_key)


def _fmt(v):
    return "-" if v is None else f"{v:.1f}"


def format_table(result: dict) -> str:
    """A Table-1-style text table: rows condition x (overall, families); with
    distractors on, a last column of over-imitation in percent."""
    imit = any("over_imitation" in (result.get(c) or {}).get("overall", {}) for c in CONDITIONS)
    head = f"{'condition':<8} {'family':<13} {'n':>4} {'joint%':>7} {'task%':>7} {'path':>6} {'coll%':>6} {'c.path':>7} {'c.welf':>7}"
    head += f" {'o.imit%':>7}" if imit else ""
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
                + (f" {_fmt(a.get('over_imitation')):>7}" if imit else "")
            )
    return "\n".join(lines)


__all__ = [
    "METRICS",
    "StatefulPolicy",
    "aggregate_rows",
    "evaluate",
    "format_table",
    "prepare_states",
    "run_episode",
    "run_episodes",
    "summarize",
    "resolve_norms",
]
