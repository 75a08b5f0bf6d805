"""Table A5 rows: a ``finetune-eval`` output with 95% intervals over norms.

`normjax finetune-eval --out DIR` writes ``DIR/metrics.json`` (the model, the
records file it read, per-task metrics) and ``DIR/replies.jsonl`` (one reply
per record, in the records' order).  `read_finetune` re-grades every reply with
the task verifiers (`normjax.finetune.rewards.reward`; a reward of 1 or more is
correct, as `finetune-eval` counts), checks that it reproduces ``metrics.json``,
and `a5_cells` gives each metric with a 95% interval from a bootstrap over the
records' norms (records of one norm share its community and episodes): the
accuracy per task, the judgment's balanced accuracy and the file's score
(`normjax.finetune.evaluate.score`), all from the same resampled norms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normjax.finetune.evaluate import read_records, score
from normjax.finetune.rewards import reward
from normjax.results import stats

METRICS = ("compliant_action", "norm_judgment", "norm_judgment_balanced", "norm_selection", "score")
NAMES = {
    "compliant_action": "action accuracy",
    "norm_judgment": "judgment accuracy",
    "norm_judgment_balanced": "judgment balanced accuracy",
    "norm_selection": "selection accuracy",
    "score": "score (Table A5)",
}


@dataclass
class FinetuneResult:
    label: str
    sources: list[str]
    norm: np.ndarray  # per record
    task: np.ndarray
    hit: np.ndarray  # 1.0 correct, 0.0 not
    violates: np.ndarray  # judgment records' label (False elsewhere)


def is_finetune_output(path: Path) -> bool:
    file = path / "metrics.json" if path.is_dir() else path
    if not file.is_file() or file.name != "metrics.json":
        return False
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "tasks" in data and "data" in data


def read_finetune(path: Path) -> FinetuneResult:
    out_dir = path if path.is_dir() else path.parent
    metrics = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    data = Path(metrics["data"])
    if not data.is_absolute() and not data.is_file():
        data = out_dir / data
    if not data.is_file():
        raise ValueError(
            f"{out_dir}: its records file {metrics['data']!r} is not found (give the path it was run with)"
        )
    replies_path = out_dir / "replies.jsonl"
    if not replies_path.is_file():
        raise ValueError(f"{out_dir}: no replies.jsonl (finetune-eval writes it with --out)")
    records = read_records(data)
    replies = [json.loads(line) for line in replies_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(replies) != len(records) or any(
        (r["task"], r.get("norm"), r.get("t")) != (x["task"], x.get("norm"), x.get("t"))
        for r, x in zip(replies, records)
    ):
        raise ValueError(f"{out_dir}: replies.jsonl does not match the records of {data} one for one")
    hit = np.asarray([float(reward(r["reply"], x) >= 1.0) for r, x in zip(replies, records)])
    task = np.asarray([x["task"] for x in records])
    for name, m in metrics["tasks"].items():
        got = float(hit[task == name].mean())
        if abs(got - m["accuracy"]) > 1e-9:
            raise ValueError(f"{out_dir}: re-graded {name} accuracy {got} differs from metrics.json's {m['accuracy']}")
    return FinetuneResult(
        label=f"{metrics.get('model', out_dir.name)} on {data.name}",
        sources=[str(out_dir)],
        norm=np.asarray([str(x.get("norm")) for x in records]),
        task=task,
        hit=hit,
        violates=np.asarray([bool(x.get("violates")) for x in records]),
    )


def _totals(r: FinetuneResult, ids: np.ndarray) -> dict:
    """Per-norm sums the metrics are ratios of."""
    inv = np.searchsorted(ids, r.norm)
    judged = r.task == "norm_judgment"
    parts = dict(
        action=(r.task == "compliant_action"),
        select=(r.task == "norm_selection"),
        judge=judged,
        pos=judged & r.violates,
        neg=judged & ~r.violates,
    )
    out = {}
    for name, sel in parts.items():
        out[f"{name}_hit"] = np.bincount(inv[sel], r.hit[sel], minlength=len(ids))
        out[f"{name}_n"] = np.bincount(inv[sel], minlength=len(ids)).astype(float)
    return out


def _metrics(t: dict, w: np.ndarray) -> dict:
    """Every metric under norm weights `w` [resamples, norms] (NaN where a task is absent)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = lambda k: (w @ t[f"{k}_hit"]) / (w @ t[f"{k}_n"])
        out = {"compliant_action": ratio("action"), "norm_selection": ratio("select"), "norm_judgment": ratio("judge")}
        rates = [ratio(k) for k in ("pos", "neg") if t[f"{k}_n"].sum() > 0]
        out["norm_judgment_balanced"] = np.mean(rates, 0) if rates else np.full(len(w), np.nan)
    by_task = {
        "compliant_action": {"accuracy": out["compliant_action"]},
        "norm_judgment": {"balanced_accuracy": out["norm_judgment_balanced"]},
        "norm_selection": {"accuracy": out["norm_selection"]},
    }
    sizes = {"compliant_action": "action_n", "norm_judgment": "judge_n", "norm_selection": "select_n"}
    present = {k: v for k, v in by_task.items() if t[sizes[k]].sum() > 0}
    scores = []
    for i in range(len(w)):
        s = score({k: {m: float(a[i]) for m, a in v.items()} for k, v in present.items()})
        scores.append(np.nan if s is None else s)
    out["score"] = np.asarray(scores, float)
    return out


def a5_cells(r: FinetuneResult, seed: int = 0, n_resamples: int = stats.RESAMPLES) -> list[dict]:
    """One cell per metric: mean, low, high in percent (percentile interval over resampled norms)."""
    ids = np.unique(r.norm)
    t = _totals(r, ids)
    point = _metrics(t, np.ones((1, len(ids))))
    rng = np.random.default_rng([seed, 5])
    boot = _metrics(t, stats.resample_weights(np.zeros(len(ids), int), n_resamples, rng))
    cells = []
    for m in METRICS:
        est = boot[m][~np.isnan(boot[m])]
        mean = float(point[m][0])
        if np.isnan(mean):
            continue
        low, high = np.quantile(est, [0.025, 0.975]) if len(est) else (np.nan, np.nan)
        cells.append(
            dict(
                label=r.label,
                metric=m,
                mean=100 * mean,
                low=100 * float(low),
                high=100 * float(high),
                clusters=len(ids),
            )
        )
    return cells


def a5_grid(results: list[FinetuneResult], cells: list[dict]) -> dict:
    from normjax.results.render import fmt_cell

    idx = {(c["label"], c["metric"]): c for c in cells}
    rows = [
        [r.label, str(len(r.hit)), str(len(np.unique(r.norm)))] + [fmt_cell(idx.get((r.label, m))) for m in METRICS]
        for r in results
    ]
    header = ["model and records", "records", "norms"] + [NAMES[m] for m in METRICS]
    title = "Table A5 metrics (%) with 95% intervals (bootstrap over the records' norms)"
    return dict(title=title, header=header, rows=rows)


__all__ = ["FinetuneResult", "a5_cells", "a5_grid", "is_finetune_output", "read_finetune"]
