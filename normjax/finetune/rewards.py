"""Verifiers of the four training tasks (paper appendix §12), as plain functions.

    reward(completion: str, record: dict) -> float      one reply, one record
    reward_funcs(prompts=None, completions=..., **columns) -> list[float]   a batch

The per-record verifiers read only the record's stored fields (no JAX, no
world): `task`, and per task

* ``compliant_action``: ``allowed_actions`` (ids 0-4 scoring 1: the
  norm-aware oracle's action and its equally fast compliant tie set).  The
  reply is the interactive stage's JSON (`normjax.llm.parse.parse_reply`):
  1 for an allowed action, 0 otherwise; -0.1 for an unparsable reply; +0.1
  for a parseable reply with a non-empty belief;
* ``norm_judgment``: ``violates`` (bool).  Reply ``{"reasoning": ...,
  "violates": true|false}`` (also "yes"/"no" strings): 1 / 0, +0.1 for
  parseable output;
* ``norm_selection``: ``answer`` (a letter).  Reply ``{"reasoning": ...,
  "answer": "C"}``: 1 / 0, +0.1 for parseable JSON with a letter;
* ``action_judgment`` records keep their own task (one of the two above),
  so `reward` grades each by its own verifier.

`reward_funcs` has the signature RL fine-tuning libraries call (TRL's
GRPO/RLOO ``reward_funcs``: keyword arguments ``prompts``, ``completions``
and one list per dataset column, returning one float per completion);
a completion may be a string or a list of chat messages (the last one's
``content`` is graded).
"""

from __future__ import annotations

import string

from normjax.llm.parse import find_objects, parse_reply

UNPARSABLE = -0.1
FORMAT_BONUS = 0.1
TASKS = ("compliant_action", "norm_judgment", "norm_selection", "action_judgment")
LETTERS = string.ascii_uppercase
_TRUE = {"true", "yes", "violates", "violation", "1"}
_FALSE = {"false", "no", "complies", "compliant", "0"}


def _field(obj: dict, name: str):
    """A key of `obj` compared case-insensitively (`-`/spaces as `_`), or None."""
    for k, v in obj.items():
        if str(k).strip().lower().replace("-", "_").replace(" ", "_") == name:
            return v
    return None


def _last_with(text: str, name: str):
    """The value of `name` in the last JSON object of the reply that has it, else None."""
    found = [v for v in (_field(o, name) for o in find_objects(text)) if v is not None]
    return found[-1] if found else None


def parse_judgment(text) -> bool | None:
    """True (violates) / False (complies) from a judgment reply, or None if unparsable."""
    if not isinstance(text, str):
        return None
    v = _last_with(text, "violates")
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    return None


def parse_selection(text, n_choices: int = 26) -> str | None:
    """The chosen letter (upper case) of a selection reply, or None if unparsable."""
    if not isinstance(text, str):
        return None
    v = _last_with(text, "answer")
    if not isinstance(v, str):
        return None
    s = v.strip().strip("().:").strip().upper()
    return s if len(s) == 1 and s in LETTERS[:n_choices] else None


def compliant_action_reward(completion: str, record: dict) -> float:
    reply = parse_reply(completion, "interaction")
    if reply.error is not None:
        return UNPARSABLE
    score = 1.0 if reply.action in set(record["allowed_actions"]) else 0.0
    return score + (FORMAT_BONUS if reply.belief else 0.0)


def norm_judgment_reward(completion: str, record: dict) -> float:
    said = parse_judgment(completion)
    if said is None:
        return 0.0
    return (1.0 if said == bool(record["violates"]) else 0.0) + FORMAT_BONUS


def norm_selection_reward(completion: str, record: dict) -> float:
    said = parse_selection(completion, len(record["choices"]))
    if said is None:
        return 0.0
    return (1.0 if said == record["answer"] else 0.0) + FORMAT_BONUS


VERIFIERS = {
    "compliant_action": compliant_action_reward,
    "norm_judgment": norm_judgment_reward,
    "norm_selection": norm_selection_reward,
}


def completion_text(completion) -> str:
    """The graded text: a string, or the last message's content of a chat completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content")
        return content if isinstance(content, str) else ""
    if isinstance(completion, dict):
        content = completion.get("content")
        return content if isinstance(content, str) else ""
    return ""


def reward(completion, record: dict) -> float:
    """The reward of one reply for one record, by the record's own task."""
    task = record.get("task")
    if task not in VERIFIERS:
        raise ValueError(f"record task {task!r} has no verifier; valid: {', '.join(VERIFIERS)}")
    return VERIFIERS[task](completion_text(completion), record)


def reward_funcs(prompts=None, completions=(), **columns) -> list[float]:
    """Batch rewards in the RL libraries' calling convention (module docstring).

    `columns` holds one list per dataset column (``task``, ``allowed_actions``,
    ``violates``, ``answer``, ``choices``, ...), aligned with `completions`;
    extra keywords the trainer passes (e.g. ``trainer_state``) are ignored.
    """
    fields = {k: v for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == len(completions)}
    if "task" not in fields:
        raise ValueError("reward_funcs needs the dataset's 'task' column (one entry per completion)")
    return [reward(c, {k: v[i] for k, v in fields.items()}) for i, c in enumerate(completions)]


def accuracy(completions, records: list[dict]) -> dict:
    """Table A5's metrics of greedy replies: accuracy, and balanced accuracy for judgment records."""
    hits = [reward(c, r) >= 1.0 for c, r in zip(completions, records)]
    out = {"n": len(hits), "accuracy": sum(hits) / len(hits) if hits else None}
    judged = [(h, bool(r["violates"])) for h, r in zip(hits, records) if r.get("task") == "norm_judgment"]
    if judged:
        rates = [
            sum(h for h, y in judged if y == cls) / n
            for cls in (True, False)
            if (n := sum(1 for _, y in judged if y == cls))
        ]
        out["balanced_accuracy"] = sum(rates) / len(rates)
    return out


__all__ = [
    "FORMAT_BONUS",
    "LETTERS",
    "TASKS",
    "UNPARSABLE",
    "VERIFIERS",
    "accuracy",
    "completion_text",
    "compliant_action_reward",
    "norm_judgment_reward",
    "norm_selection_reward",
    "parse_judgment",
    "parse_selection",
    "reward",
    "reward_funcs",
]
