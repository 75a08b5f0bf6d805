"""The run directory's JSON-lines logs, written by `train.run` between compiled blocks.

One row per run of the population (`run` indexes the whole population; `offset` is a
member's first run) at each block's end in ``metrics.jsonl`` (`metric_rows`: the block's
replay-batch TD loss and Q values, rewards, sanctions, collisions, goals per step) and,
with probe states, in ``probes.jsonl`` (`probe_rows`); at each validation point one row per
run and validation layout, then one over all its layouts (`layout` = `ALL`), in
``validation.jsonl`` (`validation_rows`), and the one-line summary the run logs
(`validation_summary`).  `metric_rows` and `probe_rows` gather their values to the host
(`train.multihost.to_host`: a collective across processes, so every process calls them);
process 0 alone appends the rows (`append_jsonl`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from normjax.norms import NORMS
from normjax.train.multihost import to_host

ALL = "all"  # the `layout` of the validation row that pools a run's layouts


def metric_rows(rows, runners, step, offset=0):
    """One row per run of a member; `run` indexes the whole population."""
    m = to_host(runners.metrics)
    out = []
    for i, r in enumerate(rows):
        steps = max(float(m.steps[i]), 1.0)
        upd = max(float(m.updates[i]), 1.0)
        out.append(
            dict(
                step=int(step),
                run=offset + i,
                arch=r["arch"],
                norm=NORMS[r["norm_id"]].name,
                family=NORMS[r["norm_id"]].family,
                reward_condition=r["reward_condition"],
                seed=r["seed"],
                td_loss=float(m.loss[i]) / upd if m.updates[i] else None,
                q_mean=float(m.q_mean[i]) / upd if m.updates[i] else None,
                reward_per_step=float(m.reward[i]) / steps,
                sanctions_per_step=float(m.sanctions[i]) / steps,
                collisions_per_step=float(m.collisions[i]) / steps,
                goals_per_step=float(m.goals[i]) / steps,
                wait_share=float(m.waits[i]) / steps,
                episodes=int(m.episodes[i]),
                episode_return=(float(m.episode_return[i]) / float(m.episodes[i])) if m.episodes[i] else None,
            )
        )
    return out


def _run_fields(r: dict, step: int, run: int) -> dict:
    return dict(
        step=int(step),
        run=run,
        arch=r["arch"],
        norm=NORMS[r["norm_id"]].name,
        family=NORMS[r["norm_id"]].family,
        reward_condition=r["reward_condition"],
    )


def validation_rows(rows, step, offset, per_run, raw) -> list[dict]:
    """Per run: one row per validation layout, then one over all its layouts (`layout` = "all").

    task = mean goals / 2, joint = share of episodes with both goals and no sanction.
    """
    out = []
    for i, r in enumerate(rows):
        task = raw["goals"][i] / 2.0
        joint = (raw["goals"][i] == 2) & (raw["sanctions"][i] == 0)
        names = [e["layout"] for e in per_run[i]]
        for lay in list(dict.fromkeys(names)) + [ALL]:
            sel = np.array([lay in (ALL, n) for n in names])
            out.append(
                dict(
                    _run_fields(r, step, offset + i),
                    layout=lay,
                    episodes=int(sel.sum()),
                    task=float(task[sel].mean()),
                    joint=float(joint[sel].mean()),
                )
            )
    return out


def probe_rows(rows, step, offset, loss, max_q) -> list[dict]:
    loss, max_q = np.asarray(to_host(loss)), np.asarray(to_host(max_q))
    return [
        dict(
            _run_fields(r, step, offset + i), seed=r["seed"], probe_td_loss=float(loss[i]), probe_max_q=float(max_q[i])
        )
        for i, r in enumerate(rows)
    ]


def append_jsonl(path: Path, rows):
    with path.open("a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def validation_summary(val: list[dict], step: int, layouts) -> str:
    """The log line of a validation point: mean task and joint rates per layout, then over all."""
    return f"validation at {step:,}: " + "; ".join(
        f"{lay} task {100 * np.mean([v['task'] for v in val if v['layout'] == lay]):.1f}% "
        f"joint {100 * np.mean([v['joint'] for v in val if v['layout'] == lay]):.1f}%"
        for lay in tuple(layouts) + (ALL,)
    )
