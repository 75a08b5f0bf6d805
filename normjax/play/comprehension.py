"""The optional comprehension check of `normjax play` (``--comprehension FILE``): questions before play.

A file is a JSON list of ``{"id": "name", "text": "question", "options": [...],
"answer": "the right option"}``.  The page shows the questions (never the answers)
before the first step; every attempt is appended to ``OUT/<id>/comprehension.json``
(time, answers, which were wrong), and the world starts only once all are right.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from normjax.play.guard import Refused
from normjax.play.questionnaire import read_question_list

RECORD = "comprehension.json"
MAX_QUESTIONS = 20


def load(path) -> list[dict]:
    """The questions of a comprehension file; ValueError naming what is wrong."""
    p = Path(path)
    qs = read_question_list(p, "--comprehension", MAX_QUESTIONS)
    ids = set()
    for i, q in enumerate(qs):
        ok = (
            isinstance(q, dict)
            and set(q) == {"id", "text", "options", "answer"}
            and isinstance(q["id"], str)
            and q["id"].isidentifier()
            and q["id"] not in ids
            and isinstance(q["text"], str)
            and isinstance(q["options"], list)
            and len(q["options"]) >= 2
            and all(isinstance(o, str) for o in q["options"])
            and q["answer"] in q["options"]
        )
        if not ok:
            raise ValueError(
                f"--comprehension {p}: question {i} must be {{'id': identifier (unique), 'text': str, "
                f"'options': [2 or more str], 'answer': one of the options}}, got {q!r}"
            )
        ids.add(q["id"])
    return qs


def public(questions: list[dict]) -> list[dict]:
    """The questions as the page gets them: without the answers."""
    return [{k: q[k] for k in ("id", "text", "options")} for q in questions]


def _record(folder: Path) -> dict:
    path = folder / RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else dict(passed=False, attempts=[])


def passed(folder: Path, questions: list[dict] | None) -> bool:
    return not questions or _record(folder)["passed"]


def attempt(folder: Path, questions: list[dict], answers) -> dict:
    """Record one attempt; {"passed": bool, "wrong": [ids], "attempts": n}."""
    from normjax.play.study import write_json

    if not isinstance(answers, dict):
        raise Refused("'answers' must be an object: question id -> answer")
    rec = _record(folder)
    wrong = [q["id"] for q in questions if answers.get(q["id"]) != q["answer"]]
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    given = {q["id"]: answers.get(q["id"]) if answers.get(q["id"]) in q["options"] else None for q in questions}
    rec["attempts"].append(dict(at=now, answers=given, wrong=wrong))
    rec["passed"] = rec["passed"] or not wrong
    write_json(folder / RECORD, rec)
    return dict(passed=rec["passed"], wrong=wrong, attempts=len(rec["attempts"]))


__all__ = ["RECORD", "attempt", "load", "passed", "public"]
