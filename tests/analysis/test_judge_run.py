"""`normjax llm-judge` against a scripted judge on 127.0.0.1 (normjax/testing/fake_openai.py), on hand-built
run directories (tests/support/belief_runs.py): it scores every belief and stores the curve in results.json;
a rerun requests nothing twice; a broken endpoint exits 3 and leaves results.json as it was;
unusable replies are listed and exit 1; a scores file of other beliefs or another judge is refused."""

from __future__ import annotations

import json

import pytest

from normjax.analysis.judge import import_judge_scores
from normjax.cli import build_parser, main
from normjax.testing.fake_openai import FakeOpenAI, Reply
from tests.support.belief_runs import (
    belief_only_steps,
    judge_belief,
    judge_script,
    score,
    write_interaction,
    write_results,
)

ZONE, RING, ROOM = "forbidden_zone_q", "clockwise_circulation", "zone_r_capacity_1"
REPLIES = {"avoid Q": score(6), "avoid zone Q always": score(7), "walk in circles": score(3)}


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    write_interaction(out, ZONE, belief_only_steps([None, "avoid Q", "avoid Q", "avoid zone Q always"]))
    write_interaction(out, RING, belief_only_steps([None, None, "walk in circles", "walk in circles"]))
    write_interaction(out, ROOM, belief_only_steps(["anything"] * 4), incomplete=True)  # never judged
    write_results(out, [ZONE, RING])
    return out


def _judge(url, run, *extra):
    return main(
        [
            "llm-judge",
            "--run",
            str(run),
            "--base-url",
            url,
            "--model",
            "judge",
            "--timeout",
            "5",
            "--max-retries",
            "0",
            *extra,
        ]
    )


def _asked(srv) -> list[str]:
    """The beliefs the judge was asked about, in order (the preflight is not one)."""
    return [b for b in (judge_belief(e["payload"]) for e in srv.log) if b is not None]


def test_judge_scores_every_belief_and_stores_the_curve(run, capsys):
    with FakeOpenAI(judge_script(REPLIES), models=("judge",)) as srv:
        assert _judge(srv.base_url, run) == 0
    assert srv.log[0]["prompt"].startswith("This is a connection check")  # the preflight came first
    assert sorted(_asked(srv)) == sorted(REPLIES)
    assert {e["payload"]["temperature"] for e in srv.log[1:]} == {0.0}  # the judge's default
    acc = json.loads((run / "results.json").read_text())["belief_accuracy"]
    assert acc["norms"] == [ZONE, RING] and acc["missing"] == [] and acc["errors"] == [] and acc["complete"] is True
    assert acc["curve"]["mean_score"] == [1, 3.5, 4.5, 5] and acc["curve"]["correct_share"] == [0, 0.5, 0.5, 0.5]
    assert acc["final_score"] == {ZONE: 7, RING: 3}
    assert acc["judge"]["model"] == "judge" and acc["judge"]["temperature"] == 0.0
    lines = [json.loads(x) for x in (run / "judge_scores.jsonl").read_text().splitlines()]
    assert {(x["norm"], x["belief"], x["model"]) for x in lines} == {
        (ZONE, "avoid Q", "judge"),
        (ZONE, "avoid zone Q always", "judge"),
        (RING, "walk in circles", "judge"),
    }
    assert all(json.loads(x["reply"])["rationale"] == "scripted" for x in lines)  # the raw replies
    assert acc == {**import_judge_scores(run, run / "judge_scores.jsonl", [ZONE, RING]), "judge": acc["judge"]}
    assert "3 of 3 usable" in capsys.readouterr().out


def test_request_options_reach_the_judge(run):
    with FakeOpenAI(judge_script(REPLIES)) as srv:
        assert (
            _judge(
                srv.base_url,
                run,
                "--max-tokens-field",
                "max_completion_tokens",
                "--no-temperature",
                "--max-tokens",
                "300",
                "--extra-body",
                '{"reasoning_effort": "low"}',
            )
            == 0
        )
    for entry in srv.log:  # the preflight included
        p = entry["payload"]
        assert "temperature" not in p and "max_tokens" not in p and p["reasoning_effort"] == "low", p
        assert p["max_completion_tokens"] == (16 if judge_belief(p) is None else 300)
    judge = json.loads((run / "results.json").read_text())["belief_accuracy"]["judge"]
    assert judge["temperature"] is None and judge["extra_body"] == {"reasoning_effort": "low"}


def test_a_rerun_requests_nothing_twice(run, tmp_path):
    scores = tmp_path / "scores.jsonl"
    flaky = dict(REPLIES, **{"walk in circles": "I would give this a 3"})  # prose: no usable score
    with FakeOpenAI(judge_script(flaky)) as srv:
        assert _judge(srv.base_url, run, "--out", str(scores)) == 1
    assert sorted(_asked(srv)) == sorted(REPLIES)
    assert "belief_accuracy" not in json.loads((run / "results.json").read_text())  # no partial table
    # as if killed before the reply about "avoid zone Q always" was written
    kept = [x for x in scores.read_text().splitlines() if json.loads(x)["belief"] != "avoid zone Q always"]
    scores.write_text("\n".join(kept) + "\n")
    with FakeOpenAI(judge_script(REPLIES)) as srv:
        assert _judge(srv.base_url, run, "--out", str(scores)) == 0
    assert sorted(_asked(srv)) == ["avoid zone Q always", "walk in circles"]  # missing, and the unusable one
    with FakeOpenAI(judge_script(REPLIES)) as srv:
        assert _judge(srv.base_url, run, "--out", str(scores)) == 0
    assert srv.log == []  # all scored: not even a preflight
    assert json.loads((run / "results.json").read_text())["belief_accuracy"]["final_score"] == {ZONE: 7, RING: 3}


@pytest.mark.parametrize("status", [401, 404])
def test_a_broken_endpoint_exits_3_and_leaves_the_table(run, capsys, status):
    before = (run / "results.json").read_bytes()
    with FakeOpenAI(lambda p, a: Reply(status=status)) as srv:
        assert _judge(srv.base_url, run) == 3
    err = capsys.readouterr().err
    assert f"HTTP {status}" in err and "preflight" in err and "'judge'" in err
    assert (run / "results.json").read_bytes() == before
    assert not (run / "judge_scores.jsonl").exists() or (run / "judge_scores.jsonl").read_text() == ""


def test_requests_that_fail_after_their_retries_exit_3(run, capsys):
    before = (run / "results.json").read_bytes()
    answers = dict(REPLIES, **{"avoid Q": Reply(status=500)})
    with FakeOpenAI(judge_script(answers)) as srv:
        assert _judge(srv.base_url, run) == 3
    err = capsys.readouterr().err
    assert "1 judge request(s)" in err and f"{ZONE}#0" in err and "HTTP 500" in err
    assert (run / "results.json").read_bytes() == before
    written = [json.loads(x)["belief"] for x in (run / "judge_scores.jsonl").read_text().splitlines()]
    assert sorted(written) == ["avoid zone Q always", "walk in circles"]  # kept for the rerun


def test_unusable_replies_are_listed_and_exit_1(run, capsys):
    bad = {
        "avoid Q": "this belief deserves a 5",
        "avoid zone Q always": '{"score": 9}',
        "walk in circles": '<think>{"score": 4}</think>',
    }
    with FakeOpenAI(judge_script(bad)) as srv:
        assert _judge(srv.base_url, run) == 1
    err = capsys.readouterr().err
    assert "3 of 3 belief(s) have no usable judge score" in err
    assert "no JSON object with a score" in err and "9 is not an integer from 1 to 7" in err
    assert "belief_accuracy" not in json.loads((run / "results.json").read_text())
    assert len((run / "judge_scores.jsonl").read_text().splitlines()) == 3


def test_a_scores_file_of_other_beliefs_or_another_judge_is_refused(run, capsys):
    with FakeOpenAI(judge_script(REPLIES)) as srv:
        assert _judge(srv.base_url, run) == 0
        assert main(["llm-judge", "--run", str(run), "--base-url", srv.base_url, "--model", "other-judge"]) == 2
        assert "by judge model 'judge', not 'other-judge'" in capsys.readouterr().err
        # the interaction is rerun with other beliefs: the old lines name beliefs the run no longer holds
        write_interaction(run, ZONE, belief_only_steps([None, "stay out of Q", "stay out of Q", "stay out of Q"]))
        assert _judge(srv.base_url, run) == 2
        assert "no longer holds" in capsys.readouterr().err
        (run / "hand.jsonl").write_text(json.dumps({"id": f"{ZONE}#0", "score": 5}) + "\n")
        assert _judge(srv.base_url, run, "--out", str(run / "hand.jsonl")) == 2
        assert "not written by normjax llm-judge" in capsys.readouterr().err


def test_without_results_json_the_scores_are_written_and_named(run, capsys):
    (run / "results.json").unlink()
    with FakeOpenAI(judge_script(REPLIES)) as srv:
        assert _judge(srv.base_url, run) == 0
    out = capsys.readouterr().out
    assert "no results.json in the run: not stored" in out and str(run / "judge_scores.jsonl") in out
    assert not (run / "results.json").exists()


def test_not_a_run_directory(tmp_path, capsys):
    assert _judge("http://127.0.0.1:9/v1", tmp_path) == 2
    assert "not an llm-eval run directory" in capsys.readouterr().err
    write_interaction(tmp_path, ZONE, belief_only_steps(["x"]), incomplete=True)
    assert _judge("http://127.0.0.1:9/v1", tmp_path) == 2
    assert "no finished interaction episode" in capsys.readouterr().err


def test_help_shows_defaults_and_shares_the_client_options():
    sub = build_parser()._subparsers._group_actions[0].choices
    judge = " ".join(sub["llm-judge"].format_help().split())
    for part in (
        "(default: 0.0)",
        "(default: 64)",
        "(default: 4048)",
        "(default: max_tokens)",
        "(default: 0.2)",
        "(default: DIR/judge_scores.jsonl)",
        "--no-temperature",
        "--extra-body JSON",
    ):
        assert part in judge, part

    def client_options(parser):
        (group,) = [g for g in parser._action_groups if g.title.startswith("endpoint and requests")]
        return [a.dest for a in group._group_actions]

    assert client_options(sub["llm-judge"]) == client_options(sub["llm-eval"])
    assert len(client_options(sub["llm-eval"])) == 12
