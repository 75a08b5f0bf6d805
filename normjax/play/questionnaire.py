"""The post-study questionnaire of `normjax play`: questions from a file, answers in ``OUT/<id>/questionnaire.json``.

A questionnaire file (``--questionnaire FILE``) is JSON: a list of questions, each
``{"id": "evidence", "text": "...", "options": ["...", ...]}`` (one of the options) or
without ``options`` (free text, at most 2,000 characters).  The default, `DEFAULT`, is
the paper's evidence-source question (Figure 4d: where participants' evidence about the
norm came from).  Answers are checked against the questions and written once, whole.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from normjax.play.guard import Refused

ANSWERS_FILE = "questionnaire.json"
MAX_TEXT = 2000
MAX_QUESTIONS = 50
DEFAULT = [
    dict(
        id="evidence_source",
        text="Where did your idea of the group's rule mainly come from?",
        options=[
            "Watching the other agents (their moves and the sanctions they got)",
            "My own moves (the sanctions I got or did not get)",
            "Both about equally",
            "Neither / I am not sure",
        ],
    ),
    dict(id="comments", text="Anything else you want to tell us? (optional)"),
]


def read_question_list(path, flag: str, max_questions: int) -> list:
    """A JSON list of 1..max_questions entries from `path` (the file given to `flag`);
    ValueError naming the flag, the file and what is wrong."""
    p = Path(path)
    try:
        qs = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{flag} {p}: not a readable JSON file ({type(e).__name__})") from None
    if not isinstance(qs, list) or not 1 <= len(qs) <= max_questions:
        raise ValueError(f"{flag} {p}: must be a JSON list of 1..{max_questions} questions")
    return qs


def load(path) -> list[dict]:
    """The questions of a questionnaire file; ValueError naming what is wrong."""
    p = Path(path)
    qs = read_question_list(p, "--questionnaire", MAX_QUESTIONS)
    seen = set()
    for i, q in enumerate(qs):
        ok = (
            isinstance(q, dict)
            and set(q) <= {"id", "text", "options"}
            and isinstance(q.get("id"), str)
            and q["id"].isidentifier()
            and isinstance(q.get("text"), str)
            and q["text"].strip()
            and (
                "options" not in q
                or (isinstance(q["options"], list) and q["options"] and all(isinstance(o, str) for o in q["options"]))
            )
        )
        if not ok or q["id"] in seen:
            raise ValueError(
                f"--questionnaire {p}: question {i} must be {{'id': identifier (unique), 'text': str, "
                f"optional 'options': [str, ...]}}, got {q!r}"
            )
        seen.add(q["id"])
    return qs


def check(questions: list[dict], answers) -> dict:
    """The answers if they fit the questions (every option question answered); Refused otherwise."""
    if not isinstance(answers, dict):
        raise Refused("'answers' must be an object: question id -> answer")
    out = {}
    for q in questions:
        a = answers.get(q["id"])
        if "options" in q:
            if a not in q["options"]:
                raise Refused(f"question {q['id']!r}: choose one of the options")
        elif a is not None and (not isinstance(a, str) or len(a) > MAX_TEXT):
            raise Refused(f"question {q['id']!r}: at most {MAX_TEXT} characters of text")
        out[q["id"]] = a
    return out


def answered(folder: Path) -> bool:
    return (folder / ANSWERS_FILE).is_file()


def save(folder: Path, questions: list[dict], answers) -> None:
    """Write the participant's answers (once: a second submission is refused with 409)."""
    from normjax.play.study import write_json

    got = check(questions, answers)
    if answered(folder):
        raise Refused("the questionnaire was already answered", 409)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    write_json(folder / ANSWERS_FILE, dict(answered_at=now, questions=questions, answers=got))


def read(folder: Path) -> dict | None:
    path = folder / ANSWERS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


__all__ = ["ANSWERS_FILE", "DEFAULT", "answered", "check", "load", "read", "save"]
