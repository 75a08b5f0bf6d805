"""Tolerant parsing of model replies (paper appendix, "Prompts": one JSON object).

    parse_reply(text, stage) -> ParsedReply

The prompts ask for exactly one JSON object: ``{"reasoning", "action",
"belief", "confidence"}`` in the interactive stage, ``{"reasoning",
"action"}`` in test episodes.  Models wrap it in code fences, put prose or a
``<think>`` block around it, change the key case, or write the action in many
spellings; the parser accepts all of that and never raises:

* reasoning blocks: ``<think>...</think>`` (also ``<thinking>``,
  ``<reasoning>``) are dropped; text before a lone closing tag is reasoning
  too (servers that put the opening tag in the prompt); a reply that ends
  inside an unclosed block has no answer (an error, never an action taken
  from the reasoning);
* the object: every ``{...}`` with balanced braces that decodes as JSON (or,
  failing that, after removing trailing commas and typographic quotes, or as
  a Python literal with single quotes) is a candidate, searched outermost
  first, and inside a span that does not decode (so a stray ``{`` before the
  object does not hide it); the **last** candidate with an ``action`` key
  wins (a model that drafts a JSON example in its reasoning usually ends
  with its answer), else the reply has no usable object;
* keys are case-insensitive, ``-`` and spaces count as ``_``; aliases:
  ``reason`` / ``thought`` / ``thoughts`` for reasoning, ``hypothesis`` /
  ``norm`` / ``norm_belief`` for belief, ``conf`` for confidence;
* actions (`parse_action`): ``move up``, ``up``, ``UP``, ``Move Up``,
  ``move_up``, ``go up``, ``up.``, ``wait``, ``stay``, ``no-op``, and the ids
  0-4 (``0`` UP, ``1`` DOWN, ``2`` LEFT, ``3`` RIGHT, ``4`` WAIT, as ints or
  digit strings); anything else (``north``, ``move up then left``, 7) is
  invalid;
* confidence: a number or numeric string on the prompt's scale, [0, 1];
  anything else (``7``, ``1.5``, ``"80%"``, ``"high"``) is an error, never
  rescaled: a guess at the model's scale would put made-up numbers in the
  results.

An unusable reply (no object, no valid action, or a confidence off the
scale) gives ``error`` set and ``action`` None: the runner records the error
and the newcomer WAITs.  A valid action with a missing belief or confidence
is not an error; the problem is listed in ``warnings`` and the previous
belief is kept.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re

ACTION_WORDS = {"up": 0, "down": 1, "left": 2, "right": 3, "wait": 4, "stay": 4, "noop": 4, "no op": 4}

_ALIASES = {
    "reasoning": "reasoning",
    "reason": "reasoning",
    "thought": "reasoning",
    "thoughts": "reasoning",
    "action": "action",
    "belief": "belief",
    "hypothesis": "belief",
    "norm": "belief",
    "norm_belief": "belief",
    "norm_hypothesis": "belief",
    "confidence": "confidence",
    "conf": "confidence",
}
_TAG = r"(?:think|thinking|reasoning)"
_THINK = re.compile(rf"<{_TAG}>.*?</{_TAG}>", re.S | re.I)
_OPEN = re.compile(rf"<{_TAG}>", re.I)
_CLOSE = re.compile(rf"</{_TAG}>", re.I)
MAX_DECODES = 200  # candidate spans decoded per reply at most (pathological nesting stays cheap)
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
            s = s[len(prefix) :]
    return ACTION_WORDS.get(s)


def parse_confidence(value) -> float | None:
    """Confidence as a number (or numeric string) in [0, 1], else None; never rescaled."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if 0.0 <= v <= 1.0 else None  # NaN fails both comparisons


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


def _brace_pairs(text: str) -> list[tuple[int, int]]:
    """(start, end) of every matched '{' ... '}' (strings inside braces respected), by start.

    A '{' that is never closed does not hide the pairs after it."""
    pairs, stack, quote, escape = [], [], False, False
    for i, ch in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                quote = False
            continue
        if ch == '"' and stack:
            quote = True
        elif ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs.append((stack.pop(), i))
    return sorted(pairs)


def _objects(text: str) -> list[dict]:
    """Decoded objects, outermost first; a span that does not decode is searched inside."""
    pairs = _brace_pairs(text)
    out, budget = [], [MAX_DECODES]

    def visit(lo: int, hi: int) -> None:  # the pairs strictly inside (lo, hi), top level first
        k = next((n for n, (a, _) in enumerate(pairs) if a > lo), len(pairs))
        while k < len(pairs) and pairs[k][0] < hi:
            a, b = pairs[k]
            obj = _decode(text[a : b + 1]) if budget[0] > 0 else None
            budget[0] -= 1
            if obj is not None:
                out.append(obj)
            elif budget[0] > 0:
                visit(a, b)
            k = next((n for n in range(k + 1, len(pairs)) if pairs[n][0] > b), len(pairs))

    visit(-1, len(text))
    return out


def strip_reasoning(text: str) -> tuple[str, bool]:
    """(the text outside reasoning blocks, whether it ends inside an unclosed block)."""
    text = _THINK.sub(" ", text)
    close = list(_CLOSE.finditer(text))
    if close:  # a lone closing tag: everything before it was reasoning
        text = text[close[-1].end() :]
    m = _OPEN.search(text)
    if m:
        return text[: m.start()], True
    return text, False


def _normalise_keys(obj: dict) -> dict:
    out = {}
    for k, v in obj.items():
        key = _ALIASES.get(" ".join(str(k).strip().lower().replace("-", " ").split()).replace(" ", "_"))
        if key is not None and key not in out:
            out[key] = v
    return out


def find_objects(text) -> list[dict]:
    """Every JSON (or Python-literal) object in `text` outside reasoning blocks, in order."""
    if not isinstance(text, str) or not text.strip():
        return []
    # code fences are just text around the object
    return _objects(strip_reasoning(text)[0])


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
    except Exception as e:
        return ParsedReply(error=f"parser failure: {type(e).__name__}: {e}")


def _parse(text, stage: str) -> ParsedReply:
    if not isinstance(text, str) or not text.strip():
        return ParsedReply(error="empty reply")
    if strip_reasoning(text)[1]:
        return ParsedReply(error="the reply ends inside an unclosed <think> block: no answer after the reasoning")
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
        if obj.get("confidence") is None:
            out.warnings.append("missing confidence")
        else:
            out.confidence = parse_confidence(obj["confidence"])
            if out.confidence is None and out.error is None:
                out.action = None
                out.error = f"confidence {str(obj['confidence'])[:40]!r} is not a number in [0, 1]"
    return out


__all__ = [
    "ACTION_WORDS",
    "ParsedReply",
    "extract_object",
    "find_objects",
    "parse_action",
    "parse_confidence",
    "parse_reply",
    "strip_reasoning",
]
