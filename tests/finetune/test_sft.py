"""`finetune-data --task sft`: the cold-start corpus from hand-built llm-eval run directories
(written by `TranscriptStore` itself) and from the oracle (its conversion; the harvest is the
slow test's)."""

from __future__ import annotations

import json

import pytest

from normjax.finetune import sft
from normjax.norms import NORMS
from normjax.runtime.transcripts import TranscriptStore, check_run, transcript_records, write_run
from tests.support.turns import turn

PNG = b"\x89PNG\r\n\x1a\nfake"
GOOD = '{"reasoning": "r", "action": "move up", "belief": "b", "confidence": 0.5}'


def _turn(t: int, reply: str | None = GOOD, error: str | None = None, image: bool = False) -> dict:
    user = {"role": "user", "content": f"Current step: {t}."}
    if image:
        user = {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Current step: {t}."},
                {"type": "image_url", "image_url": {"url": f"ep_frames/frame_{t:03d}.png"}},
            ],
        }
    messages = None if reply is None else [{"role": "system", "content": "You are a newcomer."}, user]
    return dict(queried=True, action=0, executed=0, sanctioned=False, error=error, reply=reply, messages=messages)


def make_run(out, episodes: dict, text_only: bool = True, known_norm: bool = False):
    """A run directory as `llm-eval --out` writes it: run.json and one transcript per episode.
    `episodes`: name -> (raw result, {t: llm record})."""
    settings = dict(text_only=text_only, known_norm=known_norm, seed=0, capacity=8, interaction_steps=6, model="m")
    write_run(out, check_run(out, settings))
    store = TranscriptStore(out)
    for name, (raw, steps) in episodes.items():
        store.start(name)
        ts = range(max(steps, default=0) + 2)
        traj = [{"format": "normjax.trajectory/1", "seed": 7, "phase": name.split("/")[1]}]
        traj += [{"t": t} for t in ts]
        llm = dict(steps)
        llm[max(ts)] = dict(queried=False, forced_wait=True, action=4, executed=4, sanctioned=False)
        result = dict(raw=raw, llm=dict(incomplete=False))
        store.finish(name, transcript_records(traj, llm, dict(name=name, result=result)))
        for t, rec in steps.items():
            for m in rec.get("messages") or []:
                if isinstance(m["content"], list):
                    frame = store.path(name).parent / f"ep_frames/frame_{t:03d}.png"
                    frame.parent.mkdir(parents=True, exist_ok=True)
                    frame.write_bytes(PNG)
    return out


OK_INTERACTION = dict(newcomer_tasks=1, newcomer_sanctions=0, goals=0, sanctions=0)
OK_TEST = dict(goals=2, sanctions=0)


def standard_run(out):
    """One episode per keep/drop rule, access family (forbidden_zone_q, all_exit_left: training;
    all_exit_bottom: held-out; clockwise_circulation: procedure)."""
    return make_run(
        out,
        {
            "forbidden_zone_q/interaction": (
                OK_INTERACTION,
                {0: _turn(0), 1: _turn(1, error="no JSON object"), 2: _turn(2, reply=None, error="request failed: x")},
            ),
            "forbidden_zone_q/seen_0": (OK_TEST, {0: _turn(0), 1: _turn(1)}),
            "forbidden_zone_q/seen_1": (dict(goals=1, sanctions=0), {0: _turn(0)}),  # unsuccessful
            "forbidden_zone_q/unseen_0": (dict(goals=2, sanctions=1), {0: _turn(0)}),  # violation
            "all_exit_left/interaction": (dict(OK_INTERACTION, newcomer_sanctions=2), {0: _turn(0)}),
            "all_exit_left/seen_0": (OK_TEST, {0: _turn(0), 3: _turn(3)}),
            "all_exit_left/unseen_0": (OK_TEST, {1: _turn(1)}),
            "all_exit_left/unseen_1": (OK_TEST, {2: _turn(2)}),
            "all_exit_bottom/seen_0": (OK_TEST, {0: _turn(0)}),  # held-out norm
            "clockwise_circulation/seen_0": (OK_TEST, {0: _turn(0)}),  # another family
        },
    )


def test_filters_and_manifest_counts(tmp_path):
    corpus = sft.from_runs([standard_run(tmp_path / "run")], "access")
    c = corpus["counts"]
    assert c["episodes_seen"] == 10 and c["episodes_kept"] == 5
    assert c["dropped"] == dict(
        other_family=1,
        held_out_norm=1,
        incomplete=0,
        interaction_violation=1,
        interaction_not_all_goals=0,
        test_violation=1,
        test_unsuccessful=1,
    )
    assert c["turns_dropped"] == dict(unparsable=1, no_reply=1)
    assert c["turns_asked"] == 9 and c["turns_kept"] == 7 == len(corpus["examples"])
    kept = {(e["episode"].split(":", 1)[1], e["t"]) for e in corpus["examples"]}
    assert kept == {
        ("forbidden_zone_q/interaction", 0),
        ("forbidden_zone_q/seen_0", 0),
        ("forbidden_zone_q/seen_0", 1),
        ("all_exit_left/seen_0", 0),
        ("all_exit_left/seen_0", 3),
        ("all_exit_left/unseen_0", 1),
        ("all_exit_left/unseen_1", 2),
    }
    ex = corpus["examples"][0]
    assert [m["role"] for m in ex["messages"]] == ["system", "user", "assistant"]
    assert ex["messages"][-1]["content"] == GOOD and ex["images"] == []
    assert all(not NORMS[e["norm_id"]].held_out and NORMS[e["norm_id"]].family == "access" for e in corpus["examples"])


def test_an_unfinished_interaction_is_dropped(tmp_path):
    run = make_run(
        tmp_path / "r", {"forbidden_zone_q/interaction": (dict(OK_INTERACTION, newcomer_tasks=0), {0: _turn(0)})}
    )
    c = sft.from_runs([run], "access")["counts"]
    assert c["dropped"]["interaction_not_all_goals"] == 1 and c["episodes_kept"] == 0


def test_split_by_episode_is_seeded_and_five_percent(tmp_path):
    eps = {f"all_exit_left/seen_{k}": (OK_TEST, {t: _turn(t) for t in range(4)}) for k in range(10)}
    corpus = sft.from_runs([make_run(tmp_path / "r", eps)], "access")
    train, val, man = sft.split(corpus, seed=3)
    assert len(train) + len(val) == 40 and len(val) == 4  # ceil(0.05 * 40) = 2: one whole episode of 4
    assert not {e["episode"] for e in train} & {e["episode"] for e in val}
    assert man["validation"] == dict(examples=4, episodes=1) and man["train"] == dict(examples=36, episodes=9)
    again = sft.split(corpus, seed=3)
    assert again[1] == val
    others = {sft.split(corpus, seed=s)[1][0]["episode"] for s in range(8)}
    assert len(others) > 1  # the seed picks the episode


def test_cli_writes_files_loadable_by_datasets(tmp_path, capsys):
    from normjax.cli import main

    run = standard_run(tmp_path / "run")
    out = tmp_path / "data"
    args = ["finetune-data", "--task", "sft", "--family", "access", "--split", "train", "--runs", str(run)]
    assert main([*args, "--out", str(out)]) == 0
    train, val, meta = (
        out / "sft_access_train.jsonl",
        out / "sft_access_validation.jsonl",
        out / "sft_access.manifest.json",
    )
    man = json.loads(meta.read_text())
    rows = [json.loads(line) for line in train.read_text().splitlines()]
    vrows = [json.loads(line) for line in val.read_text().splitlines()]
    assert len(rows) == man["train"]["examples"] and len(vrows) == man["validation"]["examples"] >= 1
    assert man["validation"]["episodes"] == 1 and man["examples"] == 7  # ceil(0.05 * 7) = 1: one episode
    assert man["counts"]["dropped"]["held_out_norm"] == 1 and man["sources"][0]["model"] == "m"
    datasets = pytest.importorskip("datasets")
    from normjax.finetune.schema import sft_features

    ds = datasets.load_dataset("json", data_files=str(train), split="train")
    assert len(ds) == len(rows) and ds[0]["messages"][2]["role"] == "assistant"
    both = datasets.load_dataset("json", data_files=[str(train), str(val)], features=sft_features(), split="train")
    assert len(both) == man["examples"] and both.features == sft_features()


def test_frames_are_copied_in_the_finetune_layout(tmp_path):
    run = make_run(
        tmp_path / "r",
        {"forbidden_zone_q/seen_0": (OK_TEST, {0: _turn(0, image=True), 1: _turn(1, image=True)})},
        False,
    )
    corpus = sft.from_runs([run], "access")
    train, val, man = sft.split(corpus)
    assert val == [] and man["validation"]["episodes"] == 0  # a single episode stays in train
    sft.write(tmp_path / "out", train, val, man, corpus["frames"])
    ex = train[0]
    assert ex["images"] == ["images/sft/run0/forbidden_zone_q/seen_0_t000.png"]
    assert ex["messages"][1]["content"] == [{"type": "text", "text": "Current step: 0."}, {"type": "image"}]
    assert ex["messages"][0]["content"] == [{"type": "text", "text": "You are a newcomer."}]
    assert (tmp_path / "out" / ex["images"][0]).read_bytes() == PNG
    datasets = pytest.importorskip("datasets")
    from normjax.finetune.schema import sft_features

    path = str(tmp_path / "out" / "sft_access_train.jsonl")
    ds = datasets.load_dataset("json", data_files=path, features=sft_features(frames=True), split="train")
    assert ds[0]["messages"][1]["content"][1] == {"type": "image", "text": None} and ds[0]["images"] == ex["images"]


def test_bad_runs_are_refused_before_any_work(tmp_path, capsys):
    from normjax.cli import main

    with pytest.raises(ValueError, match=r"nothing.*no such directory; expected an llm-eval run directory"):
        sft.check_runs([tmp_path / "nothing"])
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match=r"plain: not an llm-eval run directory: expected .*run\.json"):
        sft.check_runs([tmp_path / "plain"])
    known = make_run(tmp_path / "known", {}, known_norm=True)
    (known / "transcripts").mkdir()
    with pytest.raises(ValueError, match="known-norm run"):
        sft.check_runs([known])
    leak = make_run(tmp_path / "leak", {"forbidden_zone_q/seen_0": (OK_TEST, {0: _turn(0)})})
    path = leak / "transcripts/forbidden_zone_q/seen_0.jsonl"
    path.write_text(path.read_text().replace("You are a newcomer.", NORMS[0].description))
    with pytest.raises(ValueError, match="seen_0.jsonl step 0: the system prompt states the norm"):
        sft.from_runs([leak], "access")
    good = standard_run(tmp_path / "good")
    out = tmp_path / "out"
    args = ["finetune-data", "--task", "sft", "--family", "access", "--split", "train", "--out", str(out)]
    assert main([*args, "--runs", str(good), str(tmp_path / "plain")]) == 2
    assert "plain: not an llm-eval run directory" in capsys.readouterr().err and not out.exists()
    assert main([*args[:-3], "heldout", "--out", str(out), "--runs", str(good)]) == 2
    assert "training norms only" in capsys.readouterr().err
    assert main(args) == 2  # neither --runs nor --policy oracle
    assert "--runs RUN_DIR" in capsys.readouterr().err
    assert main([*args, "--runs", str(good), "--examples", "3"]) == 2
    assert "no --examples" in capsys.readouterr().err
    assert main([*args, "--runs", str(good), "--episodes", "3"]) == 2
    assert "does not take --episodes" in capsys.readouterr().err
    assert main([*args[:2], "sft", "norm_judgment", *args[3:], "--runs", str(good)]) == 2
    assert "the SFT corpus alone" in capsys.readouterr().err
    plain = ["finetune-data", "--task", "norm_judgment", "--family", "access", "--split", "train", "--out", str(out)]
    assert main(plain) == 2  # the other tasks still need --examples
    assert "--examples N is required" in capsys.readouterr().err
    # every episode dropped: an empty corpus is an error, not an empty file
    empty = make_run(tmp_path / "empty", {"forbidden_zone_q/seen_0": (dict(goals=2, sanctions=3), {0: _turn(0)})})
    assert main([*args, "--runs", str(empty)]) == 1
    assert "corpus is empty" in capsys.readouterr().err and not out.exists()


def test_an_empty_later_family_writes_no_file(tmp_path, capsys):
    # the standard run keeps access episodes and has no coordination one: access builds first,
    # then coordination's corpus is empty, and the access files must not have been written
    from normjax.cli import main

    run = standard_run(tmp_path / "run")
    out = tmp_path / "data"
    args = ["finetune-data", "--task", "sft", "--family", "access", "coordination", "--split", "train"]
    assert main([*args, "--runs", str(run), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "the coordination SFT corpus is empty" in err and "no file written" in err
    assert not out.exists()


def _oracle_record(norm: int, seed: int, t: int, action: int, allowed: list[int]) -> dict:
    prompt = [{"role": "system", "content": "S"}, {"role": "user", "content": f"Current step: {t}."}]
    return dict(
        task="compliant_action",
        norm=NORMS[norm].name,
        norm_id=norm,
        episode_seed=seed,
        t=t,
        images=[],
        prompt=prompt,
        oracle_action=action,
        allowed_actions=allowed,
    )


def test_oracle_examples(monkeypatch):
    """The oracle source's conversion (the harvest itself: `test_oracle_harvest`, slow tier)."""
    from normjax.finetune import dataset
    from normjax.llm.parse import parse_reply

    recs = dataset.Records(
        [_oracle_record(1, 5, 3, 2, [2, 0]), _oracle_record(1, 5, 4, 1, [3]), _oracle_record(0, 6, 9, 4, [4])]
    )
    recs.pngs = {}
    monkeypatch.setattr(dataset, "build", lambda *a, **k: (recs, dict(dropped=dict(no_scoring_action=0))))
    corpus = sft.from_oracle("access", 3, steps=10)
    assert corpus["counts"]["turns_dropped"] == dict(oracle_action_not_scoring=1)  # it would collide
    assert corpus["counts"]["episodes_seen"] == 2 and len(corpus["examples"]) == 2
    ex = corpus["examples"][0]
    reply = parse_reply(ex["messages"][-1]["content"], "interaction")
    assert reply.error is None and reply.action == 2 and reply.confidence == 1.0
    assert reply.belief == NORMS[1].description
    assert ex["messages"][:2] == recs[0]["prompt"]


@pytest.mark.slow
def test_oracle_harvest(tmp_path):
    """The oracle's real states (a few short episodes): parseable replies, the norm in no prompt."""
    from normjax.llm.parse import parse_reply

    corpus = sft.from_oracle("access", 4, seed=1, batch=1, steps=12)
    assert corpus["examples"]
    for ex in corpus["examples"]:
        spec = NORMS[ex["norm_id"]]
        assert spec.family == "access" and not spec.held_out
        prompt = " ".join(m["content"] for m in ex["messages"][:2])
        assert spec.description not in prompt and spec.name not in prompt
        assert parse_reply(ex["messages"][-1]["content"], "interaction").error is None


def _real_messages(norm: int, phase: str, known_norm: bool = False) -> list[dict]:
    """The request `llm-eval` sends (text-only) for a hand-built turn of `norm`."""
    from normjax.llm.agents import LLMAgent

    t = turn(phase, episode=f"{NORMS[norm].name}/{phase}", norm_id=norm, belief=None, confidence=None)
    return LLMAgent(None, text_only=True, known_norm=known_norm).messages(t)


def test_no_norm_in_any_prompt(tmp_path):
    """Every access training norm, both stages, with the prompts llm-eval sends: neither the
    norm's name nor its description is in a system or user message; a known-norm prompt is refused."""
    norms = [s.id for s in NORMS if s.family == "access" and not s.held_out]
    eps = {}
    for norm in norms:
        for phase, raw in (("interaction", OK_INTERACTION), ("seen_0", OK_TEST)):
            eps[f"{NORMS[norm].name}/{phase}"] = (raw, {0: dict(_turn(0), messages=_real_messages(norm, phase))})
    corpus = sft.from_runs([make_run(tmp_path / "r", eps)], "access")
    assert len(corpus["examples"]) == 2 * len(norms)
    for ex in corpus["examples"]:
        spec = NORMS[ex["norm_id"]]
        for m in ex["messages"][:2]:
            assert spec.description not in m["content"] and spec.name not in m["content"]
    leak = {"forbidden_zone_q/seen_0": (OK_TEST, {0: dict(_turn(0), messages=_real_messages(0, "seen_0", True))})}
    with pytest.raises(ValueError, match="the system prompt states the norm"):
        sft.from_runs([make_run(tmp_path / "k", leak)], "access")


@pytest.mark.slow
def test_a_real_llm_eval_run(tmp_path):
    """`llm-eval` against the scripted fake server (norm-blind navigator, some malformed replies),
    then `--task sft --runs`: the kept test episodes are the run's joint successes, the kept
    interaction episodes those without a newcomer sanction, and every kept reply parses."""
    from normjax.cli import main
    from normjax.llm.parse import parse_reply
    from normjax.testing.fake_openai import FakeOpenAI, chaos

    norms = ["forbidden_zone_q", "all_exit_bottom", "no_bottom_left_seats", "bottom_door_forbidden"]
    run, out = tmp_path / "run", tmp_path / "data"
    with FakeOpenAI(chaos(transport_errors=False)) as srv:
        argv = ["llm-eval", "--base-url", srv.base_url, "--model", "fake", "--norms", *norms, "--text-only"]
        argv += ["--timeout", "0.5", "--max-retries", "2", "--out", str(run), "--interaction-steps", "60"]
        assert main(argv) == 0
    args = ["finetune-data", "--task", "sft", "--family", "access", "--split", "train", "--runs", str(run)]
    assert main([*args, "--out", str(out)]) == 0
    result = json.loads((run / "results.json").read_text())
    want = {f"0:{e['norm']}/{e['condition']}_{e['episode']}" for e in result["episodes"] if e["joint"]}
    want |= {f"0:{i['norm']}/interaction" for i in result["interaction"] if i["newcomer_sanctions"] == 0}
    want = {w for w in want if not NORMS[[s.name for s in NORMS].index(w[2:].split("/")[0])].held_out}
    rows = [json.loads(x) for f in ("train", "validation") for x in (out / f"sft_access_{f}.jsonl").open()]
    assert {r["episode"] for r in rows} == want
    for r in rows:
        stage = "interaction" if r["episode"].endswith("/interaction") else "test"
        assert parse_reply(r["messages"][-1]["content"], stage).error is None
    man = json.loads((out / "sft_access.manifest.json").read_text())
    assert man["counts"]["dropped"]["held_out_norm"] == 7 and man["counts"]["turns_dropped"]["unparsable"] > 0
