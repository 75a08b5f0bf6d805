"""normjax.runtime.runner end to end.

* The oracle and blind state policies, wrapped as external agents, reproduce
  the protocol's per-episode numbers exactly (the same seeds, groups,
  scenarios and key splits as `normjax.protocol.run_episode`).
* A scripted fake OpenAI-compatible server (normjax/testing/fake_openai.py) answers
  with malformed JSON, invalid actions, HTTP 500 and 429, slow replies past
  the timeout and garbage bodies: the run completes, every error is counted
  where the script says it must be, and the newcomer WAITs on each.
* Transcripts, resume after a simulated kill, frames for VLMs, the judge
  export / import, and the CLI.

All runs use one norm or the five of SUBSET, so every batch pads to the same
32 rows and the compiled step is shared by all tests.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import faulthandler
import functools
import io
import json
import zlib

import jax
import numpy as np
import pytest

from normjax import constants as C
from normjax.analysis.judge import export_judge_prompts, import_judge_scores
from normjax.env import blind_policy, oracle_policy, random_policy
from normjax.llm.agents import LLMAgent
from normjax.llm.client import PREFLIGHT_PROMPT, ChatClient, ClientConfig
from normjax.protocol.runner import format_table, summarize
from normjax.runtime import batch
from normjax.runtime.agents import StatePolicyAgent
from normjax.runtime.batch import policy_actions
from normjax.runtime.runner import run_protocol, run_protocol_async
from normjax.runtime.transcripts import TranscriptStore
from normjax.runtime.turns import Decision
from normjax.testing.fake_openai import ERROR_CATEGORIES, FakeOpenAI, category, chaos, prompt_text
from tests.support.killer import Killer
from tests.support.shared_protocol import reference

SUBSET = [0, 12, 23, 39, 44]  # one or two norms per family
NORM = "forbidden_zone_q"
SETTINGS = dict(model="fake", text_only=True, known_norm=False, temperature=0.7, max_tokens=4048)


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(300, exit=True)  # a hang fails the run instead of blocking it
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.slow  # an equivalence run of whole programs; the slow tier (CI runs both)
@pytest.mark.parametrize("name, policy", [("oracle", oracle_policy), ("blind", blind_policy)])
def test_state_policies_reproduce_the_protocol_exactly(name, policy):
    eps, raw = reference(name, SUBSET)  # run_episode as `evaluate` runs it (tests/support/shared_protocol.py)
    want, waits = summarize(eps, raw), raw["waits"]
    got = run_protocol(StatePolicyAgent(policy), SUBSET, interaction_steps=0)
    assert len(got["episodes"]) == len(want["episodes"]) == 30
    for g, w, wt in zip(got["episodes"], want["episodes"], waits):
        assert {k: g[k] for k in w} == w  # every per-episode number, exactly
        assert g["waits"] == int(wt) and g["errors"] == 0 and g["decisions"] > 0
    for cond in ("seen", "unseen"):
        assert got[cond] == want[cond]
    assert format_table(got) == format_table(want)
    joint = 100.0 if name == "oracle" else 0.0
    assert got["seen"]["overall"]["joint"] == joint and got["unseen"]["overall"]["task"] == 100.0


def _run(url, out, agent_wrap=None, norms=(NORM,), interaction_steps=40, text_only=True, run_kwargs=None, **cfg):
    cfg = dict(dict(model="fake", timeout=0.5, max_retries=2, backoff=0.01, max_backoff=0.05, concurrency=16), **cfg)

    async def main():
        async with ChatClient(ClientConfig(base_url=url, **cfg)) as client:
            agent = LLMAgent(client, text_only=text_only)
            if agent_wrap is not None:
                agent = agent_wrap(agent)
            result = await run_protocol_async(
                agent,
                list(norms),
                interaction_steps=interaction_steps,
                out=out,
                settings=dict(SETTINGS, text_only=text_only),
                **(run_kwargs or {}),
            )
            return result, dict(client.stats)

    return asyncio.run(asyncio.wait_for(main(), 240))


@functools.cache
def _chaos_run(tmp_root):
    with FakeOpenAI(chaos()) as srv:
        result, stats = _run(srv.base_url, f"{tmp_root}/chaos")
        return result, stats, srv.settled_log(stats["attempts"])


@pytest.fixture(scope="module")
def chaos_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm")
    return (*_chaos_run(str(root)), root / "chaos")


def test_fake_server_run_counts_errors_and_retries(chaos_run):
    result, stats, log, out = chaos_run
    store = TranscriptStore(out)
    names = store.episodes()
    assert names == sorted(
        f"{NORM}/{e}" for e in ["interaction", "seen_0", "seen_1", "seen_2", "unseen_0", "unseen_1", "unseen_2"]
    )
    seen_kinds, errors, requests = set(), 0, 0
    for name in names:
        records = store.read(name)
        header, steps = records[0], records[1:]
        assert header["format"] == "normjax.trajectory/1" and header["transcript"] == "normjax.llm_transcript/1"
        n_err = 0
        for rec in steps:
            llm = rec["llm"]
            assert rec["agents"][0]["slot"] == 0 and "sanctioned" in rec["agents"][0]
            if llm is None or not llm["queried"]:
                continue
            kind = category(prompt_text({"messages": llm["messages"]}))
            seen_kinds.add(kind)
            assert (llm["error"] is not None) == (kind in ERROR_CATEGORIES), (name, rec["t"], kind, llm["error"])
            if llm["error"] is not None:
                n_err += 1
                assert llm["action"] == C.WAIT and llm["executed"] == C.WAIT  # the newcomer waits
                assert rec["agents"][0]["action"] == C.WAIT
            # scripted failures are retried as often as scripted (a reply delayed by a loaded machine may add one)
            assert {"http500": 1, "http429": 2, "garbage": 1, "slow": 2}.get(kind, 0) <= llm["retries"] <= 2
        assert n_err == header["result"]["llm"]["errors"]
        errors += n_err
        requests += header["result"]["llm"]["requests"]
    assert set(ERROR_CATEGORIES) | {"http500", "http429", "ok"} <= seen_kinds  # the script exercised them
    assert result["llm"]["errors"] == errors > 0 and result["llm"]["requests"] == requests == stats["requests"] - 1
    assert log[0]["prompt"] == PREFLIGHT_PROMPT  # the one request that is not a decision
    assert result["llm"]["retries"] == stats["retries"] > 0 and stats["attempts"] == len(log)
    ok = [e["usage"] for e in log[1:] if e["usage"] is not None and e["delay"] == 0]
    assert result["llm"]["tokens_in"] == sum(u["prompt_tokens"] for u in ok)
    assert result["llm"]["tokens_out"] == sum(u["completion_tokens"] for u in ok)
    rows = result["episodes"]
    assert len(rows) == 6 and sum(r["errors"] for r in rows) + result["interaction"][0]["errors"] == errors
    assert all(r["belief"] == result["interaction"][0]["belief"] for r in rows)  # frozen belief
    assert result["interaction"][0]["belief"] in ("Agents avoid the marked zone Q.", "?")
    assert result["seen"]["overall"]["task"] > 0  # the scripted navigator reaches its goals
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["llm"] == result["llm"] and "seen" in format_table(on_disk)


def test_judge_export_and_import(chaos_run, tmp_path):
    result, _, _, out = chaos_run
    path = export_judge_prompts(out)
    prompts = [json.loads(x) for x in path.read_text().splitlines()]
    assert prompts and {p["norm"] for p in prompts} == {NORM}
    for p in prompts:
        assert p["description"] in p["messages"][1]["content"] and p["belief"] in p["messages"][1]["content"]
        assert "7 = the same rule" in p["messages"][1]["content"]
    scores = tmp_path / "scores.jsonl"
    lines = [
        json.dumps(
            {
                "id": p["id"],
                "score": 7 if "zone Q" in p["belief"] else None,
                "reply": '```json\n{"score": 2, "rationale": "r"}\n```',
            }
        )
        for p in prompts
    ]
    scores.write_text("\n".join(lines + ["not json", json.dumps({"id": "x", "score": 9})]) + "\n")
    acc = import_judge_scores(out, scores)
    assert acc["judged"] == len(prompts) and acc["missing"] == [] and acc["invalid_lines"] == 2
    steps = TranscriptStore(out).read(f"{NORM}/interaction")[1:]
    want = []
    for rec in steps:
        b = (rec["llm"] or {}).get("belief")
        want.append(1 if not b else (7 if "zone Q" in b else 2))
    assert acc["curve"]["t"] == list(range(40)) and acc["curve"]["mean_score"] == want
    assert acc["curve"]["correct_share"] == [float(s >= 6) for s in want]


def test_resume_after_a_kill(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAI(chaos()) as srv:
        with pytest.raises(RuntimeError, match="simulated kill"):
            _run(srv.base_url, out, agent_wrap=lambda a: Killer(a, 30), interaction_steps=10)
        store = TranscriptStore(out)
        finished = store.episodes()
        assert finished[0] == f"{NORM}/interaction" and len(finished) < 7
        parts = list((out / "transcripts" / NORM).glob("*.jsonl.part"))
        assert parts and len(parts) + len(finished) <= 7  # tests in progress, their logs written up to the kill
        for p in parts:
            lines = [json.loads(x) for x in p.read_text().splitlines()]
            assert lines and [x["t"] for x in lines] == sorted({x["t"] for x in lines})
        before = len(srv.log)
        resumed, _ = _run(srv.base_url, out, interaction_steps=10)
        new = srv.log[before:]
        assert new and not any(
            "Your goal in this interactive stage" in e["prompt"] for e in new
        )  # interaction not rerun
        assert len(store.episodes()) == 7 and not list(out.rglob("*.part"))
        before = len(srv.log)
        again, _ = _run(srv.base_url, out, interaction_steps=10)
        assert len(srv.log) == before  # everything finished: no request at all
        assert again["episodes"] == resumed["episodes"] and again["interaction"] == resumed["interaction"]
    with pytest.raises(ValueError, match="another endpoint or sampling.*model: 'fake' -> 'another'"):
        asyncio.run(
            run_protocol_async(
                StatePolicyAgent(oracle_policy),
                [NORM],
                interaction_steps=10,
                out=out,
                settings=dict(SETTINGS, model="another"),
            )
        )


def test_vlm_frames(tmp_path):
    out = tmp_path / "vlm"
    with FakeOpenAI(chaos(transport_errors=False)) as srv:
        result, _ = _run(srv.base_url, out, interaction_steps=4, text_only=False)
        log = [e for e in srv.log if e["prompt"] != PREFLIGHT_PROMPT]
    from PIL import Image

    urls = [
        p["image_url"]["url"]
        for e in log
        for p in e["payload"]["messages"][-1]["content"]
        if p.get("type") == "image_url"
    ]
    assert len(urls) == len(log) > 0
    im = Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
    assert im.format == "PNG" and im.size[0] > 15 * 32 and im.size[1] > 11 * 32
    assert "You are shown an image" in log[0]["payload"]["messages"][0]["content"]
    store = TranscriptStore(out)
    rec = next(r for r in store.read(f"{NORM}/seen_0")[1:] if r["llm"] and r["llm"]["queried"])
    ref = rec["llm"]["messages"][1]["content"][1]["image_url"]["url"]
    frame = store.path(f"{NORM}/seen_0").parent / ref
    assert ref.startswith("seen_0_frames/frame_") and frame.exists()
    assert Image.open(frame).size == im.size
    assert result["llm"]["requests"] == len({e["prompt"] for e in log})  # one request per prompt (retries aside)


def _fake_llm_eval(srv, out, *extra) -> list[str]:
    """`normjax llm-eval` on NORM against a fake server: short timeouts, 20 interaction steps
    (the protocol's 200 add nothing here but wall time)."""
    base = ["llm-eval", "--base-url", srv.base_url, "--model", "fake", "--norms", NORM, "--text-only"]
    limits = ["--timeout", "0.5", "--max-retries", "2", "--concurrency", "8"]
    return [*base, *limits, "--out", str(out), *extra, "--interaction-steps", "20"]


def test_cli_llm_eval(tmp_path, capsys):
    from normjax.cli import build_parser, main

    out = tmp_path / "cli"
    assert (
        build_parser().parse_args(["llm-eval", "--base-url", "u", "--model", "m", "--out", "o"]).interaction_steps
        == 200
    )
    assert (
        main(
            [
                "llm-eval",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--norms",
                "no_such_norm",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "valid names are: forbidden_zone_q" in capsys.readouterr().err and not out.exists()
    assert (
        main(
            ["llm-eval", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "0", "--out", str(out)]
        )
        == 2
    )
    with FakeOpenAI(chaos(transport_errors=False)) as srv:  # the CLI's back-off is seconds long
        argv = _fake_llm_eval(srv, out)
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert "seen     overall" in text and "llm: {" in text
        result = json.loads((out / "results.json").read_text())
        assert result["meta"]["interaction_steps"] == 20 and len(result["episodes"]) == 6
        prompts = [json.loads(x) for x in (out / "judge_prompts.jsonl").read_text().splitlines()]
        scores = tmp_path / "scores.jsonl"
        scores.write_text("".join(json.dumps({"id": p["id"], "score": 5}) + "\n" for p in prompts))
        before = len(srv.log)
        bad = tmp_path / "bad.jsonl"  # a malformed scores file: flagged, exit 1, never a clean curve
        bad.write_text("not json\n")
        assert main(argv + ["--judge-scores", str(bad)]) == 1
        assert json.loads((out / "results.json").read_text())["belief_accuracy"]["complete"] is False
        assert main(argv + ["--judge-scores", str(scores)]) == 0
        assert len(srv.log) == before  # import only: the finished run makes no request
    result = json.loads((out / "results.json").read_text())
    curve = result["belief_accuracy"]["curve"]
    assert len(curve["t"]) == 20 and set(curve["mean_score"]) <= {1.0, 5.0} and curve["mean_score"][-1] == 5.0


# ---------------------------------------------------------------------------
# Distractor habits (docs/world.md §8.5)


@pytest.mark.slow  # an equivalence run of whole programs; the slow tier (CI runs both)
@pytest.mark.parametrize(
    "name, policy, habit", [("oracle", oracle_policy, "same_exit_door"), ("random", random_policy, "move1_wait1")]
)
def test_distractors_reproduce_evaluate(name, policy, habit, tmp_path):
    """With a habit on, wrapped state policies still reproduce `evaluate`, over-imitation included
    (the random newcomer follows move1_wait1 now and then, so the count is exercised)."""
    from normjax.protocol import evaluate

    want = evaluate(policy, SUBSET, distractor=habit, distractor_share=1.0)
    out = tmp_path / "run"
    got = run_protocol(
        StatePolicyAgent(policy), SUBSET, interaction_steps=0, out=out, distractor=habit, distractor_share=1.0
    )
    assert len(got["episodes"]) == len(want["episodes"]) == 30
    for g, w in zip(got["episodes"], want["episodes"]):
        assert "habit_steps" in w and {k: g[k] for k in w} == w  # over_imitation included, exactly
    for cond in ("seen", "unseen"):
        assert got[cond] == want[cond] and "over_imitation" in got[cond]["overall"]
    assert format_table(got) == format_table(want)
    if name == "oracle":
        assert got["seen"]["overall"]["joint"] == got["unseen"]["overall"]["joint"] == 100.0
        assert got["seen"]["overall"]["over_imitation"] == got["unseen"]["overall"]["over_imitation"] == 0.0
    else:
        assert sum(r["habit_steps"] for r in got["episodes"]) > 0
    assert got["meta"]["distractor"] == habit and got["meta"]["distractor_share"] == 1.0
    header = TranscriptStore(out).read(f"{NORM}/seen_0")[0]
    assert header["distractor"] == {"habit": habit, "share": 1.0}
    row = next(r for r in got["episodes"] if r["norm"] == NORM and r["condition"] == "seen" and r["episode"] == 0)
    assert header["result"]["raw"]["habit_steps"] == row["habit_steps"]
    assert habit in {a["habit"] for rec in TranscriptStore(out).read(f"{NORM}/seen_0")[1:] for a in rec["agents"]}
    with pytest.raises(ValueError, match="other settings.*distractor"):  # resume only with the same distractor
        run_protocol(StatePolicyAgent(policy), SUBSET, interaction_steps=0, out=out)
    with pytest.raises(ValueError, match="unknown distractor 'wave'.*same_exit_door, move1_wait1"):
        run_protocol(StatePolicyAgent(policy), SUBSET, interaction_steps=0, distractor="wave", distractor_share=1.0)


def test_distractors_in_the_interaction_phase():
    from normjax.env import phase_params
    from normjax.runtime import batch
    from normjax.runtime.runner import INTERACTION_STEPS, interaction_episodes
    from normjax.world.state import WorldConfig
    from tests.support.world_helpers import RESET

    specs = interaction_episodes([0, 12])
    for habit, share in (("move1_wait1", 1.0), ("none", 0.0)):
        code = C.HABIT_NAMES.index(habit)
        # the runner's own horizon, so the compiled init is the one the runs use
        states, params, _, _ = batch.init_stage(specs, 10, INTERACTION_STEPS, code, share)
        for i, e in enumerate(specs):
            k_reset, _ = jax.random.split(jax.random.PRNGKey(e["seed"]))
            p = phase_params("interaction", 0, e["norm_id"], distractor=habit, distractor_share=share)
            want = RESET(k_reset, p, WorldConfig(capacity=10))
            assert int(params.habit[i]) == code and float(params.habit_share[i]) == share
            for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(jax.tree.map(lambda x: x[i], states))):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        if code:
            assert (np.asarray(states.agents.habit) == code).any()
        else:
            assert (np.asarray(states.agents.habit) == 0).all()


@pytest.mark.slow  # an equivalence run of whole programs; the slow tier (CI runs both)
@pytest.mark.parametrize("distractor", [None, "move1_wait1"])
def test_interaction_transcript_equals_the_exported_episode(tmp_path, distractor):
    """The runner's 200-step interaction episode is `normjax export`'s (the same reset, key splits and
    community), step by step (tests/runtime/test_slow.py: the same against a direct scan of `env_step`)."""
    from normjax.interop.export import rollout, trajectory_records
    from normjax.protocol.seeds import base_seed

    norm, steps = 12, 200  # clockwise_circulation: the norm-blind background slot is sanctioned often
    share = 1.0 if distractor else 0.0
    run_protocol(
        StatePolicyAgent(oracle_policy),
        [norm],
        interaction_steps=steps,
        out=tmp_path / "run",
        settings={},
        distractor=distractor,
        distractor_share=share,
    )
    records = TranscriptStore(tmp_path / "run").read("clockwise_circulation/interaction")
    # the exporter's 200-step program, shared with tests/world/test_distractors.py
    states, infos, params = rollout(
        jax.random.PRNGKey(base_seed(norm)),
        0,
        norm,
        "interaction",
        oracle_policy,
        distractor=distractor,
        distractor_share=share,
    )
    header = {"seed": base_seed(norm), "phase": "interaction"}
    if distractor:
        header["distractor"] = {"habit": distractor, "share": share}
    want = trajectory_records(states, infos, params, header)
    assert len(records) == len(want) == steps + 1
    for got, ref in zip(records[1:], want[1:]):
        assert got["t"] == ref["t"] and got["agents"] == ref["agents"]
    assert sum(a["sanctioned"] for r in want[1:] for a in r["agents"]) > 0
    if distractor:
        assert records[0]["distractor"] == header["distractor"]
        assert distractor in {a["habit"] for r in records[1:] for a in r["agents"]}


def test_cli_llm_eval_distractor_flags(tmp_path, capsys):
    from normjax.cli import build_parser, main

    out = tmp_path / "cli"
    base = ["llm-eval", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--norms", NORM, "--out", str(out)]
    args = build_parser().parse_args(base + ["--distractor", "same_exit_door", "--distractor-share", "0.25"])
    assert (args.distractor, args.distractor_share) == ("same_exit_door", 0.25)
    with pytest.raises(SystemExit):
        main(base + ["--distractor", "wave"])
    err = capsys.readouterr().err
    assert "invalid choice: 'wave'" in err and "same_exit_door" in err and not out.exists()
    assert main(base + ["--distractor", "move1_wait1", "--distractor-share", "1.5"]) == 2
    assert "distractor_share must be in [0, 1], got 1.5" in capsys.readouterr().err and not out.exists()
    assert main(base + ["--distractor-share", "0.5"]) == 2
    assert "needs --distractor; allowed: same_exit_door, move1_wait1" in capsys.readouterr().err and not out.exists()


@pytest.mark.slow  # a whole llm-eval run through a fake server; the slow tier (CI runs both)
def test_cli_llm_eval_distractor_flags_reach_both_stages(tmp_path, capsys):
    from normjax.cli import main

    out = tmp_path / "cli"
    with FakeOpenAI(chaos(transport_errors=False)) as srv:  # the flags reach both stages and the results
        argv = _fake_llm_eval(srv, out, "--distractor", "move1_wait1")
        assert main(argv) == 0
        assert "seen     overall" in capsys.readouterr().out
    result = json.loads((out / "results.json").read_text())
    assert (result["meta"]["distractor"], result["meta"]["distractor_share"]) == ("move1_wait1", 0.5)
    assert all("habit_steps" in r and 0.0 <= r["over_imitation"] <= 1.0 for r in result["episodes"])
    assert "over_imitation" in result["seen"]["overall"] and "over_imitation" in result["unseen"]["overall"]
    assert json.loads((out / "run.json").read_text())["distractor"] == "move1_wait1"
    head = TranscriptStore(out).read(f"{NORM}/interaction")[0]
    assert head["distractor"] == {"habit": "move1_wait1", "share": 0.5}


# ---------------------------------------------------------------------------
# Independent episodes: each steps when its own reply is in


class _OutOfOrder:
    """A state policy as an async agent whose replies arrive out of order: each turn yields to the
    event loop a number of times set by its episode and step, so episodes step in varied groups."""

    wants_frames = wants_intents = False

    def __init__(self, policy):
        self.policy, self.ctx, self.actions = policy, None, None

    async def act(self, turns, ctx):  # one turn, or (lockstep) all turns of a step
        for _ in range(sum(7 * turn.index + 3 * turn.t for turn in turns) % 5):
            await asyncio.sleep(0)
        if ctx is not self.ctx:  # one policy call per group of turns asked together
            self.ctx, self.actions = ctx, np.asarray(policy_actions(self.policy, ctx.keys, ctx.states, ctx.params))
        return [Decision(action=int(self.actions[turn.index])) for turn in turns]


def test_out_of_order_replies_reproduce_the_protocol_without_retracing():
    eps, raw = reference("oracle", SUBSET)
    want = summarize(eps, raw)
    lock = run_protocol(_OutOfOrder(oracle_policy), SUBSET, interaction_steps=0, lockstep=True)
    compiled = batch.advance._cache_size()
    got = run_protocol(_OutOfOrder(oracle_policy), SUBSET, interaction_steps=0)
    assert batch.advance._cache_size() == compiled  # one program of a fixed batch shape: no retrace
    steps = [got["meta"]["timing"]["test"]["steps"], lock["meta"]["timing"]["test"]["steps"]]
    assert steps[0] > steps[1]  # more device steps than the longest episode: ragged, not lockstep
    for g, lk, w in zip(got["episodes"], lock["episodes"], want["episodes"]):
        assert {k: g[k] for k in w} == w and g == lk  # every number, exactly


def _jittered(script):
    """`script` with a reply delay of 0-40 ms set by the prompt, so replies arrive out of order."""
    return lambda payload, attempt: dataclasses.replace(
        script(payload, attempt), delay=zlib.crc32(prompt_text(payload).encode()) % 5 * 0.01
    )


def test_llm_run_equals_the_lockstep_run(tmp_path):
    """With the same replies (a scripted server, unusable replies chosen by the prompt), independent
    episodes give the lockstep run's transcripts and results."""
    runs = {}
    for mode in ("lockstep", "independent"):
        with FakeOpenAI(_jittered(chaos(transport_errors=False))) as srv:  # a fresh count of attempts
            runs[mode] = _run(
                srv.base_url,
                tmp_path / mode,
                interaction_steps=12,
                timeout=5.0,
                run_kwargs=dict(lockstep=mode == "lockstep"),
            )[0]
    a, b = runs["lockstep"], runs["independent"]
    assert b["meta"]["timing"]["test"]["steps"] > a["meta"]["timing"]["test"]["steps"]
    assert a["episodes"] == b["episodes"] and a["interaction"] == b["interaction"] and a["llm"] == b["llm"]
    assert b["llm"]["errors"] > 0  # the scripted unusable replies occurred
    sa, sb = TranscriptStore(tmp_path / "lockstep"), TranscriptStore(tmp_path / "independent")
    assert sa.episodes() == sb.episodes()
    for name in sa.episodes():
        ra, rb = sa.read(name), sb.read(name)
        for x in ra[1:] + rb[1:]:
            if x["llm"]:
                x["llm"].pop("latency_s", None)
        assert ra[1:] == rb[1:]


def test_faults_change_only_the_decisions_that_errored(tmp_path):
    """benchmarks/llm_faults.py in small: with the issue's fault mix injected per attempt, the run
    equals a replay of the scripted model in which only its errored decisions error."""
    from normjax.testing.fake_openai import navigator, with_faults
    from normjax.testing.fault_replay import Replay, errored_decisions, transcript_differences

    out = tmp_path / "faulty"
    with FakeOpenAI(with_faults(navigator, past_timeout_s=0.4, retry_after="0")) as srv:
        faulty, stats = _run(srv.base_url, out, interaction_steps=8, timeout=0.25, max_retries=3)
    errored = errored_decisions(out)
    assert stats["retries"] > 0 and len(errored) == faulty["llm"]["errors"] > 0
    replay = run_protocol(Replay(errored), [NORM], interaction_steps=8, out=tmp_path / "replay", settings=SETTINGS)
    assert transcript_differences(out, tmp_path / "replay") == []
    drop = ("requests", "retries", "tokens_in", "tokens_out")
    for a, b in zip(faulty["episodes"] + faulty["interaction"], replay["episodes"] + replay["interaction"]):
        assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}
