"""Where the committed 1M DQN-MLP final-test episodes fail, and how noisy their table cells are.

    python -m benchmarks.dqn_failure_causes [--conditions no_penalty sparse_penalty dense]

For every chunk `results/cpu_paper_mlp_1m/<condition>/part*` it loads the stored final
parameters and replays that chunk's final tests: the same episodes
(`train.evaluate.episodes_for`), keys, scenario construction (`build_test_episode`), episode
step (`episode_step` with `SCENARIO_COMMUNITY`) and greedy policy (`obs_policy(greedy_policy)`)
that `normjax final-test` runs, in one scan that also keeps the newcomer's per-step record.
The replay's raw metrics go through `train.evaluate.summarize_groups`, the function
`final-test` uses; every episode row and every summary must equal the committed
`results.json`, else the script exits 1 (a replay of other episodes would explain nothing).

Each failed episode (task < 1) gets an outcome and, for time-outs, a behaviour
(`classify`); the totals per condition, split, family, norm and unseen layout, the task
points each cause costs, and indicators (collisions received, the specified goal-1 cell held
by another agent, service interrupted) go to benchmarks/results/dqn_failure_causes.json with
the table cells' intervals against the paper's numbers (`benchmarks.dqn_failure_report`), and
the training-side checks and the closed-door counterfactual (`benchmarks.dqn_failure_training`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import RESULTS, machine
from benchmarks.dqn_failure_report import breakdown, closed_door_cells, noise_rows, quartiles, validation_rows
from benchmarks.dqn_failure_training import (
    TRAINING_EPISODES,
    closed_door_tests,
    goal_distance,
    training_phase_exits,
    training_start_distances,
)
from normjax import constants as C
from normjax.env import obs_policy
from normjax.env.episode import collision_involvement, episode_step, start_episode, state_newcomer
from normjax.layouts import load_layout
from normjax.protocol.metrics import community_totals
from normjax.protocol.scenarios import SCENARIO_COMMUNITY, build_test_episode
from normjax.protocol.seeds import TEST_STEPS
from normjax.train import evaluate as ev
from normjax.train.dqn import make_population
from normjax.train.params import load_final_params, run_config
from normjax.world.state import ANY_DOOR, GOAL_CELL, WorldConfig

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "results" / "cpu_paper_mlp_1m"
CONDITIONS = ("no_penalty", "sparse_penalty", "dense")

# Behaviour of a time-out, judged on the steps of the leg it timed out in (first match wins).
WAITING_SHARE = 0.5  # own (unforced) WAITs on at least half the leg's steps
BLOCKED_SHARE = 0.25  # a move that was not carried out (an agent in the way) on a quarter of them
OSCILLATION_WINDOW, OSCILLATION_CELLS = 20, 3  # the last 20 steps of the leg on at most 3 cells
STUCK_RUN = 10  # indicator: at least 10 consecutive steps on one cell
HELD_SHARE = 0.5  # indicator: the specified goal-1 cell held by another agent on half the leg-0 steps


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------


def trajectory_episode(policy, key, layout_id, norm_id, group, config: WorldConfig):
    """`normjax.protocol.runner.run_episode` (no distractors) with the newcomer's per-step record."""
    k_build, k_run = jax.random.split(key)
    state, params = build_test_episode(k_build, layout_id, norm_id, group, config, 0, 0.0)
    newcomer = state_newcomer(policy)  # as run_episode's stateless wrapping (no memory)
    ag0 = state.agents
    goal_cell = ag0.goal_cell[0]

    def body(episode, k):
        s = episode.state
        after, info = episode_step(k, episode, params, newcomer, SCENARIO_COMMUNITY)
        others = s.agents.active.at[0].set(False)
        held = (others & (s.agents.pos == goal_cell).all(-1)).any()
        rec = dict(
            live=~episode.done & info.active[0],
            pos=info.pos[0],
            next_pos=info.next_pos[0],
            target=info.target[0],
            action=info.action[0],
            forced=info.forced_wait[0],
            exited=info.exited[0],
            charged=info.collided[0],
            received=collision_involvement(info)[0] & ~info.collided[0],
            leg=s.agents.leg[0],
            timer=s.agents.timer[0],
            held=held,
            distance=goal_distance(s, params),
        )
        return after, rec

    episode, rec = jax.lax.scan(body, start_episode(state), jax.random.split(k_run, TEST_STEPS))
    final = episode.state
    agents, steps, ret = community_totals(final)
    raw = dict(
        goals=final.agents.goals_done[0],
        sanctions=final.agents.n_sanctions[0],
        collisions=final.agents.n_collisions[0],
        involved=episode.collisions,
        path_length=final.agents.steps[0],
        finished=episode.done,
        t_end=final.t,
        community_finished=final.community_finished,
        community_agents=agents,
        community_steps=steps,
        community_return=ret.astype(jnp.float32),
        waits=episode.waits,
    )
    task = dict(goal_kind=ag0.goal_kind[0], exit_door=ag0.exit_door[0], entry_door=ag0.entry_door[0])
    return raw, rec, task


_PROGRAMS: dict = {}


def _program(tr):
    key = (tr.config.arch, tr.config.first_layer, tr.config.capacity)
    if key not in _PROGRAMS:  # the greedy policy depends on the network's form only, not on the norms
        cfg = WorldConfig(capacity=tr.config.capacity)

        def one_run(q_params, keys, lay, nid, grp):
            policy = obs_policy(tr.greedy_policy(q_params))
            return jax.vmap(lambda k, la, n, g: trajectory_episode(policy, k, la, n, g, cfg))(keys, lay, nid, grp)

        _PROGRAMS[key] = jax.jit(jax.vmap(one_run))
    return _PROGRAMS[key]


def load_run(run_dir: Path):
    """(population, stored final q_params per member), as `final_tests_from_params` loads them."""
    pop = make_population(run_config(run_dir))
    carry = jax.eval_shape(pop.init_population, jax.random.PRNGKey(pop.config.seed))
    abstract = tuple(jax.eval_shape(m.q_dense, runners) for m, (runners, _) in zip(pop.members, carry))
    return pop, tuple(jax.tree.map(jnp.asarray, t) for t in load_final_params(run_dir, pop, abstract))


def replay_chunk(run_dir: Path) -> tuple[list[dict], list[str]]:
    """(per-episode rows with their classification, mismatches against results.json) of one chunk."""
    pop, q_all = load_run(run_dir)
    committed = json.loads((run_dir / "results.json").read_text())
    rows_out, problems = [], []
    for (m, rows, _), q_params in zip(pop.member_rows(), q_all):
        per_run = ev.episodes_for([r["norm_id"] for r in rows])
        arr = lambda f: jnp.asarray([[f(e) for e in eps] for eps in per_run], jnp.int32)
        keys = jnp.stack([jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps]) for eps in per_run])
        out = _program(m)(
            q_params, keys, arr(lambda e: e["layout_id"]), arr(lambda e: e["norm_id"]), arr(lambda e: e["group"])
        )
        raw, rec, task = jax.tree.map(np.asarray, jax.block_until_ready(out))
        tables = ev.summarize_groups(rows, per_run, raw, "reward_condition")
        for cond, t in tables.items():
            want = committed["results"][m.config.arch][cond]
            got = {k: v for k, v in t.items() if k != "episodes"}
            problems += _differences(f"{run_dir.name} {cond} summary", got, want)
            problems += _differences(
                f"{run_dir.name} {cond} episodes", t["episodes"], committed["episodes"][m.config.arch][cond]
            )
        flat = [e for eps in per_run for e in eps]
        rec = {k: v.reshape(len(flat), *v.shape[2:]) for k, v in rec.items()}
        raw = {k: v.reshape(len(flat)) for k, v in raw.items()}
        task = {k: v.reshape(len(flat)) for k, v in task.items()}
        conds = [r["reward_condition"] for r in rows for _ in range(len(per_run[0]))]
        for i, e in enumerate(flat):
            steps = {k: v[i] for k, v in rec.items()}
            c = classify(int(raw["goals"][i]), bool(raw["finished"][i]), int(task["goal_kind"][i]), steps)
            if c["exit_cell"] is not None:  # which door it left by, beside the one it came in by
                doors = [tuple(int(x) for x in d) for d in np.asarray(load_layout(e["layout"]).doors)]
                c["left_by_entry_door"] = doors.index(c["exit_cell"]) == int(task["entry_door"][i])
            rows_out.append(
                dict(
                    reward_condition=conds[i],
                    norm=e["norm"],
                    family=e["family"],
                    condition=e["condition"],
                    layout=e["layout"],
                    episode=e["episode"],
                    task=int(raw["goals"][i]) / 2.0,
                    wait_share=float(raw["waits"][i]) / max(int(raw["path_length"][i]), 1),
                    exit_specified=bool(task["exit_door"][i] != ANY_DOOR),
                    entry_door=C.DOOR_NAMES[int(task["entry_door"][i])],
                    goal_kind=int(task["goal_kind"][i]),
                    **c,
                )
            )
    return rows_out, problems


def _differences(where: str, got, want, tol: float = 1e-9) -> list[str]:
    """Paths at which two JSON-like values differ (floats to a relative `tol`)."""
    if isinstance(want, dict) and isinstance(got, dict):
        keys = set(want) | set(got)
        return [p for k in sorted(keys, key=str) for p in _differences(f"{where}.{k}", got.get(k), want.get(k), tol)]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(got)} entries, committed {len(want)}"]
        return [p for i, (g, w) in enumerate(zip(got, want)) for p in _differences(f"{where}[{i}]", g, w, tol)]
    if isinstance(want, float) or isinstance(got, float):
        if got is None or want is None or not math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol):
            return [f"{where}: replay {got}, committed {want}"]
        return []
    return [] if got == want else [f"{where}: replay {got}, committed {want}"]


# ---------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------


def _longest_run(flags: np.ndarray) -> int:
    best = cur = 0
    for f in flags:
        cur = cur + 1 if f else 0
        best = max(best, cur)
    return best


def classify(goals: int, finished: bool, goal_kind: int, steps: dict) -> dict:
    """Outcome, behaviour and indicators of one episode from its newcomer's per-step record.

    `steps`: arrays over the scan's steps: live (the newcomer on the grid, episode not over),
    pos / next_pos / target [T, 2], action, forced (a service WAIT), exited, received (pushed or moved
    into), leg and timer (at the step's start), held (another agent on the goal-1 cell).
    """
    live = np.asarray(steps["live"], bool)
    s = {k: np.asarray(v)[live] for k, v in steps.items() if k != "live"}
    n = int(live.sum())
    still = (s["next_pos"] == s["pos"]).all(-1) & ~s["exited"] if n else np.zeros(0, bool)
    own_wait = (s["action"] == C.WAIT) & ~s["forced"]
    blocked = (s["action"] != C.WAIT) & still
    received = int(s["received"].sum())
    out = dict(
        outcome="success",
        behaviour=None,
        steps=n,
        received=received,
        stuck=_longest_run(still) >= STUCK_RUN,
        goal_cell_held=False,
        service_interrupted=False,
        exit_step=None,
        exit_cell=None,
        start_distance=int(s["distance"][0]) if n and "distance" in s else None,
    )
    if s["exited"].any():
        k = int(np.argmax(s["exited"]))
        out["exit_step"], out["exit_cell"] = k + 1, tuple(int(x) for x in s["target"][k])
    if goals == 2:
        return out
    if finished:
        out["outcome"] = "exited_in_goal1" if goals == 0 else "wrong_exit"
        return out
    out["outcome"] = "timeout_0_goals" if goals == 0 else "timeout_1_goal"
    leg = s["leg"] == goals  # the leg it timed out in
    m = int(leg.sum())
    if goals == 0:
        out["service_interrupted"] = bool((s["timer"] > 0).any())
        out["goal_cell_held"] = bool(goal_kind == GOAL_CELL and m and s["held"][leg].mean() >= HELD_SHARE)
    if m == 0:
        out["behaviour"] = "other"
        return out
    cells = {tuple(p) for p in s["next_pos"][leg][-OSCILLATION_WINDOW:]}
    if own_wait[leg].mean() >= WAITING_SHARE:
        out["behaviour"] = "waiting"
    elif blocked[leg].mean() >= BLOCKED_SHARE:
        out["behaviour"] = "blocked"
    elif len(cells) <= OSCILLATION_CELLS:
        out["behaviour"] = "oscillating"
    else:
        out["behaviour"] = "wandering"
    return out


def _training_starts() -> dict:
    dist, door = training_start_distances()
    pairs = Counter(f"{a}/{int(d)}" for a, d in zip(door, dist))
    return dict(
        episodes=len(dist),
        distance=quartiles(dist.tolist()),
        by_entry_door_and_distance=dict(sorted(pairs.items())),
        share_at_least_6=round(float((dist >= 6).mean()), 4),
    )


def _reference(run_dir: Path) -> dict:
    """The planners' task success on the same test episodes (committed `normjax evaluate` files)."""
    ours = json.loads((run_dir / "results.json").read_text())["protocol"]["scenario_hash"]
    out = {}
    for name in ("blind", "oracle"):
        d = json.loads((ROOT / "benchmarks" / "results" / f"protocol_{name}.json").read_text())
        out[name] = dict(
            seen_task=d["seen"]["overall"]["task"],
            unseen_task=d["unseen"]["overall"]["task"],
            same_scenarios=d["meta"]["scenario_hash"] == ours,
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    ap.add_argument("--runs", type=Path, default=RUNS)
    ap.add_argument("--out", type=Path, default=RESULTS / "dqn_failure_causes.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows, problems, chunks, train_exits, closed = [], [], [], {}, []
    for cond in args.conditions:
        for part in sorted((args.runs / cond).glob("part*")):
            r, p = replay_chunk(part)
            loaded = load_run(part)
            t = training_phase_exits(*loaded)
            closed += closed_door_tests(*loaded)
            train_exits[cond] = {k: train_exits.get(cond, {}).get(k, 0) + v for k, v in t.items()}
            rows += r
            problems += p
            chunks.append(str(part.relative_to(ROOT)))
            print(f"{part.relative_to(ROOT)}: {len(r)} episodes replayed, {len(p)} differences", flush=True)
    if problems:
        print("the replay does not reproduce the committed final tests:\n" + "\n".join(problems[:40]), file=sys.stderr)
        return 1
    cells = {
        f"{c} {split}": breakdown([r for r in rows if r["reward_condition"] == c and r["condition"] == split])
        for c in args.conditions
        for split in ("seen", "unseen")
    }
    payload = dict(
        what="failure causes of the committed 1M DQN-MLP final tests (replayed) and the noise of their table cells",
        command="python -m benchmarks.dqn_failure_causes " + " ".join(argv if argv is not None else sys.argv[1:]),
        machine=machine(),
        seconds=round(time.perf_counter() - t0, 1),
        chunks=chunks,
        replay_equals_committed=True,
        thresholds=dict(
            waiting_share=WAITING_SHARE,
            blocked_share=BLOCKED_SHARE,
            oscillation_window=OSCILLATION_WINDOW,
            oscillation_cells=OSCILLATION_CELLS,
            stuck_run=STUCK_RUN,
            held_share=HELD_SHARE,
        ),
        cells=cells,
        training_starts=_training_starts(),
        training_phase_exits=dict(
            episodes_per_run=TRAINING_EPISODES,
            **{
                c: dict(t, left_in_goal1_pct=round(100 * t["left_in_goal1"] / max(t["tasks_ended"], 1), 1))
                for c, t in train_exits.items()
            },
        ),
        closed_door=closed_door_cells(closed),
        reference=_reference(args.runs / args.conditions[0] / "part0"),
        noise=noise_rows(args.runs, rows),
        validation=validation_rows(args.runs, args.conditions),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1, default=str))
    print(f"wrote {args.out} ({payload['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
