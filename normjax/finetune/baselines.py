"""Shortcut and constant baselines of a records file (the rows a model must beat).

    baselines(records) -> {task: {baseline: score}}
    table(columns) -> str          columns: {file name: baselines(...)} (or a model's scores)

Every baseline answers from the record's stored fields, never from a reply, and is
scored by the task's metric (Table A5): balanced accuracy for Norm Judgment,
accuracy for Compliant Action and Norm Selection.

* Norm Judgment: ``always violates`` / ``never violates`` (constants; also the
  majority class), ``random`` (a fair coin: 0.5 in expectation), and three
  rules that read only the judged agent, from ``state`` (its history steps and
  the agents now): ``any earlier red cross`` (the agent has a cross in any listed
  step), ``last move crossed`` (a cross in the previous step), ``newcomer
  violates`` (the judged agent is the newcomer), ``entering a door / chair /
  zone r violates`` (the kind of cell the move enters);
* Norm Selection: a constant letter per option, the ``majority letter`` of the
  file, ``random`` (1/k in expectation), and ``novel option`` (the first option that
  is not one of the family's training norms: the answer on held-out files that
  list the training norms plus the true one);
* Compliant Action: a constant action per action, ``best constant``, the
  ``majority class`` (the oracle's most frequent action), ``random`` (a uniform
  action: the mean share of scoring actions).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from normjax.norms import NORMS
from normjax.runtime.turns import PROMPT_ACTIONS

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def balanced_accuracy(said: list[bool], truth: list[bool]) -> float | None:
    rates = []
    for cls in (True, False):
        idx = [j for j, y in enumerate(truth) if y == cls]
        if idx:
            rates.append(sum(said[j] == cls for j in idx) / len(idx))
    return sum(rates) / len(rates) if rates else None


def _crossed_before(rec: dict) -> bool:
    st = rec["state"]
    uid = st["subject"]["uid"]
    return any(u == uid and s for step in st["history"] for u, s in zip(step["uid"], step["sanctioned"]))


def _crossed_last(rec: dict) -> bool:
    st = rec["state"]
    return any(a["red_cross"] for a in st["agents"] if a["slot"] == st["subject"]["slot"])


def judgment_baselines(records: list[dict]) -> dict:
    truth = [bool(r["violates"]) for r in records]
    out = {
        "always violates": balanced_accuracy([True] * len(truth), truth),
        "never violates": balanced_accuracy([False] * len(truth), truth),
        "majority class": balanced_accuracy([Counter(truth).most_common(1)[0][0]] * len(truth), truth),
        "random": 0.5,
    }
    if all(r.get("state") for r in records):
        out["any earlier red cross"] = balanced_accuracy([_crossed_before(r) for r in records], truth)
        out["last move crossed"] = balanced_accuracy([_crossed_last(r) for r in records], truth)
        out["newcomer violates"] = balanced_accuracy([r["state"]["subject"]["slot"] == 0 for r in records], truth)
        if all("target" in r["state"]["subject"] for r in records):
            from normjax.finetune.state import TARGET_KINDS, target_kind

            kinds = [target_kind(r["state"]["subject"]["target"]) for r in records]
            for j, name in enumerate(TARGET_KINDS[:-1]):
                out[f"entering a {name.replace('_', ' ')} violates"] = balanced_accuracy([k == j for k in kinds], truth)
    return out


def _training_descriptions(family: str) -> set[str]:
    return {n.description for n in NORMS if n.family == family and not n.held_out}


def novel_option(rec: dict) -> str:
    """The first option that is not a training norm of the record's family (else A)."""
    seen = _training_descriptions(rec["family"])
    return next((LETTERS[j] for j, c in enumerate(rec["choices"]) if c not in seen), "A")


def selection_baselines(records: list[dict]) -> dict:
    k = max(len(r["choices"]) for r in records)
    answers = [r["answer"] for r in records]
    out = {f"constant {a}": float(np.mean([x == a for x in answers])) for a in LETTERS[:k]}
    majority = Counter(answers).most_common(1)[0][0]
    out["majority letter"] = float(np.mean([x == majority for x in answers]))
    out["random"] = float(np.mean([1 / len(r["choices"]) for r in records]))
    if all(r.get("family") for r in records):
        out["novel option"] = float(np.mean([novel_option(r) == r["answer"] for r in records]))
    return out


def action_baselines(records: list[dict]) -> dict:
    allowed = [set(r["allowed_actions"]) for r in records]
    out = {
        f"constant {PROMPT_ACTIONS[a]}": float(np.mean([a in s for s in allowed])) for a in range(len(PROMPT_ACTIONS))
    }
    out["best constant"] = max(out.values())
    oracle = [r.get("oracle_action") for r in records if r.get("oracle_action") is not None]
    if oracle:
        majority = Counter(oracle).most_common(1)[0][0]
        out["majority class"] = float(np.mean([majority in s for s in allowed]))
    out["random"] = float(np.mean([len(s) / len(PROMPT_ACTIONS) for s in allowed]))
    return out


BY_TASK = {
    "norm_judgment": judgment_baselines,
    "norm_selection": selection_baselines,
    "compliant_action": action_baselines,
}
METRIC = {"norm_judgment": "balanced accuracy", "norm_selection": "accuracy", "compliant_action": "accuracy"}


def baselines(records: list[dict]) -> dict:
    """{task: {baseline name: score}} for every task in the records."""
    out = {}
    for task in sorted({r["task"] for r in records}):
        if task not in BY_TASK:
            raise ValueError(f"record task {task!r} has no baselines; valid: {', '.join(BY_TASK)}")
        out[task] = BY_TASK[task]([r for r in records if r["task"] == task])
    return out


def table(columns: dict[str, dict]) -> str:
    """One block per task: a row per baseline (or model), a column per file that has the task
    (Table A5 style, in percent)."""
    lines = []
    tasks = sorted({t for col in columns.values() for t in col})
    for task in tasks:
        names = [name for name, col in columns.items() if task in col]
        rows: list[str] = []
        for col in columns.values():
            rows += [k for k in col.get(task, {}) if k not in rows]
        width = max(len(r) for r in rows + [task])
        lines.append(f"{task} ({METRIC[task]})")
        lines.append(" " * width + " | " + " | ".join(names))
        for row in rows:
            cells = []
            for name in names:
                v = columns[name].get(task, {}).get(row)
                cells.append(("-" if v is None else f"{100 * v:.1f}").rjust(len(name)))
            lines.append(row.ljust(width) + " | " + " | ".join(cells))
        lines.append("")
    return "\n".join(lines)


__all__ = ["BY_TASK", "METRIC", "baselines", "balanced_accuracy", "novel_option", "table"]
