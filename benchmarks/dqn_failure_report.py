"""The tallies and the noise part of `benchmarks.dqn_failure_causes` (not a script of its own:
run `python -m benchmarks.dqn_failure_causes`).

* `breakdown`: one table cell's episodes (a reward condition and a split) tallied by outcome,
  time-out behaviour, family, layout and norm, with the task points each cause costs, when
  and by which door the early leavers left, and the distance to goal 1 at entry.
* `noise_rows`: every (reward condition, split, family) cell of the paper's Tables A6, A8
  and A9 for DQN-MLP (`normjax.results.paper.APPENDIX_DQN`), joint and task, from the
  committed chunks read by `normjax table`'s reader and interval (`normjax.results.cells.
  result_cells`: the cluster bootstrap over norms within families, docs/results.md
  "Method"), so each interval is the one `normjax table` prints; and the sparse_penalty
  WAIT share and all-wait episodes (the paper's 55.4% / 19.3%, `APPENDIX_WAIT`) from the
  replayed episodes with the same bootstrap (`stats.cell_interval`, norms within families).
* `validation_rows`: the same policies' validation at 1M transitions on the cafe (12
  episodes per norm, seen-condition episodes of other protocol seeds, `validation.jsonl`):
  four times the final tests' episodes, so a second, larger sample of the same policies.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from normjax.results import stats
from normjax.results.cells import cell_rng, result_cells
from normjax.results.paper import APPENDIX_DQN, APPENDIX_WAIT
from normjax.results.readers import read
from normjax.results.records import SUCCESS

FINAL_STEP = 1_000_000
FAMILIES = ("access", "procedure", "coordination", "allocation")


def breakdown(rows: list[dict]) -> dict:
    """Counts and lost task points by outcome / behaviour, per family and layout, for one cell's episodes."""
    n = len(rows)
    failed = [r for r in rows if r["task"] < 1.0]

    def points(rs):
        return round(100.0 * sum(1.0 - r["task"] for r in rs) / n, 2) if n else 0.0

    def tally(key, rs):
        groups = defaultdict(list)
        for r in rs:
            groups[str(r[key])].append(r)
        return {k: dict(episodes=len(v), task_points_lost=points(v)) for k, v in sorted(groups.items())}

    timeouts = [r for r in failed if r["outcome"].startswith("timeout")]
    by_norm = Counter(r["norm"] for r in failed)
    norms = sorted({r["norm"] for r in rows})
    return dict(
        episodes=n,
        task=round(100.0 * sum(r["task"] for r in rows) / n, 2) if n else None,
        failed=len(failed),
        task_points_lost=points(failed),
        by_outcome=tally("outcome", failed),
        timeout_behaviour=tally("behaviour", timeouts),
        timeout_by_outcome_and_behaviour=dict(Counter(f"{r['outcome']}/{r['behaviour']}" for r in timeouts)),
        indicators=dict(
            received_collision=sum(r["received"] > 0 for r in failed),
            stuck=sum(r["stuck"] for r in failed),
            goal_cell_held=sum(r["goal_cell_held"] for r in failed),
            service_interrupted=sum(r["service_interrupted"] for r in failed),
            successes_with_received_collision=sum(r["received"] > 0 for r in rows if r["task"] == 1.0),
        ),
        by_family={
            f: dict(
                episodes=sum(r["family"] == f for r in rows),
                failed=sum(r["family"] == f for r in failed),
                task_points_lost=points([r for r in failed if r["family"] == f]),
                by_outcome=dict(Counter(r["outcome"] for r in failed if r["family"] == f)),
                timeout_behaviour=dict(Counter(r["behaviour"] for r in timeouts if r["family"] == f)),
            )
            for f in FAMILIES
        },
        by_layout={
            lay: dict(episodes=sum(r["layout"] == lay for r in rows), failed=sum(r["layout"] == lay for r in failed))
            for lay in sorted({r["layout"] for r in rows})
        },
        exits_in_goal1=_exits([r for r in failed if r["outcome"] == "exited_in_goal1"]),
        exit_step_of_successes=quartiles([r["exit_step"] for r in rows if r["task"] == 1.0]),
        start_distance=dict(
            exited_in_goal1=quartiles([r["start_distance"] for r in failed if r["outcome"] == "exited_in_goal1"]),
            successes=quartiles([r["start_distance"] for r in rows if r["task"] == 1.0]),
            all=quartiles([r["start_distance"] for r in rows]),
            exits_by_distance={
                str(dist): [
                    sum(r["start_distance"] == dist for r in rows),
                    sum(r["start_distance"] == dist and r["outcome"] == "exited_in_goal1" for r in rows),
                ]
                for dist in sorted({r["start_distance"] for r in rows})
            },
        ),
        exits_by_entry_door_and_distance=_exit_rates(rows, ("entry_door", "start_distance")),
        exits_by_goal_kind=_exit_rates(rows, ("goal_kind",)),
        concentration=_concentration(norms, by_norm, rows),
        failed_episodes_per_norm=dict(by_norm.most_common()),
    )


def quartiles(xs) -> dict | None:
    return (
        dict(zip(("min", "q1", "median", "q3", "max"), np.percentile(xs, [0, 25, 50, 75, 100]).tolist()))
        if xs
        else None
    )


def _exits(rs: list[dict]) -> dict:
    """When and by which door the newcomers that left during goal 1 left."""
    return dict(
        episodes=len(rs),
        exit_step=quartiles([r["exit_step"] for r in rs]),
        within_5_steps=sum(r["exit_step"] <= 5 for r in rs),
        left_by_entry_door=sum(bool(r.get("left_by_entry_door")) for r in rs),
        exit_specified=sum(r["exit_specified"] for r in rs),
    )


def _exit_rates(rows: list[dict], keys: tuple) -> dict:
    """{"value[/value]": [episodes, of which left during goal 1]}."""
    out: dict = defaultdict(lambda: [0, 0])
    for r in rows:
        k = "/".join(str(r[x]) for x in keys)
        out[k][0] += 1
        out[k][1] += r["outcome"] == "exited_in_goal1"
    return dict(sorted(out.items()))


def _concentration(norms, by_norm: Counter, rows) -> dict:
    """How the failed episodes spread over norms, beside independent episodes at the same rate."""
    k = Counter(r["norm"] for r in rows)
    per = int(max(k.values())) if k else 0
    p = sum(by_norm.values()) / max(len(rows), 1)
    hist = Counter(by_norm.get(nm, 0) for nm in norms)
    expected = {str(j): round(len(norms) * math.comb(per, j) * p**j * (1 - p) ** (per - j), 2) for j in range(per + 1)}
    return dict(
        norms=len(norms),
        norms_with_failures=sum(1 for nm in norms if by_norm.get(nm, 0) > 0),
        norms_by_failed_episodes={str(j): hist.get(j, 0) for j in range(per + 1)},
        expected_if_independent=expected,
    )


def _inside(paper: float, low: float, high: float) -> bool:
    return bool(low - 1e-9 <= paper <= high + 1e-9)


def noise_rows(runs: Path, episodes: list[dict]) -> list[dict]:
    """One row per paper cell: ours [95% interval], the paper's, inside or not."""
    out = []
    for (arch, cond), splits in APPENDIX_DQN.items():
        if arch != "mlp" or not (runs / cond).is_dir():
            continue
        (result,) = read(str(runs / cond))
        cells = {(c["condition"], c["group"], c["metric"]): c for c in result_cells(result, metrics=SUCCESS)}
        for split, fams in splits.items():
            for fam, paper in fams.items():
                for metric, p in zip(SUCCESS, paper):
                    c = cells[(split, fam, metric)]
                    out.append(
                        dict(
                            reward_condition=cond,
                            split=split,
                            group=fam,
                            metric=metric,
                            ours=round(c["mean"], 2),
                            low=round(c["low"], 2),
                            high=round(c["high"], 2),
                            method=str(c["method"]),
                            norms=c["clusters"],
                            episodes=c["episodes"],
                            paper=p,
                            paper_inside=_inside(p, c["low"], c["high"]),
                        )
                    )
    for (arch, cond), (wait, all_wait) in APPENDIX_WAIT.items():
        sel = [e for e in episodes if e["reward_condition"] == cond and e["condition"] == "seen"]
        if arch != "mlp" or not sel:
            continue
        norms = np.array([e["norm"] for e in sel])
        fams = np.array([e["family"] for e in sel])
        share = np.array([e["wait_share"] for e in sel])
        for metric, values, p in (("wait_share", share, wait), ("all_wait_episodes", (share >= 1.0) * 1.0, all_wait)):
            c = stats.cell_interval(values, norms, fams, cell_rng(0, "seen", "overall", metric), proportion=True)
            out.append(
                dict(
                    reward_condition=cond,
                    split="seen",
                    group="overall",
                    metric=metric,
                    ours=round(100 * c["mean"], 2),
                    low=round(100 * c["low"], 2),
                    high=round(100 * c["high"], 2),
                    method=str(c["method"]),
                    norms=c["clusters"],
                    episodes=c["episodes"],
                    paper=p,
                    paper_inside=_inside(p, 100 * c["low"], 100 * c["high"]),
                )
            )
    return out


def closed_door_cells(rows: list[dict]) -> dict:
    """Per reward condition and split: task and joint (%, intervals as `noise_rows`' WAIT share)
    of the closed-door counterfactual, and how its remaining failures end."""
    out = {}
    for cond in sorted({r["reward_condition"] for r in rows}):
        for split in ("seen", "unseen"):
            sel = [r for r in rows if r["reward_condition"] == cond and r["condition"] == split]
            norms = np.array([r["norm"] for r in sel])
            fams = np.array([r["family"] for r in sel])
            cell = dict(
                episodes=len(sel),
                failed=sum(r["task"] < 1.0 for r in sel),
                timeouts=sum(not r["finished"] for r in sel),
                left_with_task_below_1=sum(r["finished"] and r["task"] < 1.0 for r in sel),
            )
            for metric in SUCCESS:
                values = np.array([float(r[metric]) for r in sel])
                c = stats.cell_interval(
                    values, norms, fams, cell_rng(0, "closed", cond, split, metric), proportion=True
                )
                cell[metric] = dict(
                    mean=round(100 * c["mean"], 2), low=round(100 * c["low"], 2), high=round(100 * c["high"], 2)
                )
            out[f"{cond} {split}"] = cell
    return out


def validation_rows(runs: Path, conditions) -> dict:
    """Per reward condition: cafe validation at 1M (joint and task, %), per-norm values
    resampled like the final tests' norms (`stats.cell_interval`, norms within families)."""
    out = {}
    for cond in conditions:
        recs = [
            json.loads(line)
            for part in sorted((runs / cond).glob("part*"))
            for line in (part / "validation.jsonl").read_text().splitlines()
            if line.strip()
        ]
        recs = [r for r in recs if r["step"] == FINAL_STEP and r["layout"] == "cafe" and r["reward_condition"] == cond]
        if not recs:
            continue
        norms = np.array([r["norm"] for r in recs])
        fams = np.array([r["family"] for r in recs])
        row = dict(norms=len(recs), episodes_per_norm=sorted({r["episodes"] for r in recs}))
        for metric in SUCCESS:
            values = np.array([r[metric] for r in recs], float)
            c = stats.cell_interval(values, norms, fams, cell_rng(0, "validation", cond, metric), proportion=True)
            row[metric] = dict(
                mean=round(100 * c["mean"], 2), low=round(100 * c["low"], 2), high=round(100 * c["high"], 2)
            )
        out[cond] = row
    return out


__all__ = ["breakdown", "closed_door_cells", "noise_rows", "quartiles", "validation_rows"]
