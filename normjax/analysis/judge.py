"""Belief accuracy with an LLM judge (paper §5 "Behaviors and Belief Change
during Learning", Figure 4b, and appendix "LLM Judge and Human Agreement").

The paper's judge receives, for every interaction step, the agent's current
belief and the ground-truth norm's description, and returns an integer score
from 1 to 7 (`RUBRIC`).  This module does not call a judge itself
(``normjax llm-judge``, `normjax.analysis.judge_run`, does):

* `export_judge_prompts(out)` reads a run's interaction transcripts and writes
  ``OUT/judge_prompts.jsonl``: one line per distinct belief of a norm, with an
  ``id``, the norm, the belief, the interaction steps at which the newcomer
  held it, and ready-to-send chat ``messages`` (the judge answers with
  ``{"score": <1-7>, "rationale": "..."}``).  Identical beliefs of one norm are
  judged once; their score applies to every step that held them.
* `import_judge_scores(out, scores, norms)` reads a JSONL file of ``{"id":
  ..., "score": 1-7}`` lines (or ``{"id": ..., "reply": "<the judge's raw
  text>"}``), and returns the per-step curve over the requested `norms` that
  `normjax.llm.evaluate` stores under ``belief_accuracy`` in
  ``results.json``.  The import is strict: a score is the rubric's integer
  1-7, given as ``score`` or as the ``score`` of a JSON object in the reply
  (the documented reply format, outside any ``<think>`` block); a reply
  without one ("this belief deserves a 5"), a score off the rubric, a line
  that is not a JSON object, an unknown id, or a second, different score for
  an id is an error, listed with its line number under ``errors``, never a
  guess.

The curve, per interaction step t (0 .. steps-1): ``mean_score`` is the mean
over the run's norms of the score of the belief held after step t, and
``correct_share`` the share of norms whose score is 6 or 7 (the same rule,
or the correct rule with a minor error).  A norm before its first belief, or
whose belief has no imported score, counts as score 1 (no knowledge of the
norm); ``missing`` lists the requested norms' ids without a usable score,
and ``missing_norms`` the requested norms without a complete interaction
episode (not in the curve).
"""

from __future__ import annotations

import json
from pathlib import Path

from normjax.llm.parse import find_objects
from normjax.norms import NORMS, get_norm
from normjax.runtime.transcripts import TranscriptStore

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
SCORES_FILE = "judge_scores.jsonl"  # what normjax llm-judge writes (normjax.analysis.judge_run)


def judge_messages(norm_id: int, belief: str) -> list[dict]:
    """The chat messages asking a judge to score one belief against norm `norm_id`."""
    n = NORMS[norm_id]
    system = (
        "You evaluate agents in NormGym, a grid world in which a newcomer must infer a hidden social norm "
        "of a community from the other agents' behaviour and public sanctions. You compare the agent's "
        "stated belief about the norm with the ground-truth norm."
    )
    user = (
        f"Ground-truth norm ({n.family} norm: {FAMILY_GLOSS[n.family]}): {n.description}\n\n"
        f"The agent's belief: {belief}\n\n{RUBRIC}\n\n"
        'Return exactly one JSON object and no other text: {"score": <integer 1-7>, "rationale": "<one or two sentences>"}'
    )
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
            lines.append(
                dict(
                    id=f"{norm}#{j}",
                    norm=norm,
                    norm_id=nid,
                    description=NORMS[nid].description,
                    belief=belief,
                    steps=steps,
                    messages=judge_messages(nid, belief),
                )
            )
    path = Path(out_dir) / JUDGE_FILE
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return path


def _score(rec: dict) -> tuple[int | None, str | None]:
    """(score 1..7, None) of one imported line, or (None, why not)."""

    def check(value, where):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 7:
            return None, f"{where} {value!r} is not an integer from 1 to 7"
        return value, None

    if rec.get("score") is not None:
        return check(rec["score"], "score")
    reply = rec.get("reply")
    if not isinstance(reply, str):
        return None, "the line has neither a score nor a reply text"
    for obj in reversed(find_objects(reply)):
        for k, v in obj.items():
            if str(k).strip().lower() == "score":
                return check(v, "the reply's score")
    return None, 'the reply has no JSON object with a score (the judge must answer {"score": <1-7>, ...})'


def jsonl_records(path):
    """(line number, the line's JSON value or None if it does not parse) for each non-blank line."""
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError:
            yield n, None


def read_scores(scores_path, known_ids) -> tuple[dict[str, int], list[dict]]:
    """({id: score}, errors) of a judge-score file; every unusable line is an error with its line number."""
    scores, errors = {}, []
    for n, rec in jsonl_records(scores_path):
        if not isinstance(rec, dict):
            errors.append(dict(line=n, id=None, error="not a JSON object"))
            continue
        key = rec.get("id")
        if key not in known_ids:
            errors.append(dict(line=n, id=key, error=f"unknown id {key!r}: not in {JUDGE_FILE}"))
            continue
        score, why = _score(rec)
        if why is not None:
            errors.append(dict(line=n, id=key, error=why))
        elif scores.setdefault(key, score) != score:
            errors.append(dict(line=n, id=key, error=f"a second score {score} for this id (first: {scores[key]})"))
    return scores, errors


def check_run_dir(run_dir) -> Path:
    """The run directory, if it holds a finished interaction episode (ValueError otherwise)."""
    run = Path(run_dir)
    store = TranscriptStore(run)
    if not store.root.is_dir():
        raise ValueError(
            f"{run} is not an llm-eval run directory (no transcripts/ in it); allowed: the --out "
            "directory of normjax llm-eval"
        )
    if not any(n.endswith("/interaction") and store.load(n) is not None for n in store.episodes()):
        raise ValueError(
            f"{run} has no finished interaction episode, so no beliefs to judge; run normjax llm-eval "
            "with --interaction-steps > 0 first"
        )
    return run


def read_prompts(out_dir) -> list[dict]:
    """The lines of ``OUT/judge_prompts.jsonl``."""
    return [json.loads(x) for x in (Path(out_dir) / JUDGE_FILE).read_text().splitlines() if x.strip()]


def complete_norms(store: TranscriptStore) -> list[str]:
    """The norms of the run directory with a complete interaction episode."""
    return sorted(
        {n.split("/")[0] for n in store.episodes() if n.endswith("/interaction") and store.load(n) is not None}
    )


def scored_beliefs(prompts: list[dict], scores: dict[str, int]) -> dict[str, dict[str, int]]:
    """{norm: {belief: score}} of the prompts with a usable score."""
    by_norm: dict[str, dict[str, int]] = {}
    for p in prompts:
        if p["id"] in scores:
            by_norm.setdefault(p["norm"], {})[p["belief"]] = scores[p["id"]]
    return by_norm


def step_scores(store: TranscriptStore, norm: str, known: dict[str, int]) -> list[int]:
    """The score of the belief held after each interaction step (no belief, or no score: 1)."""
    return [known.get(b, 1) if b else 1 for _, b in belief_steps(store, norm)]


def curve(per_norm: dict[str, list[int]]) -> dict:
    """Per step: ``mean_score`` and ``correct_share`` (score >= CORRECT_SCORE) over the norms."""
    steps = max((len(v) for v in per_norm.values()), default=0)
    mean, correct = [], []
    for t in range(steps):
        col = [v[t] for v in per_norm.values() if t < len(v)]
        mean.append(round(sum(col) / len(col), 4))
        correct.append(round(sum(s >= CORRECT_SCORE for s in col) / len(col), 4))
    return dict(t=list(range(steps)), mean_score=mean, correct_share=correct)


def import_judge_scores(out_dir, scores_path, norms=None) -> dict:
    """The belief-accuracy curve over `norms` (names; None = every norm in the run directory)."""
    prompts = read_prompts(out_dir)
    scores, errors = read_scores(scores_path, {p["id"] for p in prompts})
    store = TranscriptStore(out_dir)
    complete = complete_norms(store)
    requested = complete if norms is None else [get_norm(n).name for n in norms]
    by_norm = scored_beliefs(prompts, scores)
    per_norm = {norm: step_scores(store, norm, by_norm.get(norm, {})) for norm in requested if norm in complete}
    mine = [p for p in prompts if p["norm"] in per_norm]
    missing = [p["id"] for p in mine if p["id"] not in scores]
    missing_norms = [n for n in requested if n not in per_norm]
    return dict(
        # complete: every requested norm's every belief has a usable score and no line was unusable;
        # otherwise the curve counts the gaps as score 1 and must not be read as a result.
        complete=not (errors or missing or missing_norms),
        norms=list(per_norm),
        judged=sum(p["id"] in scores for p in mine),
        prompts=len(mine),
        invalid_lines=len(errors),
        errors=errors,
        missing=missing,
        missing_norms=missing_norms,
        curve=curve(per_norm),
        final_score={n: v[-1] for n, v in per_norm.items() if v},
    )


__all__ = [
    "CORRECT_SCORE",
    "JUDGE_FILE",
    "RUBRIC",
    "SCORES_FILE",
    "belief_steps",
    "check_run_dir",
    "complete_norms",
    "curve",
    "export_judge_prompts",
    "import_judge_scores",
    "judge_messages",
    "read_prompts",
    "read_scores",
    "scored_beliefs",
    "step_scores",
]
