"""The paper's human-study design in `normjax play`, without a world (default tier).

* `--pool N`: the families in the paper's proportions (25 -> 6 access, 5 procedure,
  8 coordination, 6 allocation), seeded, validated;
* 50 simulated participants consenting through the app (`--pool 25 --assign 2`): every
  pool norm played exactly 4 times, never two norms of one family, balanced (+-1) after
  every participant; a freed slot's norms go to the next participant;
* play-export: the best-per-norm row and the mean with a 95% interval over hand-built
  participants, checked against hand-computed values; ids, questionnaire answers,
  timing and the protocol settings in export.json; an excluded participant not counted.
"""

from __future__ import annotations

import collections
import json
import math

import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")

from normjax.cli import build_parser
from normjax.norms import FAMILIES, FAMILY_OF, N_NORMS, NORMS
from normjax.play import guard
from normjax.play.app import create_app
from normjax.play.design import draw_pool, next_norms, pool_quota, schedule
from normjax.play.export import export_study
from normjax.play.study import Study

ALL = list(range(N_NORMS))


def _families(ids):
    return collections.Counter(FAMILIES[int(FAMILY_OF[n])] for n in ids)


def test_pool_has_the_papers_proportions():
    for seed in range(5):
        pool = draw_pool(ALL, 25, seed)
        assert len(set(pool)) == 25 and _families(pool) == {
            "access": 6,
            "procedure": 5,
            "coordination": 8,
            "allocation": 6,
        }
        assert pool == draw_pool(ALL, 25, seed)
    assert draw_pool(ALL, 25, 0) != draw_pool(ALL, 25, 1)
    assert sorted(pool_quota(ALL, 4).values()) == [1, 1, 1, 1]  # every family spanned
    assert pool_quota(ALL, 50) == {0: 12, 1: 11, 2: 16, 3: 11}  # all of them
    few = [0, 1, 12, 23, 24, 25, 26, 27, 39]  # 2 access, 1 procedure, 5 coordination, 1 allocation
    assert _families(draw_pool(few, 8, 0)) == {"access": 2, "procedure": 1, "coordination": 4, "allocation": 1}
    for bad in (0, 51, "25", True):
        with pytest.raises(ValueError, match=r"--pool must be an integer in 1\.\.50"):
            pool_quota(ALL, bad)


def test_fifty_participants_play_every_pool_norm_four_times(tmp_path):
    out = tmp_path / "study"
    pool = draw_pool(ALL, 25, 3)
    study = Study(out, pool, 2, study_seed=3, seed=0, interaction_steps=3)
    app = create_app(out, [], interaction_steps=3, study=study, new_per_minute=1000)
    counts: collections.Counter = collections.Counter()
    for k in range(50):
        c = app.test_client()  # each participant their own browser
        assert c.post(f"/api/p{k:02d}/consent", json={"agree": True}).status_code == 200
        norms = json.loads((out / f"p{k:02d}" / "assignment.json").read_text())["norm_ids"]
        assert len({int(FAMILY_OF[n]) for n in norms}) == 2 and set(norms) <= set(pool)
        counts.update(norms)
        assert max(counts[n] for n in pool) - min(counts[n] for n in pool) <= 1, k  # balanced after everyone
    assert sorted(counts.values()) == [4] * 25
    assert [json.loads((out / f"p{k:02d}" / "assignment.json").read_text())["norm_ids"] for k in range(50)] == schedule(
        50, pool, 2, 3
    )

    freed = study.norms("p07")  # the admin frees p07's slot: the next participant plays those norms
    study.set_status("p07", excluded=True, freed=True)
    assert study.status("p07") == dict(excluded=True, freed=True)
    assert app.test_client().post("/api/late/consent", json={"agree": True}).status_code == 200
    assert sorted(study.norms("late")) == sorted(freed)


def test_assign_with_as_many_norms_as_families_balances_within_families():
    pool = draw_pool(ALL, 25, 0)
    got = schedule(40, pool, 4, 0)
    for norms in got:
        assert len({int(FAMILY_OF[n]) for n in norms}) == 4
    counts = collections.Counter(n for norms in got for n in norms)
    for f in range(4):
        fam = [counts[n] for n in pool if FAMILY_OF[n] == f]
        assert max(fam) - min(fam) <= 1, (f, fam)
    with pytest.raises(ValueError, match=r"--assign must be an integer in 1\.\.4"):
        next_norms({}, pool, 5, 0)


def test_play_command_pool_options(tmp_path):
    ap = build_parser()
    for argv, words in [
        (["--pool", "25"], "--pool needs --assign"),
        (["--assign", "2", "--pool", "60"], r"--pool must be an integer in 1\.\.50"),
        (["--assign", "2", "--base-path", "study"], "--base-path must look like"),
        (["--assign", "2", "--completion-url", "javascript:alert(1)"], "--completion-url must start"),
        (["--assign", "2", "--id-params", "a b"], "is not a parameter name"),
    ]:
        args = ap.parse_args(["play", "--out", str(tmp_path / "s")] + argv)
        with pytest.raises(ValueError, match=words):
            args.fn(args)


# --- the export's human rows over hand-built participants ------------------------------------------------------


def _rows(norm: int, seen_joint: list, unseen_joint: list, task: float = 1.0) -> list[dict]:
    base = dict(norm_id=norm, norm=NORMS[norm].name, family=NORMS[norm].family, task=task, path_length=10)
    base.update(collision=False, community_path_length=None, community_welfare=None)
    return [dict(base, condition="seen", episode=e, joint=j) for e, j in enumerate(seen_joint)] + [
        dict(base, condition="unseen", episode=e, joint=j) for e, j in enumerate(unseen_joint)
    ]


def _participant(out, pid, norms, rows, excluded=False):
    d = out / pid
    guard.issue(d, {"PROLIFIC_PID": f"prolific-{pid}"})
    (d / "run.json").write_text(json.dumps(dict(policy="human", participant=pid)))
    (d / "assignment.json").write_text(json.dumps(dict(norms=[NORMS[n].name for n in norms])))
    (d / "actions.jsonl").write_text(json.dumps(dict(turn=0, episode="x/interaction", t=0, action=4)) + "\n")
    (d / "timing.jsonl").write_text(json.dumps(dict(turn=0, t=0, think_s=1.5, wall="w", mono=2.0)) + "\n")
    (d / "questionnaire.json").write_text(json.dumps(dict(answers={"evidence_source": "Both about equally"})))
    for n in norms:
        for t in ("seen_0", "seen_1", "seen_2", "unseen_0", "unseen_1", "unseen_2"):
            p = d / "transcripts" / NORMS[n].name / f"{t}.jsonl"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(dict(transcript="x", result={})) + "\n")
    (d / "results.json").write_text(json.dumps(dict(episodes=rows, seen={}, unseen={})))
    if excluded:
        (d / "status.json").write_text(json.dumps(dict(excluded=True, freed=False)))


def test_export_reports_best_per_norm_means_and_settings(tmp_path):
    out = tmp_path / "study"
    out.mkdir()
    (out / "play.json").write_text(json.dumps(dict(norms=["x"], seed=0, interaction_steps=50)))
    # norm 0 (access): ann seen 1/3, unseen 0/3; bob seen 3/3, unseen 1/3 -> best seen 100, unseen 33.3.
    # norm 12 (procedure): ann seen 2/3, unseen 3/3 (task 0.5) -> best = ann's.
    _participant(out, "ann", [0, 12], _rows(0, [1, 0, 0], [0, 0, 0]) + _rows(12, [1, 1, 0], [1, 1, 1], 0.5))
    _participant(out, "bob", [0], _rows(0, [1, 1, 1], [1, 0, 0]))
    _participant(out, "cat", [0], _rows(0, [0, 0, 0], [1, 1, 1]), excluded=True)  # would raise unseen best to 100
    summary = export_study(out)
    ex = json.loads((out / "export.json").read_text())
    assert ex["complete"] == ["ann", "bob"] and ex["excluded"] == ["cat"]
    best = ex["human"]["best_per_norm"]
    assert best["norms"][NORMS[0].name] == dict(
        seen_joint=100.0, seen_task=100.0, unseen_joint=pytest.approx(100 / 3), unseen_task=100.0
    )
    assert best["families"]["overall"]["seen_joint"] == pytest.approx((100 + 200 / 3) / 2)
    assert best["families"]["overall"]["unseen_joint"] == pytest.approx((100 / 3 + 100) / 2)
    assert best["families"]["procedure"]["unseen_task"] == 50.0 and best["families"]["overall"]["norms"] == 2
    ci = ex["human"]["mean_ci"]["access"]["seen_joint"]  # units: ann 33.3, bob 100
    mean, sd = (100 / 3 + 100) / 2, math.sqrt(2 * ((100 - 100 / 3) / 2) ** 2)
    assert ci == pytest.approx([mean, mean - 1.96 * sd / math.sqrt(2), 100.0])  # clipped to [0, 100]
    assert ex["human"]["mean_ci"]["procedure"]["seen_joint"][1] is None  # one unit: no interval
    ann = ex["participants"]["ann"]
    assert ann["ids"] == {"PROLIFIC_PID": "prolific-ann"} and ann["questionnaire"] == {
        "evidence_source": "Both about equally"
    }
    assert ann["timing"][0]["think_s"] == 1.5 and "token_sha256" not in json.dumps(ex)
    assert ex["protocol"]["recorded"]["play.json"]["interaction_steps"] == 50
    md = summary["markdown"]
    assert "| overall | 2 | 83.3 | 75.0 | 66.7 | 75.0 |" in md  # the best-per-norm row: means of the norms' best
    assert "1 excluded by the researcher" in md and "interaction phase of 50 steps, not the protocol's 200" in md
