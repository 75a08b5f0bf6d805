"""Belief accuracy with an LLM judge (paper §5 "Behaviors and Belief Change
during Learning", Figure 4b, and appendix "LLM Judge and Human Agreement").

The paper's judge receives, for every interaction step, the agent's current
belief and the ground-truth norm's description, and returns an integer score
from 1 to 7 (`RUBRIC`).  This module does not call a judge itself:

* `export_judge_prompts(out)` reads a run's interaction transcripts and writes
  ``OUT/judge_prompts.jsonl``: one line per distinct belief of a norm, with an
  ``id``, the norm, the belief, the interaction steps at which the newcomer
  held it, and ready-to-send chat ``messages`` (the judge answers with
  ``{"score": <1-7>, "rationale": "..."}``).  Identical beliefs of one norm are
  judged once; their score applies to every step that held them.
* `import_judge_scores(out, scores)` reads a JSONL file of ``{"id": ...,
  "score": 1-7}`` lines (or ``{"id": ..., "reply": "<the judge's raw text>"}``,
  parsed for a JSON ``score`` or the first integer 1-7), and returns the
  per-step curve that `normjax.llm.runner` stores under ``belief_accuracy``
  in ``results.json``.

The curve, per interaction step t (0 .. steps-1): ``mean_score`` is the mean
over the run's norms of the score of the belief held after step t, and
``correct_share`` the share of norms whose score is 6 or 7 (the same rule,
or the correct rule with a minor error).  A norm before its first belief, or
whose belief has no imported score, counts as score 1 (no knowledge of the
norm); ``missing`` lists the ids without a usable score.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from normjax.llm.parse import find_objects
from normjax.llm.transcripts import TranscriptStore
from normjax.norms import NORMS, get_norm

RUBRIC = """Score how accurately the belief captures the ground-truth norm, as one integer from 1 to 7:
7 = the same rule, expressed in different words;
6 = the correct rule with a minor error, omission, or additional incorrect constraint;
5 = the correct behavior and relevant feature, but an incorrect specific rule;
4 = the correct behavior with the wrong feature, or approximately half of the rule;
3 = a small correct fragment;
2 = a vague relation to the relevant behavior;
1 = an unrelated rule.
Judge the rule content, not the phrasing or any stated confidence."""

FAMILY_GLOSS = {
    "access": "which cells, doors or seats agents may use",
    "procedure": "how or when agents may move",
    "coordination": "how agents queue at the counter",
    "allocation": "how shared places are allocated among agents and social groups",
}
CORRECT_SCORE = 6
JUDGE_FILE = "judge_prompts.jsonl"


def judge_messages(norm_id: int, belief: str) -> list[dict]:
    """The chat messages asking a judge to score one belief against norm `norm_id`."""
    n = NORMS[norm_id]
    system = ("You evaluate agents in NormGym, a grid world in which a newcomer must infer a hidden social norm "
              "of a community from the other agents' behaviour and public sanctions. You compare the agent's "
              "stated belief about the norm with the ground-truth norm.")
    user = (f"Ground-truth norm ({n.family} norm: {FAMILY_GLOSS[n.family]}): {n.description}\n\n"
            f"The agent's belief: {belief}\n\n{RUBRIC}\n\n"
            'Return exactly one JSON object and no other text: {"score": <integer 1-7>, "rationale": "<one or two sentences>"}')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def belief_steps(store: TranscriptStore, norm: str) -> list[tuple[int, str | None]]:
    """(t, belief held after step t) over a norm's finished interaction episode."""
    records = store.read(f"{norm}/interaction")
    out, held = [], None
    for rec in records[1:]:
        llm = rec.get("llm") or {}
        held = llm.get("belief", held) if llm else held
        out.append((rec["t"], held))
    return out


def export_judge_prompts(out_dir) -> Path:
    """Write ``OUT/judge_prompts.jsonl`` from the run's interaction transcripts; returns its path."""
    store = TranscriptStore(out_dir)
    lines = []
    for name in store.episodes():
        norm, episode = name.split("/")
        if episode != "interaction" or store.load(name) is None:  # incomplete episodes are no beliefs
            continue
        nid = get_norm(norm).id
        by_belief: dict[str, list[int]] = {}
        for t, belief in belief_steps(store, norm):
            if belief:
                by_belief.setdefault(belief, []).append(t)
        for j, (belief, steps) in enumerate(by_belief.items()):
            lines.append(dict(id=f"{norm}#{j}", norm=norm, norm_id=nid, description=NORMS[nid].description,
                              belief=belief, steps=steps, messages=judge_messages(nid, belief)))
    path = Path(out_dir) / JUDGE_FILE
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return path


def _score(rec: dict) -> int | None:
    """The integer score 1..7 of one imported line, or None."""
    value = rec.get("score")
    reply = rec.get("reply")
    if value is None and isinstance(reply, str):
        for obj in reversed(find_objects(reply)):
            value = next((v for k, v in obj.items() if str(k).lower() == "score"), None)
            if value is not None:
                break
        if value is None:
            m = re.search(r"(?<![\d.])([1-7])(?![\d.])", reply)
            value = m.group(1) if m else None
    if isinstance(value, bool):
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return int(score) if score.is_integer() and 1 <= score <= 7 else None


def import_judge_scores(out_dir, scores_path) -> dict:
    """The belief-accuracy curve of a run from judge scores (see the module docstring)."""
    prompts = [json.loads(x) for x in (Path(out_dir) / JUDGE_FILE).read_text().splitlines() if x.strip()]
    scores, invalid = {}, 0
    for line in Path(scores_path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            invalid += 1
            continue
        s = _score(rec) if isinstance(rec, dict) else None
        if s is None:
            invalid += 1
        else:
            scores[str(rec.get("id"))] = s
    store = TranscriptStore(out_dir)
    by_norm: dict[str, dict[str, int]] = {}
    for p in prompts:
        if p["id"] in scores:
            by_norm.setdefault(p["norm"], {})[p["belief"]] = scores[p["id"]]
    norms = sorted({n.split("/")[0] for n in store.episodes() if n.endswith("/interaction")})
    per_norm = {}
    for norm in norms:
        known = by_norm.get(norm, {})
        per_norm[norm] = [known.get(b, 1) if b else 1 for _, b in belief_steps(store, norm)]
    steps = max((len(v) for v in per_norm.values()), default=0)
    curve_mean, curve_correct = [], []
    for t in range(steps):
        col = [v[t] for v in per_norm.values() if t < len(v)]
        curve_mean.append(round(sum(col) / len(col), 4))
        curve_correct.append(round(sum(s >= CORRECT_SCORE for s in col) / len(col), 4))
    return dict(
        judged=sum(p["id"] in scores for p in prompts), prompts=len(prompts), invalid_lines=invalid,
        missing=[p["id"] for p in prompts if p["id"] not in scores],
        curve=dict(t=list(range(steps)), mean_score=curve_mean, correct_share=curve_correct),
        final_score={n: v[-1] for n, v in per_norm.items() if v},
    )


__all__ = ["CORRECT_SCORE", "RUBRIC", "belief_steps", "export_judge_prompts", "import_judge_scores",
           "judge_messages"]
