"""Many trajectory exports in one call (`normjax export --norms ... --phases ...`).

`export_many` writes one docs/world.md §12 JSON Lines file per episode of the
product norms x phases x seeds x policies (x protocol episodes), each file
byte-identical to the single-episode export of the same episode
(`normjax.interop.export.export_episode`, tested), but simulated in batches:
the episodes of one (phase kind, policy, length) run as one `jax.vmap` over
the exporter's own scan (`export._scan`), with keys, layout ids, norm ids and
test newcomer groups as batched arrays and test episodes built by
`normjax.protocol.scenarios.build_test_episode` inside the program.  So the
150 episodes of `--norms all --phases interaction seen unseen` compile two
programs (interaction; seen and unseen together), not 150.  The records are
then written per episode on the host.

Phase kinds: ``interaction`` / ``train`` start from `reset_world` with
`phase_params` (200 steps), ``seen`` / ``unseen`` from `build_test_episode`
(100 steps, recording cut on the host after the step in which the newcomer
exits, as for one episode).

File names (in the output directory)::

    <norm>.<phase>.<policy>.seed<S>.jsonl          key PRNGKey(S) (as --seed S)
    <norm>.<phase>.ep<E>.<policy>.seed<S>.jsonl    protocol episode E of protocol seed S (as --episode E)

`<norm>` is the norm's name (or ``none``).  With protocol episodes the
interaction (and train) phase has one episode per norm and protocol seed
(the base seed): it is written once, as ``ep0``.  ``manifest.json`` lists
every file with the summary `export_episode` returns.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import jax
import numpy as np

from normjax.cache import compiled
from normjax.env import phase_params
from normjax.interop.export import POLICIES, _scan, trajectory_records, write_frames, write_jsonl
from normjax.interop.plan import episode_summary, plan_episode, plan_params
from normjax.norms import NORMS
from normjax.protocol.scenarios import build_test_episode
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

TEST_PHASES = ("seen", "unseen")
MAX_BATCH = 64  # episodes per compiled call (memory: a batch holds every step's state)


def expand_norms(norms) -> list:
    """Norm names / ids; ``all`` expands to the 50 norms in id order, ``none`` is no norm."""
    out = []
    for n in norms:
        if n == "all":
            out += [spec.name for spec in NORMS]
        else:
            out.append(n)
    return list(dict.fromkeys(out))  # keep order, drop repeats


def episode_name(plan: dict) -> str:
    """The file stem of an episode (see the module docstring)."""
    norm = "none" if plan["norm"] is None else plan["norm"].name
    ep = f".ep{plan['info']['episode']}" if "episode" in plan["info"] else ""
    seed = plan["info"].get("protocol_seed", plan["key_seed"])
    return f"{norm}.{plan['phase']}{ep}.{plan['policy']}.seed{seed}"


def plan_many(
    norms,
    phases,
    seeds,
    policies,
    episodes=None,
    layout=None,
    capacity: int = 10,
    newcomer_group=None,
    distractor: str | None = None,
    distractor_share: float = 0.0,
) -> list[dict]:
    """Validated plans (`plan_episode`) of every episode, each with its file stem as ``name``."""
    if not norms or not phases or not seeds or not policies or episodes == []:
        raise ValueError("norms, phases, seeds, policies (and episodes, when given) must be non-empty")
    plans, names = [], set()
    for norm in expand_norms(norms):
        for phase in phases:
            eps = [None] if episodes is None else ([0] if phase not in TEST_PHASES else list(episodes))
            for seed in seeds:
                for e in dict.fromkeys(eps):
                    for policy in policies:
                        plan = plan_episode(
                            norm,
                            phase,
                            int(seed),
                            policy,
                            layout,
                            capacity,
                            newcomer_group,
                            e,
                            distractor,
                            distractor_share,
                        )
                        plan["name"] = episode_name(plan)
                        if plan["name"] not in names:
                            names.add(plan["name"])
                            plans.append(plan)
    return plans


def _steps(plan: dict, steps: int | None) -> int:
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        return int(steps)
    return int(phase_params("test" if plan["phase"] in TEST_PHASES else plan["phase"], 0, 0).max_steps)


@functools.cache
def _program(test: bool, policy_name: str, capacity: int, steps: int):
    """jit(vmap(one episode)) for a phase kind, policy, capacity and length."""
    cfg = WorldConfig(capacity=capacity)
    policy = POLICIES[policy_name]

    def one(key, layout_id, norm_id, group, params):
        k_reset, k_run = jax.random.split(key)  # as export.rollout
        if test:
            state, params = build_test_episode(
                k_reset, layout_id, norm_id, group, cfg, params.habit, params.habit_share
            )
        else:
            state = reset_world(k_reset, params, cfg)
        states, infos = _scan(k_run, state, params, policy, steps)
        return states, infos, params

    return jax.jit(jax.vmap(one))


def _inputs(plans: list[dict]):
    """Batched (keys, layout ids, norm ids, groups, params) of a batch of plans."""
    keys = np.stack([np.asarray(jax.random.PRNGKey(p["key_seed"])) for p in plans])
    lay = np.asarray([p["layout_id"] for p in plans], np.int32)
    nid = np.asarray([p["norm_id"] for p in plans], np.int32)
    grp = np.asarray([0 if p["group"] is None else p["group"] for p in plans], np.int32)
    params = [plan_params(p) for p in plans]  # with each plan's distractor settings
    params = jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x]), *params)
    return keys, lay, nid, grp, params


def _episode(batch, i: int, test: bool, steps: int):
    """Episode i of a batch's numpy arrays, cut after the newcomer's exit in test phases."""
    states, infos, params = jax.tree.map(lambda x: x[i], batch)
    n = steps
    if test:
        exited = infos.exited[:, 0]
        if exited.any():
            n = int(np.argmax(exited)) + 1
    if n < steps:
        states = jax.tree.map(lambda x: x[: n + 1], states)
        infos = jax.tree.map(lambda x: x[:n], infos)
    return states, infos, params


def export_many(
    plans: list[dict],
    out_dir,
    steps: int | None = None,
    capacity: int = 10,
    frames_dir=None,
    cell_px: int = 32,
    max_batch: int = MAX_BATCH,
    log=None,
) -> dict:
    """Simulate and write the planned episodes (`plan_many`) into `out_dir`.

    Episodes are grouped by (test or not, policy, length); each group runs in
    batches of at most `max_batch` (the last one padded, so each group
    compiles once).  With `frames_dir`, each episode's PNG frames go to
    ``<frames_dir>/<name>/``.
    Returns ``{"episodes": [summary, ...], "timing": {...}}`` and writes it
    as ``manifest.json``.
    """
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(plans):
        groups.setdefault((p["phase"] in TEST_PHASES, p["policy"], _steps(p, steps)), []).append(i)
    summaries: list = [None] * len(plans)
    timing = {"simulate_s": 0.0, "write_s": 0.0, "programs": len(groups), "episodes": len(plans)}
    for (test, policy, n_steps), idx in groups.items():
        size = min(len(idx), max_batch)
        fn = _program(test, policy, capacity, n_steps)
        for start in range(0, len(idx), size):
            chunk = idx[start : start + size]
            padded = chunk + [chunk[0]] * (size - len(chunk))
            t0 = time.perf_counter()
            args = _inputs([plans[i] for i in padded])
            exe = compiled(
                "export_many", fn, args, None, f"test={test} policy={policy} capacity={capacity} steps={n_steps}"
            )
            batch = jax.tree.map(np.asarray, exe(*args))
            t1 = time.perf_counter()
            for j, i in enumerate(chunk):
                states, infos, params = _episode(batch, j, test, n_steps)
                records = trajectory_records(states, infos, params, plans[i]["info"])
                path = write_jsonl(out / f"{plans[i]['name']}.jsonl", records)
                n_frames = 0
                if frames_dir is not None:
                    n_frames = len(write_frames(states, params, Path(frames_dir) / plans[i]["name"], cell_px))
                summaries[i] = episode_summary(plans[i], path, records, infos, n_frames)
            timing["simulate_s"] += t1 - t0
            timing["write_s"] += time.perf_counter() - t1
            if log is not None:
                log(f"{'test' if test else 'reset'}/{policy}: {start + len(chunk)}/{len(idx)} episodes written")
    result = {
        "episodes": summaries,
        "timing": {k: round(v, 3) if isinstance(v, float) else v for k, v in timing.items()},
    }
    (out / "manifest.json").write_text(json.dumps(result, indent=1))
    return result


__all__ = ["MAX_BATCH", "episode_name", "expand_norms", "export_many", "plan_many"]
