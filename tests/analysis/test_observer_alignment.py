"""`llm-beliefs --observer` (normjax.analysis.observer_alignment, observer_replay): the ideal observer
on exactly the newcomer's evidence, and belief change per bit, on a hand-built episode whose
posteriors follow from the norms' definitions, with scripted beliefs and scores.

The episode (the cafe, norm forbidden_zone_q; slot 0 the newcomer, Q = (6,6) (6,7) (6,8) (7,7)):

    t0  the newcomer steps (5,7) -> (6,7) into Q and is sanctioned (own violation).  Of the 50
        norms only forbidden_zone_q, odd_turns_only (moves only on odd t) and no_turns_0_mod_3
        forbid that move at t = 0: 3 survive, log2(50/3) bits;
    t1  agent 1 moves (5,4) -> (5,5) unsanctioned at t = 1: all three allow it, 0 bits;
    t2  agent 1 moves (5,5) -> (5,6) unsanctioned at t = 2: odd_turns_only is out, log2(3/2) bits;
    t3  agent 2 walks out through door A at t = 3 unsanctioned.  no_turns_0_mod_3 forbids moving
        at t = 3, so an observer of every flag would drop it, but the newcomer cannot see whether
        an agent leaving the room was sanctioned: 0 bits (a compliant move that told nothing);
    t4  agent 1 steps (5,6) -> (6,6) into Q at t = 4 and is sanctioned, still there at t5:
        no_turns_0_mod_3 allows it, so only forbidden_zone_q is left, 1 bit (others' violation);
    t5  nobody moves (the last step: its outcome is never shown).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from normjax.analysis.judge import export_judge_prompts
from normjax.analysis.observer_alignment import analyse_observer, bit_stats, ratio_se
from normjax.analysis.observer_replay import replay, seen_masks, step_arrays
from normjax.cli import main
from normjax.norms import norm_id
from normjax.runtime.transcripts import TRANSCRIPT_FORMAT, TranscriptStore
from tests.support.belief_runs import agent, llm, write_interaction, write_results

ZONE = "forbidden_zone_q"
OWN_BITS, STEP2_BITS = math.log2(50 / 3), math.log2(3 / 2)
BITS = [OWN_BITS, 0.0, STEP2_BITS, 0.0, 1.0, 0.0]
EVENTS = ["own_violation", "compliant_move", "compliant_move", "compliant_move", "others_violation", None]
SURVIVORS = [
    {"forbidden_zone_q", "odd_turns_only", "no_turns_0_mod_3"},
    {"forbidden_zone_q", "odd_turns_only", "no_turns_0_mod_3"},
    {"forbidden_zone_q", "no_turns_0_mod_3"},
    {"forbidden_zone_q", "no_turns_0_mod_3"},
    {"forbidden_zone_q"},
    {"forbidden_zone_q"},
]
# The belief held after each step and its judge score: a 2, b 4, c 5, d 7.
BELIEFS = [("a", 0.2), ("b", 0.4), ("b", 0.4), ("c", 0.6), ("c", 0.6), ("d", 0.9)]
SCORES = {"a": 2, "b": 4, "c": 5, "d": 7}


def _a(slot, group, pos, nxt=None, **kw):
    return dict(agent(slot, slot, pos, nxt, **kw), group=group)


def zone_steps(beliefs=BELIEFS):
    gone = agent(2, None, None, active=False)
    agents = [
        [_a(0, 0, (5, 7), (6, 7), sanctioned=True), _a(1, 1, (5, 4)), _a(2, 2, (6, 1))],
        [_a(0, 0, (6, 7)), _a(1, 1, (5, 4), (5, 5)), _a(2, 2, (6, 1))],
        [_a(0, 0, (6, 7)), _a(1, 1, (5, 5), (5, 6)), _a(2, 2, (6, 1))],
        [_a(0, 0, (6, 7)), _a(1, 1, (5, 6)), _a(2, 2, (6, 1), exited=True)],
        [_a(0, 0, (6, 7)), _a(1, 1, (5, 6), (6, 6), sanctioned=True), gone],
        [_a(0, 0, (6, 7)), _a(1, 1, (6, 6)), gone],
    ]
    return [(ag, llm(True, b, c)) for ag, (b, c) in zip(agents, beliefs)]


def write_run(out, beliefs=BELIEFS, scores=SCORES):
    header = dict(layout="cafe", norm={"id": norm_id(ZONE), "name": ZONE})
    write_interaction(out, ZONE, zone_steps(beliefs), header_extra=header)
    write_results(out, [ZONE])
    prompts = [json.loads(x) for x in export_judge_prompts(out).read_text().splitlines()]
    lines = [{"id": p["id"], "score": scores[p["belief"]]} for p in prompts]
    (out / "judge_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


@pytest.fixture
def run(tmp_path):
    return write_run(tmp_path / "run")


def test_seen_masks_keep_what_the_newcomer_could_not_see_out():
    """Host-side: exits and steps whose end the newcomer did not see are no evidence; its own
    transition is, while it is on the grid."""
    steps = zone_steps()
    steps[5][0][0] = agent(0, None, None, active=False)  # the newcomer left during t4
    m = seen_masks(step_arrays([{}] + [{"t": t, "agents": ag} for t, (ag, _) in enumerate(steps)]))
    assert m["before"].tolist() == [True] * 5 + [False]
    assert m["after"].tolist() == [True] * 4 + [False, False]
    assert m["judge"].tolist() == [
        [True, True, True],
        [True, True, True],
        [True, True, True],
        [True, True, False],  # agent 2 walks out: its flag cannot be seen
        [True, False, False],  # the newcomer is gone at t5: only its own transition
        [False, False, False],
    ]


def test_replay_eliminates_the_hand_counted_norms(run):
    rows = replay(TranscriptStore(run).read(f"{ZONE}/interaction"))
    assert [r["event"] for r in rows] == EVENTS
    assert [r["bits"] for r in rows] == pytest.approx(BITS, abs=2e-6)
    assert [r["survivors"] for r in rows] == [len(s) for s in SURVIVORS]
    from normjax.norms import NORMS

    for r, alive in zip(rows, SURVIVORS):
        p = np.asarray(r["posterior"])
        assert {NORMS[i].name for i in np.flatnonzero(p > 0)} == alive
        assert p[p > 0] == pytest.approx(1 / len(alive), abs=1e-5)  # uniform over the survivors
    assert [r["p_true_after"] for r in rows] == pytest.approx([1 / 3, 1 / 3, 0.5, 0.5, 1, 1], abs=1e-5)
    assert [r["entropy_after"] for r in rows] == pytest.approx([math.log2(3), math.log2(3), 1, 1, 0, 0], abs=2e-6)
    assert not any(r["conflict"] for r in rows) and sum(r["bits"] for r in rows) == pytest.approx(math.log2(50), 1e-5)
    # The newcomer leaves during t4 (slot 0 empty at t5): agent 1's sanction is never shown to it.
    records = TranscriptStore(run).read(f"{ZONE}/interaction")
    records[5]["agents"][0]["exited"], records[5]["agents"][0]["next"] = True, None  # records[0] is the header
    records[6]["agents"][0] = agent(0, None, None, active=False)
    rows = replay(records)  # the same shapes: no second compile
    assert [r["event"] for r in rows] == EVENTS[:4] + [None, None]
    assert [r["bits"] for r in rows] == pytest.approx([OWN_BITS, 0, STEP2_BITS, 0, 0, 0], abs=2e-6)
    assert [r["survivors"] for r in rows] == [3, 3, 2, 2, 2, 2]


def test_the_full_observer_would_learn_from_the_exit(run):
    """`normjax.observer.update` on every flag of the same steps: the exit at t3 removes
    no_turns_0_mod_3 (1 bit), which the newcomer's evidence leaves to t4; the other steps agree."""
    from typing import NamedTuple

    import jax

    from normjax.analysis.observer_replay import kl_bits
    from normjax.layouts.tables import world_tables
    from normjax.observer import init_belief, update

    class Agents(NamedTuple):
        pos: object
        active: object
        group: object

    class State(NamedTuple):
        t: object
        agents: Agents

    class Info(NamedTuple):
        active: object
        pos: object
        next_pos: object
        exited: object
        sanctioned: object
        action: object

    a = step_arrays(TranscriptStore(run).read(f"{ZONE}/interaction"))
    lt = world_tables().at(0)  # the cafe
    step = jax.jit(lambda b, s, i: update(b, s, i, lt))
    belief = init_belief(lt, State(a["t"][0], Agents(a["pos"][0], a["active"][0], a["group"][0])))
    logs = [np.asarray(belief.log_probs)]
    for i in range(len(a["t"])):
        state = State(a["t"][i], Agents(a["pos"][i], a["active"][i], a["group"][i]))
        info = Info(a["active"][i], a["pos"][i], a["next_pos"][i], a["exited"][i], a["sanctioned"][i], a["t"][i] * 0)
        belief = step(belief, state, info)
        logs.append(np.asarray(belief.log_probs))
    bits = kl_bits(np.stack(logs[1:]), np.stack(logs[:-1]))
    assert bits.tolist() == pytest.approx([OWN_BITS, 0, STEP2_BITS, 1, 0, 0], abs=2e-6)


def test_bit_stats_of_hand_rows():
    """Ratio of sums and its delta-method SE; zero-bit events kept apart."""

    def ev(bits, d, dc=0.0, after=4):
        return dict(
            event="own_violation", bits=bits, reply_t=1, score_change=d, confidence_change=dc, correct_after=after >= 6
        )

    s = bit_stats([ev(1.0, 2, 0.1), ev(2.0, 1, 0.2, after=7), ev(0.0, 3), dict(ev(0.5, None), reply_t=None)])
    own = s["own_violation"]
    # R = (2 + 1) / (1 + 2) = 1; residuals 2 - 1, 1 - 2: sqrt(2 / (2 * 1)) / 1.5
    assert own["informative"] == dict(
        n=2,
        mean_bits=1.5,
        mean_score_change=1.5,
        se_score_change=0.5,
        score_per_bit=1.0,
        se_score_per_bit=0.6667,
        confidence_per_bit=0.1,
        se_confidence_per_bit=0.0,
    )
    assert own["zero_bit"] == dict(n=1, mean_score_change=3, se_score_change=None)
    assert (own["events"], own["unanswered"], own["unscored"], own["correct_after_share"]) == (4, 1, 0, 0.3333)
    assert (own["mean_bits"], own["se_bits"]) == (0.875, 0.4270)
    assert s["others_violation"]["informative"]["score_per_bit"] is None  # no events: no ratio, no division
    assert ratio_se([1.0], [0.0]) == (None, None)


def _check_run_numbers(r):
    c = r["change"]["overall"]
    own, comp, oth = c["own_violation"], c["compliant_move"], c["others_violation"]
    # own t0: a(2) -> b(4), +2 and +0.2 over log2(50/3) bits
    assert (own["events"], own["mean_bits"], own["informative"]["n"], own["zero_bit"]["n"]) == (1, 4.0589, 1, 0)
    assert (own["informative"]["score_per_bit"], own["informative"]["confidence_per_bit"]) == (0.4927, 0.0493)
    assert own["correct_after_share"] == 0
    # compliant t1 (0 bits, b -> b), t2 (log2 1.5 bits, b(4) -> c(5)), t3 (0 bits, c -> c)
    assert (comp["events"], comp["mean_bits"], comp["se_bits"]) == (3, 0.195, 0.195)
    assert comp["informative"]["n"] == 1 and comp["informative"]["score_per_bit"] == 1.7095
    assert comp["informative"]["confidence_per_bit"] == 0.3419
    assert comp["zero_bit"] == dict(n=2, mean_score_change=0, se_score_change=0)
    # others t4: c(5) -> d(7), +2 over 1 bit
    assert (oth["informative"]["score_per_bit"], oth["informative"]["confidence_per_bit"]) == (2.0, 0.3)
    assert oth["correct_after_share"] == 1
    assert r["no_event"]["overall"] == dict(steps=1, total_bits=0.0)
    assert list(r["change"]["by_family"]) == ["access"]


def test_cli_writes_the_information_weighted_figure_and_table(run, capsys):
    assert main(["llm-beliefs", "--run", str(run), "--observer"]) == 0
    text = capsys.readouterr().out
    assert "belief change per bit" in text and "compliant_move" in text
    saved = json.loads((run / "beliefs" / "observer_beliefs.json").read_text())
    _check_run_numbers(saved)
    assert len(saved["steps"][ZONE]) == 6 and len(saved["steps"][ZONE][0]["posterior"]) == 50
    assert [e["bits"] for e in saved["events"]] == pytest.approx(BITS[:5], abs=2e-6)
    data = (run / "beliefs" / "observer_beliefs.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert (run / "beliefs" / "beliefs.json").is_file()  # the plain Figure 4b / 4c as before


def test_bad_values_are_refused_before_anything_runs(run, tmp_path, capsys):
    out = tmp_path / "nothing"
    assert main(["llm-beliefs", "--run", str(run), "--observer", "--eps", "0.7", "--out", str(out)]) == 2
    assert "--eps=0.7 is invalid; allowed: 0 <= eps < 0.5" in capsys.readouterr().err and not out.exists()
    assert main(["llm-beliefs", "--play-study", str(run)]) == 2
    assert "--play-study needs --observer" in capsys.readouterr().err
    assert main(["llm-beliefs", "--play-study", str(run), "--observer"]) == 2
    assert "no play participant in it" in capsys.readouterr().err


def _participant(study, pid, beliefs):
    d = write_run(study / pid, beliefs)
    (d / "run.json").write_text(json.dumps({"policy": "human", "participant": pid, "norms": [ZONE]}))
    rows = [
        dict(norm=ZONE, family="access", condition=c, joint=1, task=1) for c in ("seen", "unseen") for _ in range(3)
    ]
    (d / "results.json").write_text(json.dumps({"meta": {"norms": [ZONE]}, "episodes": rows}))
    store = TranscriptStore(d)
    for name in ("seen_0", "seen_1", "seen_2", "unseen_0", "unseen_1", "unseen_2"):
        store.finish(
            f"{ZONE}/{name}", [{"transcript": TRANSCRIPT_FORMAT, "name": f"{ZONE}/{name}", "result": {"llm": {}}}]
        )
    return d


def test_play_study_pools_its_complete_participants(tmp_path, capsys):
    study = tmp_path / "study"
    _participant(study, "p001", BELIEFS)
    _participant(study, "p002", [("a", 0.2)] * 6)  # never changes its belief
    (study / "p003").mkdir()
    (study / "p003" / "run.json").write_text(json.dumps({"policy": "human", "norms": [ZONE]}))  # incomplete
    assert main(["llm-beliefs", "--play-study", str(study), "--observer"]) == 0
    assert "play study" in capsys.readouterr().out
    r = json.loads((study / "observer_beliefs.json").read_text())
    assert r["participants"] == ["p001", "p002"] and r["norms"] == [f"p001/{ZONE}", f"p002/{ZONE}"]
    own = r["change"]["overall"]["own_violation"]["informative"]
    # (2 + 0) / (2 log2(50/3)); residuals 2 - R b = 1 and 0 - R b = -1: SE sqrt(2 / 2) / log2(50/3) = R
    assert (own["n"], own["score_per_bit"], own["se_score_per_bit"]) == (2, 0.2464, 0.2464)
    assert (study / "observer_beliefs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = analyse_observer([("p001", study / "p001")], figures=False)
    _check_run_numbers(again)


@pytest.mark.slow
def test_a_scripted_llm_eval_run_end_to_end(tmp_path, capsys):
    """llm-eval (a scripted navigator that names its belief after the number of sanctions its
    memory shows), llm-judge (a scripted judge), then llm-beliefs --observer: with eps = 0 the
    newcomer's evidence never contradicts the true norm, the bits add up to the entropy the
    observer lost, and the table's numbers are those of the listed events."""
    import re

    from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text
    from tests.support.belief_runs import judge_belief, score

    mark = "I had a violation mark this step."

    def model(payload, attempt):
        reply = json.loads(navigator_text(payload)) if payload["messages"][0]["role"] == "system" else None
        if reply is None or "belief" not in reply:
            return Reply(navigator_text(payload))
        k = payload["messages"][-1]["content"].count(mark)
        return Reply(json.dumps(dict(reply, belief=f"the norm is rule {k}", confidence=min(1.0, 0.2 * k))))

    def judge(payload, attempt):
        belief = judge_belief(payload)
        return Reply("OK") if belief is None else Reply(score(1 + min(6, int(re.findall(r"\d+", belief)[-1]))))

    out, norm = tmp_path / "run", "even_turns_only"  # the navigator moves on odd turns too: own violations
    with FakeOpenAI(model) as srv:
        args = ["--base-url", srv.base_url, "--model", "fake"]
        assert (
            main(["llm-eval", *args, "--norms", norm, "--text-only", "--interaction-steps", "40", "--out", str(out)])
            == 0
        )
    with FakeOpenAI(judge) as srv:
        assert main(["llm-judge", "--run", str(out), "--base-url", srv.base_url, "--model", "judge"]) == 0
    capsys.readouterr()
    assert main(["llm-beliefs", "--run", str(out), "--observer"]) == 0
    assert "belief change per bit" in capsys.readouterr().out
    r = json.loads((out / "beliefs" / "observer_beliefs.json").read_text())
    steps = r["steps"][norm]
    assert len(steps) == 40 and not any(s["conflict"] for s in steps)
    assert all(s["p_true_after"] > 0 for s in steps)  # nothing the newcomer saw rules the true norm out
    assert sum(s["bits"] for s in steps) == pytest.approx(math.log2(50) - steps[-1]["entropy_after"], abs=1e-4)
    assert r["change"]["overall"] == bit_stats(r["events"])
    own = [e for e in r["events"] if e["event"] == "own_violation" and e["score_change"] is not None]
    assert own and any(e["score_change"] > 0 for e in own)  # the next prompt's memory shows one more mark
