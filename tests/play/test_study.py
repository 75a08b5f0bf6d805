"""Study mode of `normjax play` and `normjax play-export`, in process and without a world (default tier).

* the assignment: deterministic, every participant's norms from different
  families, families and norms taken in turn, persisted across a restart,
  --assign validated with a clear error;
* the consent page: the researcher's text escaped, every participant request
  refused with 403 before "I agree", the agreement recorded with its time;
* the export: two hand-built participants, one complete and one not: the
  incomplete one is listed and not counted, the pooled numbers and the
  combined table with a model row are checked against hand-computed values.

Playing a study participant's whole protocol (and the export of it) is in
tests/play/test_session.py's slow test; the consent page in a real browser in
tests/play/test_browser.py.
"""

from __future__ import annotations

import collections
import json

import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")

from normjax.cli import build_parser
from normjax.norms import FAMILY_IDS, FAMILY_OF, N_NORMS, NORMS
from normjax.play.app import create_app
from normjax.play.export import export_study
from normjax.play.study import Study, assign_norms, check_assign, max_assign
from normjax.runtime.transcripts import TRANSCRIPT_FORMAT

ALL = list(range(N_NORMS))


def test_assignment_is_deterministic_and_spread_across_families():
    got = [assign_norms(k, 2, ALL, seed=0) for k in range(40)]
    assert got == [assign_norms(k, 2, ALL, seed=0) for k in range(40)]  # deterministic
    assert got != [assign_norms(k, 2, ALL, seed=1) for k in range(40)]  # the seed matters
    for norms in got:  # two norms of two different families, as in the paper's study
        assert len({int(FAMILY_OF[n]) for n in norms}) == 2
    fams = collections.Counter(int(FAMILY_OF[n]) for norms in got for n in norms)
    assert sorted(fams.values()) == [20, 20, 20, 20]  # 80 slots, every family a quarter
    per_norm = collections.Counter(n for norms in got for n in norms)
    for ids in FAMILY_IDS:  # a family's norms in turn: counts differ by at most one
        counts = [per_norm[n] for n in ids]
        assert max(counts) - min(counts) <= 1, counts
    for k in range(12):  # N = 4: all four families; N = 6: no norm twice
        assert len({int(FAMILY_OF[n]) for n in assign_norms(k, 4, ALL, 3)}) == 4
        assert len(set(assign_norms(k, 6, ALL, 3))) == 6
    pool = [0, 1, 12, 23, 24, 39]  # one procedure and one allocation norm
    assert max_assign(pool) == 4
    assert {tuple(sorted(assign_norms(k, 4, pool, 0))) for k in range(6)} <= {
        (0, 12, 23, 39),
        (0, 12, 24, 39),
        (1, 12, 23, 39),
        (1, 12, 24, 39),
    }


@pytest.mark.parametrize("bad", [0, -1, 45, "2", True, 2.0])
def test_assign_is_validated(bad):
    with pytest.raises(ValueError, match=r"--assign must be an integer in 1\.\.44 .*got"):
        check_assign(bad, ALL)


def test_play_command_refuses_bad_study_options(tmp_path):
    ap = build_parser()
    for argv, words in [
        (["--assign", "0"], "1..4"),  # the paper's balance: one norm per family
        (["--assign", "0", "--balance", "families"], "1..44"),
        (["--assign", "3", "--norms", "forbidden_zone_q"], "1..1"),
        (["--consent", str(tmp_path / "c.md")], "--consent needs --assign"),
        (["--assign", "1", "--consent", str(tmp_path / "missing.md")], "not a file"),
    ]:
        args = ap.parse_args(["play", "--out", str(tmp_path / "s")] + argv)
        with pytest.raises(ValueError, match=words):
            args.fn(args)


def test_study_persists_assignments_and_refuses_other_settings(tmp_path):
    out = tmp_path / "study"
    study = Study(out, ALL, 2, study_seed=7, balance="families", seed=0, interaction_steps=200)
    assert (out / "consent.md").read_text().startswith("# Welcome")  # the template, for the researcher to edit
    assert not study.consented("alice")
    a = study.agree("alice")
    assert a["participant"] == "alice" and a["agreed_at"].endswith("+00:00") and len(a["consent_sha256"]) == 64
    assert study.norms("alice") == assign_norms(0, 2, ALL, 7)
    study.agree("bob")
    assert study.agree("alice") == a  # agreeing again changes nothing
    again = Study(out, ALL, 2, study_seed=7, balance="families", seed=0, interaction_steps=200)  # a restart
    assert again.norms("alice") == assign_norms(0, 2, ALL, 7) and again.norms("bob") == assign_norms(1, 2, ALL, 7)
    again.agree("carol")
    rec = json.loads((out / "carol" / "assignment.json").read_text())
    assert rec["index"] == 2 and rec["norms"] == [NORMS[n].name for n in assign_norms(2, 2, ALL, 7)]
    with pytest.raises(ValueError, match=r"assign: 2 -> 3"):
        Study(out, ALL, 3, study_seed=7, balance="families", seed=0, interaction_steps=200)
    with pytest.raises(ValueError, match=r"interaction_steps: 200 -> 50"):
        Study(out, ALL, 2, study_seed=7, balance="families", seed=0, interaction_steps=50)


def test_consent_page_is_escaped_and_gates_every_step(tmp_path):
    out = tmp_path / "study"
    text = tmp_path / "consent.md"
    text.write_text(
        "# Our study\n<script>alert(1)</script> and <img src=x onerror=alert(2)>\n\n"
        "- **bold** item\n- __PID__ stays text\n"
    )
    study = Study(out, ALL, 2, consent_file=text, balance="families", seed=0, interaction_steps=3)
    c = create_app(out, [], interaction_steps=3, study=study).test_client()
    page = c.get("/p/alice").get_data(as_text=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "<img" not in page
    assert "<h3>Our study</h3>" in page and "<li><strong>bold</strong> item</li>" in page
    assert "__PID__ stays text" in page and 'const PID = "alice"' in page and "I agree" in page
    # Before "I agree" (no token) every request gets the answer an unknown id gets (normjax.play.app.DENIED).
    assert not (out / "consent.md").exists()  # --consent given: nothing else is read or copied

    for method, path, body in [
        ("post", "start", None),
        ("get", "view", None),
        ("get", "frame.png", None),
        ("post", "step", {"turn": 0, "action": "up"}),
    ]:
        r = getattr(c, method)(f"/api/alice/{path}", json=body)
        assert r.status_code == 404 and "no session for this id" in r.get_json()["error"], path
    for body in ({"agree": False}, {"agree": "yes"}, [True]):
        assert c.post("/api/alice/consent", json=body).status_code == 400
    assert c.post("/api/..%2Fx/consent", json={"agree": True}).status_code in (400, 404)
    assert sorted(p.name for p in out.iterdir()) == ["play.json", "study.json"]  # nothing recorded yet

    rec = c.post("/api/alice/consent", json={"agree": True}).get_json()
    assert json.loads((out / "alice" / "consent.json").read_text())["agreed_at"] == rec["agreed_at"]
    assert json.loads((out / "alice" / "assignment.json").read_text())["norm_ids"] == assign_norms(0, 2, ALL, 0)
    assert c.get("/api/alice/view").status_code == 404  # past the consent gate: the session is not started yet
    assert 'id="frame"' in c.get("/p/alice").get_data(as_text=True)  # the play page now
    plain = create_app(tmp_path / "plain", [0]).test_client()  # without --assign there is no consent step
    assert plain.post("/api/alice/consent", json={"agree": True}).status_code == 404
    assert 'id="frame"' in plain.get("/p/alice").get_data(as_text=True)


# --- the export over two hand-built participants -------------------------------------------------------------


def _row(norm: int, cond: str, e: int, joint: bool, task: float) -> dict:
    return dict(
        norm_id=norm,
        norm=NORMS[norm].name,
        family=NORMS[norm].family,
        condition=cond,
        episode=e,
        joint=joint,
        task=task,
        path_length=10,
        collision=False,
        community_path_length=None,
        community_welfare=None,
    )


def _transcript(d, name, beliefs=()):
    p = d / "transcripts" / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [dict(transcript=TRANSCRIPT_FORMAT, result={"llm": {}})]
    lines += [dict(t=t, llm=dict(belief=b)) for t, b in enumerate(beliefs)]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _participant(out, pid, norms, rows=None, finished=(), log_lines=0, started=True):
    d = out / pid
    d.mkdir(parents=True)
    if started:
        (d / "run.json").write_text(json.dumps(dict(policy="human", participant=pid)))
    (d / "assignment.json").write_text(json.dumps(dict(norms=[NORMS[n].name for n in norms])))
    (d / "actions.jsonl").write_text("".join(json.dumps(dict(turn=i)) + "\n" for i in range(log_lines)))
    for n in finished:
        _transcript(d, f"{NORMS[n].name}/interaction", ["avoid zone Q", "avoid zone Q", "keep right"])
        for t in ("seen_0", "seen_1", "seen_2", "unseen_0", "unseen_1", "unseen_2"):
            _transcript(d, f"{NORMS[n].name}/{t}")
    if rows is not None:
        (d / "results.json").write_text(json.dumps(dict(episodes=rows, seen={}, unseen={})))


def test_export_lists_the_incomplete_and_pools_the_complete(tmp_path):
    out = tmp_path / "study"
    # alice (complete): access norm 0: seen 3/3 joint, unseen 1/3; procedure norm 12: seen 0/3 (task 0.5), unseen 3/3.
    rows = (
        [_row(0, "seen", e, True, 1.0) for e in range(3)]
        + [_row(0, "unseen", e, e == 0, 1.0) for e in range(3)]
        + [_row(12, "seen", e, False, 0.5) for e in range(3)]
        + [_row(12, "unseen", e, True, 1.0) for e in range(3)]
    )
    _participant(out, "alice", [0, 12], rows, finished=[0, 12], log_lines=9)
    _participant(out, "bob", [23, 39], finished=[23], log_lines=4)  # bob stopped in his second norm
    _participant(out, "carol", [1, 13], started=False)  # agreed, never started
    (out / "notes").mkdir()  # not a participant
    model = tmp_path / "oracle.json"
    model.write_text(
        json.dumps(
            dict(
                meta=dict(policy="oracle"),
                episodes=[_row(n, c, e, True, 1.0) for n in (0, 12, 40) for c in ("seen", "unseen") for e in range(3)],
            )
        )
    )

    summary = export_study(out, [str(model), f"blind={model}"])
    assert summary["complete"] == ["alice"] and summary["judge_lines"] == 4  # 2 distinct beliefs x 2 norms
    ex = json.loads((out / "export.json").read_text())
    assert ex["complete"] == ["alice"] and ex["incomplete"] == ["bob", "carol"]
    assert sorted(ex["participants"]) == ["alice", "bob", "carol"] and ex["participants"]["carol"]["steps_logged"] == 0
    bob = ex["participants"]["bob"]
    assert bob["status"] == "incomplete" and bob["steps_logged"] == 4
    assert bob["finished_norms"] == [NORMS[23].name] and bob["missing_norms"] == [NORMS[39].name]
    pooled = ex["pooled"]  # alice only: bob's finished norm is not counted, nor zeros for his missing one
    assert {r["participant"] for r in pooled["episodes"]} == {"alice"} and len(pooled["episodes"]) == 12
    assert pooled["seen"]["overall"]["joint"] == 50.0 and pooled["seen"]["overall"]["task"] == 75.0
    assert pooled["unseen"]["access"]["joint"] == pytest.approx(100 / 3)
    assert pooled["unseen"]["procedure"]["joint"] == 100
    assert set(pooled["seen"]) == {"overall", "access", "procedure"}

    md = (out / "export.md").read_text().splitlines()
    assert "| human (1 participant) | overall | 2 | 12 | 50.0 | 75.0 | 66.7 | 100.0 |" in md
    assert "| oracle | overall | 2 | 12 | 100.0 | 100.0 | 100.0 | 100.0 |" in md  # norm 40 left out: not played
    assert "| blind | procedure | 1 | 6 | 100.0 | 100.0 | 100.0 | 100.0 |" in md
    i = md.index("| human (1 participant) | access | 1 | 6 | 100.0 | 100.0 | 33.3 | 100.0 |")
    assert md[i + 1].startswith("| oracle | access |")  # the human row beside the model rows
    assert "2 incomplete participant(s) not counted" in md[0]
    txt = (out / "export.txt").read_text()
    assert "pooled: human (1 participant), 12 test episodes" in txt and "bob: incomplete" in txt
    judge = [json.loads(x) for x in (out / "judge_prompts.jsonl").read_text().splitlines()]
    assert {x["id"] for x in judge} == {f"alice/{NORMS[n].name}#{j}" for n in (0, 12) for j in (0, 1)}
    assert {x["belief"] for x in judge} == {"avoid zone Q", "keep right"}
    assert {x["participant"] for x in judge} == {"alice"}
    assert (out / "alice" / "judge_prompts.jsonl").exists()  # llm-judge --run DIR/alice reads this one

    summary = export_study(out, [str(model)], all_norms=True)
    assert "| oracle | overall | 3 | 18 |" in summary["markdown"]
    run = tmp_path / "llm_run"  # an llm-eval run directory: its results.json, labelled by the model
    run.mkdir()
    (run / "results.json").write_text(
        json.dumps(
            dict(
                meta=dict(model="qwen-vl"),
                episodes=[_row(0, c, e, c == "seen", 1.0) for c in ("seen", "unseen") for e in range(3)],
            )
        )
    )
    assert "| qwen-vl | access | 1 | 6 | 100.0 | 100.0 | 0.0 | 100.0 |" in export_study(out, [str(run)])["markdown"]
    with pytest.raises(ValueError, match="not a normjax evaluate JSON"):
        export_study(out, [str(tmp_path / "missing.json")])
    (out / "alice" / "results.json").write_text(json.dumps(dict(episodes=rows[:6])))
    with pytest.raises(ValueError, match="not the six test episodes"):
        export_study(out)
    (out / "alice" / "results.json").unlink()
    with pytest.raises(ValueError, match=r"no participant .* has finished .*alice, bob, carol"):
        export_study(out)
