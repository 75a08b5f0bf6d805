"""The belief analysis (normjax.analysis.belief_analysis, `normjax llm-beliefs`; paper Figure 4b / 4c) on a
hand-built run whose events, beliefs and scores are known, against numbers computed by hand; the
event definitions against what the prompts of a real llm-eval run showed (slow tier)."""

from __future__ import annotations

import json

import pytest

from normjax.analysis.belief_analysis import analyse_beliefs, step_evidence
from normjax.analysis.judge import export_judge_prompts, import_judge_scores
from normjax.cli import main
from normjax.runtime.transcripts import TranscriptStore
from tests.support.belief_runs import agent, llm, write_interaction, write_results

ZONE, RING = "forbidden_zone_q", "clockwise_circulation"  # access, procedure
SCORES = {"b1": 2, "b2": 5, "b3": 7, "c2": 5}


def _zone_steps():
    """8 steps; slot 0 the newcomer, 1 and 2 other agents (comments: the step's event class)."""
    a, b = 1, 2
    return [
        # t0 own_violation: the newcomer is sanctioned; the others wait
        (
            [agent(0, 0, (5, 5), (5, 6), sanctioned=True), agent(a, 1, (2, 2)), agent(b, 2, (8, 8))],
            llm(True, "b1", 0.2),
        ),
        # t1 others_violation (A sanctioned, still there at t2) although B also moves unsanctioned
        (
            [agent(0, 0, (5, 6)), agent(a, 1, (2, 2), (2, 3), sanctioned=True), agent(b, 2, (8, 8), (8, 9))],
            llm(True, "b1", 0.2),
        ),
        # t2 compliant_move: B moves, no sanction
        ([agent(0, 0, (5, 6)), agent(a, 1, (2, 3)), agent(b, 2, (8, 9), (8, 10))], llm(True, "b2", 0.5)),
        # t3 no event: A leaves with a sanction and its slot is refilled (never shown a red cross); B is displaced
        (
            [
                agent(0, 0, (5, 6)),
                agent(a, 1, (2, 3), exited=True, sanctioned=True),
                agent(b, 2, (8, 10), (7, 10), displaced=True),
            ],
            llm(False, "b2", 0.5),
        ),
        # t4 no event: nobody moves
        ([agent(0, 0, (5, 6)), agent(a, 5, (1, 1)), agent(b, 2, (7, 10))], llm(True, "b3", 0.9)),
        # t5 no event: the newcomer leaves, so it sees neither the sanction nor B's move
        (
            [
                agent(0, 0, (5, 6), exited=True),
                agent(a, 5, (1, 1), (1, 2), sanctioned=True),
                agent(b, 2, (7, 10), (7, 11)),
            ],
            llm(True, "b3", 0.9),
        ),
        # t6 no event: the newcomer is off the grid
        ([agent(0, None, None, active=False), agent(a, 5, (1, 2), (1, 3)), agent(b, 2, (7, 11), (7, 12))], None),
        # t7 own_violation of the next newcomer, on the last step: no reply follows (unanswered)
        (
            [agent(0, 9, (10, 7), (9, 7), sanctioned=True), agent(a, 5, (1, 3), sanctioned=True), agent(b, 2, (7, 12))],
            llm(True, "b1", 0.3),
        ),
    ]


def _ring_steps():
    """3 steps; at t1 the newcomer and another agent are both sanctioned: the step counts as own_violation."""
    return [
        (
            [agent(0, 0, (5, 5), (5, 6), sanctioned=True), agent(1, 3, (2, 2))],
            llm(True, None, None),
        ),  # no belief yet: score 1
        (
            [agent(0, 0, (5, 6), (5, 7), sanctioned=True), agent(1, 3, (2, 2), (2, 3), sanctioned=True)],
            llm(True, "c2", 0.6),
        ),
        ([agent(0, 0, (5, 7)), agent(1, 3, (2, 3))], llm(True, "c2", 0.6)),
    ]


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    write_interaction(out, ZONE, _zone_steps())
    write_interaction(out, RING, _ring_steps())
    write_results(out, [ZONE, RING])
    prompts = [json.loads(x) for x in export_judge_prompts(out).read_text().splitlines()]
    lines = [{"id": p["id"], "score": SCORES[p["belief"]]} for p in prompts]
    (out / "judge_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def test_step_evidence_sees_what_the_prompts_show(run):
    ev = step_evidence(TranscriptStore(run).read(f"{ZONE}/interaction"))
    assert [e["event"] for e in ev] == [
        "own_violation",
        "others_violation",
        "compliant_move",
        None,
        None,
        None,
        None,
        "own_violation",
    ]
    assert [e["others_sanctioned"] for e in ev] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [e["others_sanctioned_unseen"] for e in ev] == [0, 0, 0, 1, 0, 1, 0, 1]
    assert [e["compliant_moves"] for e in ev] == [0, 1, 1, 0, 0, 0, 0, 0]
    ring = step_evidence(TranscriptStore(run).read(f"{RING}/interaction"))
    assert [(e["event"], e["others_sanctioned"]) for e in ring] == [
        ("own_violation", 0),
        ("own_violation", 1),
        (None, 0),
    ]


def test_belief_change_after_events_equals_the_hand_computed_values(run):
    r = analyse_beliefs(run)
    own, others, comp = (r["change"]["overall"][k] for k in ("own_violation", "others_violation", "compliant_move"))
    # own: zone t0 b1 -> b1 (0), ring t0 none -> c2 (1 -> 5: +4, confidence 0 -> 0.6), ring t1 c2 -> c2 (0);
    # zone t7 has no later reply (unanswered)
    assert (own["n"], own["events"], own["unanswered"], own["unscored"]) == (3, 4, 1, 0)
    assert (own["mean_score_change"], own["se_score_change"]) == (1.3333, 1.3333)
    assert (own["mean_confidence_change"], own["se_confidence_change"]) == (0.2, 0.2)
    assert (own["score_up"], own["score_down"], own["belief_changed_share"]) == (1, 0, 0.3333)
    # others: zone t1 b1 -> b2 (2 -> 5), 0.2 -> 0.5; compliant: zone t2 b2 -> b3 at t4 (t3 was not asked)
    assert (others["n"], others["mean_score_change"], others["se_score_change"], others["mean_confidence_change"]) == (
        1,
        3,
        None,
        0.3,
    )
    assert (comp["n"], comp["mean_score_change"], comp["mean_confidence_change"]) == (1, 2, 0.4)
    assert [(e["t"], e["reply_t"]) for e in r["events"] if e["norm"] == ZONE] == [(0, 1), (1, 2), (2, 4), (7, None)]
    fam = r["change"]["by_family"]
    assert list(fam) == ["access", "procedure"]
    proc = fam["procedure"]["own_violation"]
    assert (proc["mean_score_change"], proc["se_score_change"], proc["se_confidence_change"]) == (2, 2, 0.3)
    assert fam["access"]["own_violation"]["n"] == 1 and fam["access"]["own_violation"]["unanswered"] == 1
    # two replies after each event instead of one
    later = analyse_beliefs(run, replies_after=2)["change"]["overall"]
    assert later["others_violation"]["mean_score_change"] == 5 and later["compliant_move"]["mean_score_change"] == 2
    assert later["own_violation"]["n"] == 2 and later["own_violation"]["unanswered"] == 2


def test_correctness_curves_equal_the_hand_computed_values_and_the_import(run):
    c = analyse_beliefs(run)["correctness"]
    o = c["overall"]
    # zone scores per step 2 2 5 5 7 7 7 2; ring 1 5 5
    assert o["mean_score"] == [1.5, 3.5, 5, 5, 7, 7, 7, 2] and o["correct_share"] == [0, 0, 0, 0, 1, 1, 1, 0]
    assert o["se_score"] == [0.5, 1.5, 0, None, None, None, None, None]
    assert o["violations"] == [1, 1.5, 1.5, 1, 1, 1, 1, 2]
    assert (o["final_mean_score"], o["final_correct_share"], o["norms"]) == (3.5, 0, 2)
    assert c["by_family"]["procedure"]["mean_score"] == [1, 5, 5]
    imported = import_judge_scores(run, run / "judge_scores.jsonl")["curve"]
    assert {k: o[k] for k in imported} == imported


def test_missing_or_stale_scores_are_refused_unless_allowed(run, capsys):
    path = run / "judge_scores.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(x for x in lines if json.loads(x)["id"] != f"{RING}#0") + "\n")  # c2 unscored
    assert main(["llm-beliefs", "--run", str(run)]) == 2
    assert "1 of 4 belief(s) have no usable score" in capsys.readouterr().err
    r = analyse_beliefs(run, allow_missing=True)
    own = r["change"]["overall"]["own_violation"]
    assert r["missing"] == [f"{RING}#0"] and (own["n"], own["unscored"]) == (1, 2)
    stale = dict(json.loads(lines[0]), belief="something the run never said")
    (run / "stale.jsonl").write_text(json.dumps(stale) + "\n")
    assert main(["llm-beliefs", "--run", str(run), "--scores", str(run / "stale.jsonl")]) == 2
    assert "scores another belief" in capsys.readouterr().err


def test_cli_writes_the_numbers_and_both_figures(run, tmp_path, capsys):
    out = tmp_path / "beliefs"
    assert main(["llm-beliefs", "--run", str(run), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "final mean score 3.5" in text and "own_violation" in text
    saved = json.loads((out / "beliefs.json").read_text())
    assert saved["change"] == analyse_beliefs(run)["change"]
    for name in ("belief_correctness.png", "belief_change.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    assert main(["llm-beliefs", "--run", str(run), "--replies-after", "0"]) == 2
    assert "replies_after=0 is invalid" in capsys.readouterr().err


@pytest.mark.slow
def test_event_definitions_match_a_real_runs_prompts(tmp_path):
    """Sanctions seen by the newcomer = the red-cross notes and own-sanction notes of the next text prompt."""
    from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text

    out = tmp_path / "run"
    with FakeOpenAI(lambda p, a: Reply(navigator_text(p))) as srv:
        assert (
            main(
                [
                    "llm-eval",
                    "--base-url",
                    srv.base_url,
                    "--model",
                    "fake",
                    "--norms",
                    ZONE,
                    RING,
                    "--text-only",
                    "--interaction-steps",
                    "60",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
    note = "red cross: penalised for violating the social norm in the last step"
    own_note = "Your action in the last step violated the social norm"
    store, seen, checked = TranscriptStore(out), 0, 0
    for norm in (ZONE, RING):
        records = store.read(f"{norm}/interaction")
        ev = step_evidence(records)
        for i in range(1, len(ev)):
            rec = records[1 + i]["llm"]
            if rec and rec.get("messages"):
                prompt = rec["messages"][-1]["content"]
                assert prompt.count(note) == ev[i - 1]["others_sanctioned"], (norm, i)
                assert (own_note in prompt) == ev[i - 1]["own"], (norm, i)
                seen += ev[i - 1]["others_sanctioned"] + ev[i - 1]["own"]
                checked += 1
    assert checked > 90 and seen > 0  # the check saw sanctions


def test_the_analysis_needs_no_http_client():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "import normjax.analysis.belief_analysis, normjax.analysis.belief_figures\nprint('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "imported", out.stderr
