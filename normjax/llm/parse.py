"""Tolerant parsing of model replies (paper appendix, "Prompts": one JSON object).

    parse_reply(text, stage) -> ParsedReply

The prompts ask for exactly one JSON object: ``{"reasoning", "action",
"belief", "confidence"}`` in the interactive stage, ``{"reasoning",
"action"}`` in test episodes.  Models wrap it in code fences, put prose or a
``<think>`` block around it, change the key case, or write the action in many
spellings; the parser accepts all of that and never raises:

* the object: ``<think>...</think>`` blocks are dropped, then every ``{...}``
  that decodes as JSON (or, failing that, after removing trailing commas and
  typographic quotes, or as a Python literal with single quotes) is a
  candidate; the **last** candidate with an ``action`` key wins (a model that
  drafts a JSON example in its reasoning usually ends with its answer), else
  the reply has no usable object;
* keys are case-insensitive, ``-`` and spaces count as ``_``; aliases:
  ``reason`` / ``thought`` / ``thoughts`` for reasoning, ``hypothesis`` /
  ``norm`` / ``norm_belief`` for belief, ``conf`` for confidence;
* actions (`parse_action`): ``move up``, ``up``, ``UP``, ``Move Up``,
  ``move_up``, ``go up``, ``up.``, ``wait``, ``stay``, ``no-op``, and the ids
  0-4 (``0`` UP, ``1`` DOWN, ``2`` LEFT, ``3`` RIGHT, ``4`` WAIT, as ints or
  digit strings); anything else (``north``, ``move up then left``, 7) is
  invalid;
* confidence: a number or numeric string in [0, 1]; a value in (1, 100] or a
  string ending in ``%`` is read as a percentage; anything else is dropped
  with a warning (the previous confidence stays).

An unusable reply (no object, or no valid action) gives ``error`` set and
``action`` None: the runner records the error and the newcomer WAITs.  A
valid action with a missing belief or confidence is not an error; the
problem is listed in ``warnings`` and the previous belief is kept.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re

ACTION_WORDS = {"up": 0, "down": 1, "left": 2, "right": 3, "wait": 4, "stay": 4, "noop": 4, "no op": 4}
# The prompt's spelling of each action id (paper appendix).
PROMPT_ACTIONS = ("move up", "move down", "move left", "move right", "wait")

_ALIASES = {
    "reasoning": "reasoning", "reason": "reasoning", "thought": "reasoning", "thoughts": "reasoning",
    "action": "action",
    "belief": "belief", "hypothesis": "belief", "norm": "belief", "norm_belief": "belief",
    "norm_hypothesis": "belief",
    "confidence": "confidence", "conf": "confidence",
}
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclasses.dataclass
class ParsedReply:
    """What a reply says; `error` is None exactly when `action` is a valid id."""

    action: int | None = None
    reasoning: str = ""
    belief: str | None = None
    confidence: float | None = None
    error: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)


def parse_action(value) -> int | None:
    """Action id 0..4 from a reply's action field, or None if it names no action."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if float(value).is_integer() and 0 <= value <= 4 else None
    if not isinstance(value, str):
        return None
    s = value.strip().lower().replace("_", " ").replace("-", " ")
    s = re.sub(r"[\"'`.!,;:<>()\[\]]", " ", s)
    s = " ".join(s.split())
    if s.isdigit():
        return int(s) if 0 <= int(s) <= 4 else None
    for prefix in ("action ", "move ", "go "):
        if s.startswith(prefix):
            s = s[len(prefix):]
    return ACTION_WORDS.get(s)


def parse_confidence(value) -> float | None:
    """Confidence in [0, 1]; percentages (in (1, 100] or with '%') are scaled."""
    percent = False
    if isinstance(value, str):
        s = value.strip()
        percent = s.endswith("%")
        try:
            value = float(s.rstrip("%").strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    if v != v:  # NaN
        return None
    if percent or 1.0 < v <= 100.0:
        v /= 100.0
    return v if 0.0 <= v <= 1.0 else None


def _decode(text: str):
    """A dict decoded from one '{...}' candidate, or None."""
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text.replace("\u201c", '"').replace("\u201d", '"'))):
        try:
            obj = json.loads(attempt)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    try:
        obj = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return obj if isinstance(obj, dict) else None


def _balanced_objects(text: str):
    """Substrings '{...}' with balanced braces (strings respected), outermost first."""
    out, depth, start, quote, escape = [], 0, -1, None, False
    for i, ch in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
            continue
        if ch == '"' and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[start: i + 1])
    return out


def _normalise_keys(obj: dict) -> dict:
    out = {}
    for k, v in obj.items():
        key = _ALIASES.get(" ".join(str(k).strip().lower().replace("-", " ").split()).replace(" ", "_"))
        if key is not None and key not in out:
            out[key] = v
    return out


def find_objects(text) -> list[dict]:
    """Every JSON (or Python-literal) object in `text`, in order, ``<think>`` blocks skipped."""
    if not isinstance(text, str) or not text.strip():
        return []
    text = _THINK.sub(" ", text)
    # code fences are just text around the object
    return [obj for obj in map(_decode, _balanced_objects(text)) if obj is not None]


def extract_object(text) -> dict | None:
    """The reply's JSON object with normalised keys (see the module docstring), or None."""
    candidates = [_normalise_keys(obj) for obj in find_objects(text)]
    if not candidates:
        return None
    with_action = [c for c in candidates if "action" in c]
    return with_action[-1] if with_action else candidates[-1]


def parse_reply(text, stage: str = "test") -> ParsedReply:
    """Parse a model reply for `stage` ("interaction" or "test"); never raises."""
    try:
        return _parse(text, stage)
    except Exception as e:  # noqa: BLE001 - a reply must never crash a run
        return ParsedReply(error=f"parser failure: {type(e).__name__}: {e}")


def _parse(text, stage: str) -> ParsedReply:
    if not isinstance(text, str) or not text.strip():
        return ParsedReply(error="empty reply")
    obj = extract_object(text)
    if obj is None:
        return ParsedReply(error="no JSON object in the reply")
    out = ParsedReply()
    reasoning = obj.get("reasoning")
    if reasoning is not None:
        out.reasoning = reasoning if isinstance(reasoning, str) else json.dumps(reasoning)
    if "action" not in obj:
        out.error = "the reply has no 'action' key"
        return out
    out.action = parse_action(obj["action"])
    if out.action is None:
        out.error = f"invalid action {str(obj['action'])[:80]!r}"
    if stage == "interaction":
        belief = obj.get("belief")
        if isinstance(belief, str) and belief.strip():
            out.belief = belief.strip()
        elif belief is not None and not isinstance(belief, str):
            out.belief = json.dumps(belief)
        else:
            out.warnings.append("missing belief")
        if "confidence" not in obj:
            out.warnings.append("missing confidence")
        else:
            out.confidence = parse_confidence(obj["confidence"])
            if out.confidence is None:
                out.warnings.append(f"invalid confidence {str(obj['confidence'])[:40]!r}")
    return out


__all__ = ["ACTION_WORDS", "PROMPT_ACTIONS", "ParsedReply", "extract_object", "find_objects", "parse_action",
           "parse_confidence", "parse_reply"]
