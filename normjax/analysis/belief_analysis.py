"""The paper's belief analysis (§5, Figure 4b and 4c) from a run's transcripts and judge scores.

    result = analyse_beliefs("runs/llm/qwen", scores=None, out_dir="runs/llm/qwen/beliefs")

**Correctness over the interaction (Figure 4b).**  Per interaction step t,
over the run's norms (overall and per norm family): ``mean_score`` (with its
standard error across norms) and ``correct_share`` (score >= 6) of the belief
held after step t, exactly as `normjax.analysis.judge.import_judge_scores` counts
them (a step before the first belief scores 1), and ``violations``, the mean
number of the newcomer's own sanctions up to and including step t.

**Belief change after events (Figure 4c).**  An interaction step t is
classified by what the newcomer could perceive of its outcome
(`step_evidence`; slot 0 is the newcomer's), one class per step, the first
that applies:

* ``own_violation``: the newcomer was sanctioned in step t (the next prompt
  says so, and its memory keeps the sanctioned step);
* ``others_violation``: another agent was sanctioned in step t and is still on
  the grid at step t+1 (same slot and uid), while the newcomer is too: exactly
  the agents the step-t+1 prompt marks with a red cross (an agent that left
  the room with its sanction is never shown one);
* ``compliant_move``: another agent moved in step t by its own action (its
  cell changed or it left through a door; not a displacement) without a
  sanction, with the newcomer on the grid at steps t and t+1.

The belief *before* is the one held after step t (stated in the reply of step
t, before the newcomer could see the outcome); the belief *after* is the one
held after the `replies_after`-th later step at which the model was asked
(``llm.queried``).  Per class: the number of events, the mean change in judge
score and in stated confidence (None -> 0, the prompt's "none yet" with
confidence 0) with standard errors, how many scores went up or down, and the
share of events after which the stated belief text changed.  Events with no
such reply before the episode ends are counted as ``unanswered``, events
whose before or after belief has no usable score as ``unscored``; neither
enters the means.  Every event is listed under ``events``.

The analysis refuses (ValueError) when some belief has no usable score,
unless `allow_missing`: then those beliefs score 1 in the curves (as in the
import) and their events are ``unscored``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from normjax.analysis.judge import (
    CORRECT_SCORE,
    SCORES_FILE,
    check_run_dir,
    complete_norms,
    curve,
    export_judge_prompts,
    read_scores,
    scored_beliefs,
    step_scores,
)
from normjax.norms import FAMILIES, get_norm
from normjax.runtime.transcripts import TranscriptStore

EVENT_TYPES = ("own_violation", "others_violation", "compliant_move")


def _moved(agent: dict) -> bool:
    """The agent changed cell (or left the room) by its own action in this step."""
    if agent["displaced"]:
        return False
    return bool(agent["exited"]) or (agent["next"] is not None and agent["next"] != agent["pos"])


def step_evidence(records: list[dict]) -> list[dict]:
    """Per step of an interaction transcript: the newcomer's own sanction and the others' sanctions and
    compliant moves it could see (see the module docstring), and its event class (or None)."""
    steps = records[1:]
    out = []
    for i, rec in enumerate(steps):
        me, nxt = rec["agents"][0], steps[i + 1] if i + 1 < len(steps) else None
        sees_next = nxt is not None and nxt["agents"][0]["active"]
        own = bool(me["active"] and me["sanctioned"])
        seen_sanctions = unseen_sanctions = compliant = 0
        for a in rec["agents"][1:]:
            if not a["active"]:
                continue
            if a["sanctioned"]:
                after = nxt["agents"][a["slot"]] if nxt is not None else None
                shown = sees_next and after["active"] and after["uid"] == a["uid"]
                seen_sanctions += shown
                unseen_sanctions += not shown
            elif me["active"] and sees_next and _moved(a):
                compliant += 1
        kind = (
            "own_violation"
            if own
            else "others_violation"
            if seen_sanctions
            else "compliant_move"
            if compliant
            else None
        )
        out.append(
            dict(
                t=rec["t"],
                own=own,
                others_sanctioned=seen_sanctions,
                others_sanctioned_unseen=unseen_sanctions,
                compliant_moves=compliant,
                event=kind,
            )
        )
    return out


def held_states(records: list[dict]) -> list[dict]:
    """Per step: whether the model was asked, and the belief and confidence held after the step."""
    out, belief, confidence = [], None, None
    for rec in records[1:]:
        llm = rec.get("llm") or {}
        if llm:
            belief, confidence = llm.get("belief", belief), llm.get("confidence", confidence)
        out.append(dict(queried=bool(llm.get("queried")), belief=belief, confidence=confidence))
    return out


def mean_se(values: list[float]) -> tuple[float | None, float | None]:
    """(mean, standard error of the mean), rounded to 4 places; None where undefined."""
    n = len(values)
    if n == 0:
        return None, None
    mean = sum(values) / n
    if n < 2:
        return round(mean, 4), None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return round(mean, 4), round(math.sqrt(var / n), 4)


def norm_events(records: list[dict], known: dict[str, int], replies_after: int = 1) -> list[dict]:
    """The events of one interaction transcript with the score and confidence before and after."""
    evidence, held = step_evidence(records), held_states(records)
    asked = [i for i, h in enumerate(held) if h["queried"]]

    def score(belief):
        return known.get(belief) if belief else 1  # no belief yet: 1, as the import counts it

    events = []
    for i, ev in enumerate(evidence):
        if ev["event"] is None:
            continue
        later = [j for j in asked if j > i]
        row = dict(
            ev,
            reply_t=None,
            score_before=score(held[i]["belief"]),
            score_after=None,
            confidence_before=held[i]["confidence"] or 0.0,
            confidence_after=None,
            belief_changed=None,
        )
        if len(later) >= replies_after:
            j = later[replies_after - 1]
            row.update(
                reply_t=evidence[j]["t"],
                score_after=score(held[j]["belief"]),
                confidence_after=held[j]["confidence"] or 0.0,
                belief_changed=held[j]["belief"] != held[i]["belief"],
            )
        events.append(row)
    return events


def change_stats(events: list[dict]) -> dict:
    """Per event class: counts, mean changes in score and confidence (with standard errors)."""
    out = {}
    for kind in EVENT_TYPES:
        rows = [e for e in events if e["event"] == kind]
        answered = [e for e in rows if e["reply_t"] is not None]
        used = [e for e in answered if e["score_before"] is not None and e["score_after"] is not None]
        ds = [e["score_after"] - e["score_before"] for e in used]
        dc = [e["confidence_after"] - e["confidence_before"] for e in used]
        (ms, ses), (mc, sec) = mean_se(ds), mean_se(dc)
        out[kind] = dict(
            n=len(used),
            events=len(rows),
            unanswered=len(rows) - len(answered),
            unscored=len(answered) - len(used),
            mean_score_change=ms,
            se_score_change=ses,
            mean_confidence_change=mc,
            se_confidence_change=sec,
            score_up=sum(d > 0 for d in ds),
            score_down=sum(d < 0 for d in ds),
            belief_changed_share=round(sum(e["belief_changed"] for e in used) / len(used), 4) if used else None,
        )
    return out


def correctness(per_norm: dict[str, list[int]], violations: dict[str, list[int]]) -> dict:
    """The Figure 4b curves over a set of norms (per step: mean score, SE, correct share, violations)."""
    c = curve(per_norm)
    se, cum = [], []
    for t in c["t"]:
        se.append(mean_se([v[t] for v in per_norm.values() if t < len(v)])[1])
        col = [sum(v[: t + 1]) for v in violations.values() if t < len(v)]
        cum.append(round(sum(col) / len(col), 4))
    finals = [v[-1] for v in per_norm.values() if v]
    return dict(
        norms=len(per_norm),
        **c,
        se_score=se,
        violations=cum,
        final_mean_score=mean_se(finals)[0],
        final_correct_share=round(sum(s >= CORRECT_SCORE for s in finals) / len(finals), 4) if finals else None,
    )


def _stale_lines(path: Path, prompts: list[dict]) -> None:
    """Refuse a scores file whose lines name beliefs the prompts no longer hold (an interaction rerun)."""
    by_id = {p["id"]: p["belief"] for p in prompts}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # read_scores lists it
        if isinstance(rec, dict) and "belief" in rec and rec.get("id") in by_id and rec["belief"] != by_id[rec["id"]]:
            raise ValueError(
                f"{path} line {n} scores another belief than the run's {rec['id']!r} (the interaction "
                "was rerun since); judge the run again into a new file"
            )


def load_scored_run(run_dir, scores=None, allow_missing: bool = False) -> dict:
    """A run's norms and judge scores, checked: ``run``, ``scores`` (the file), ``norms`` (those of
    its table with a finished interaction), ``known`` ({norm: {belief: score}}), ``missing`` (ids
    without a usable score; refused unless `allow_missing`), ``invalid_lines``, ``store``."""
    run = check_run_dir(run_dir)
    path = Path(scores) if scores is not None else run / SCORES_FILE
    if not path.is_file():
        raise ValueError(
            f"scores file not found: {path}; run normjax llm-judge --run {run} ... first, or pass --scores FILE"
        )
    prompts = [json.loads(x) for x in export_judge_prompts(run).read_text().splitlines() if x.strip()]
    _stale_lines(path, prompts)
    scores_by_id, errors = read_scores(path, {p["id"] for p in prompts})
    missing = [p["id"] for p in prompts if p["id"] not in scores_by_id]
    if missing and not allow_missing:
        raise ValueError(
            f"{len(missing)} of {len(prompts)} belief(s) have no usable score in {path} (e.g. "
            f"{', '.join(missing[:3])}); rerun normjax llm-judge (it resumes), or pass --allow-missing"
        )
    store = TranscriptStore(run)
    norms = complete_norms(store)
    results = run / "results.json"
    if results.exists():  # the norms the run's table covers
        wanted = json.loads(results.read_text())["meta"]["norms"]
        norms = [n for n in wanted if n in norms]
    return dict(
        run=run,
        scores=path,
        norms=norms,
        known=scored_beliefs(prompts, scores_by_id),
        missing=missing,
        invalid_lines=len(errors),
        store=store,
    )


def analyse_beliefs(
    run_dir, scores=None, out_dir=None, replies_after: int = 1, allow_missing: bool = False, figures: bool = True
) -> dict:
    """Figure 4b / 4c numbers of a run (see the module docstring); writes ``beliefs.json`` and figures."""
    if replies_after < 1:
        raise ValueError(f"replies_after={replies_after} is invalid; allowed: a positive integer")
    loaded = load_scored_run(run_dir, scores, allow_missing)
    run, path, norms, known, missing = (loaded[k] for k in ("run", "scores", "norms", "known", "missing"))
    store = loaded["store"]
    family = {n: get_norm(n).family for n in norms}
    per_norm, violations, events = {}, {}, []
    for norm in norms:
        records = store.read(f"{norm}/interaction")
        per_norm[norm] = step_scores(store, norm, known.get(norm, {}))
        violations[norm] = [int(e["own"]) for e in step_evidence(records)]
        events += [
            dict(norm=norm, family=family[norm], **e) for e in norm_events(records, known.get(norm, {}), replies_after)
        ]
    fams = [f for f in FAMILIES if f in family.values()]

    def subset(d, f):
        return {n: v for n, v in d.items() if family[n] == f}

    result = dict(
        run=str(run),
        scores=str(path),
        replies_after=replies_after,
        norms=norms,
        missing=missing,
        invalid_lines=loaded["invalid_lines"],
        correctness=dict(
            overall=correctness(per_norm, violations),
            by_family={f: correctness(subset(per_norm, f), subset(violations, f)) for f in fams},
        ),
        change=dict(
            overall=change_stats(events),
            by_family={f: change_stats([e for e in events if e["family"] == f]) for f in fams},
        ),
        events=events,
        figures=[],
    )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if figures:
            from normjax.analysis.belief_figures import change_figure, correctness_figure

            result["figures"] = [
                str(correctness_figure(result, out / "belief_correctness.png")),
                str(change_figure(result, out / "belief_change.png")),
            ]
        (out / "beliefs.json").write_text(json.dumps(result, indent=1))
    return result


def format_summary(result: dict) -> str:
    """Plain-text lines: final correctness, and the belief change per event class."""
    c = result["correctness"]["overall"]
    lines = [
        f"{c['norms']} norm(s); final mean score {c['final_mean_score']}, final correct share "
        f"{c['final_correct_share']} (score >= {CORRECT_SCORE})",
        f"{'event':<18}{'n':>6}{'d.score':>9}{'se':>8}{'d.conf':>9}{'up':>5}{'down':>6}{'unans.':>8}",
    ]

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    for kind, s in result["change"]["overall"].items():
        lines.append(
            f"{kind:<18}{s['n']:>6}{fmt(s['mean_score_change']):>9}{fmt(s['se_score_change']):>8}"
            f"{fmt(s['mean_confidence_change']):>9}{s['score_up']:>5}{s['score_down']:>6}{s['unanswered']:>8}"
        )
    return "\n".join(lines)


__all__ = [
    "EVENT_TYPES",
    "analyse_beliefs",
    "change_stats",
    "correctness",
    "format_summary",
    "held_states",
    "load_scored_run",
    "mean_se",
    "norm_events",
    "step_evidence",
]
