"""`normjax.finetune` refuses bad arguments before anything is traced, naming the allowed values."""

from __future__ import annotations

import pytest

from normjax.finetune.dataset import build, split_norms
from normjax.finetune.harvest import harvest
from normjax.norms import FAMILIES, NORMS


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(task="judge"), r"unknown task 'judge'; valid: compliant_action"),
        (dict(family="cafe"), r"unknown family 'cafe'; valid: access"),
        (dict(split="test"), r"unknown split 'test'; valid: train, heldout"),
        (dict(n=0), r"examples \(--examples\) must be >= 1, got 0"),
        (dict(policy="random"), r"unknown harvest policy 'random'; valid: oracle, blind, mixture, epsilon_blind"),
    ],
)
def test_build_refuses(kwargs, match):
    args = dict(task="norm_judgment", family="access", split="train", n=4) | kwargs
    with pytest.raises(ValueError, match=match):
        build(**args)


def test_harvest_refuses_bad_norms_and_shapes():
    with pytest.raises(ValueError, match=r"0\.\.49, got \[50\]"):
        harvest([50], [0])
    with pytest.raises(ValueError, match="equal-length"):
        harvest([0, 1], [0])
    with pytest.raises(ValueError, match="needs the recorded actions"):
        harvest([0], [0], "replay", steps=4)
    with pytest.raises(ValueError, match=r"replay actions must be ints in 0..4 of shape \(1, 4\)"):
        harvest([0], [0], "replay", steps=4, actions=[[0, 1, 9, 0]])


def test_splits_are_table_a4():
    """33 training and 17 held-out norms: 11/5 coordination, 8/4 access, 7/4 procedure, 7/4 allocation."""
    train = {f: split_norms(f, "train") for f in FAMILIES}
    test = {f: split_norms(f, "heldout") for f in FAMILIES}
    sizes = {f: (len(train[f]), len(test[f])) for f in FAMILIES}
    assert sizes == dict(coordination=(11, 5), access=(8, 4), procedure=(7, 4), allocation=(7, 4))
    for f in FAMILIES:
        assert not set(train[f]) & set(test[f])
        assert all(NORMS[i].held_out and NORMS[i].family == f for i in test[f])


def test_states_from_refuses_before_tracing(tmp_path):
    with pytest.raises(ValueError, match="serve compliant_action and norm_selection, not 'norm_judgment'"):
        build("norm_judgment", "access", "train", 4, states_from=tmp_path)
    with pytest.raises(ValueError, match="is not an llm-eval run directory"):
        build("compliant_action", "access", "train", 4, states_from=tmp_path)
    (tmp_path / "run.json").write_text('{"interaction_steps": 20, "distractor": "wave"}')
    with pytest.raises(ValueError, match="distractor 'wave'"):
        build("compliant_action", "access", "train", 4, states_from=tmp_path)
    (tmp_path / "run.json").write_text('{"interaction_steps": 20, "seed": 0, "capacity": 10}')
    with pytest.raises(ValueError, match="no complete interaction transcript of these norms"):
        build("norm_selection", "access", "train", 4, states_from=tmp_path)


def test_cli_flags():
    from normjax.cli import build_parser

    base = [
        "finetune-data",
        "--task",
        "compliant_action",
        "--family",
        "access",
        "--split",
        "train",
        "--n",
        "2",
        "--out",
        "o",
    ]
    a = build_parser().parse_args(base)
    assert (a.text_only, a.states_from, a.no_progress) == (False, None, False)  # frames on by default
    a = build_parser().parse_args(base + ["--text-only", "--states-from", "runs/x", "--no-progress"])
    assert (a.text_only, a.states_from, a.no_progress) == (True, "runs/x", True)


def test_request_messages_send_frames_as_llm_eval_does(tmp_path):
    """A frames record goes out as llm-eval's VLM request: system text, user text then the PNG."""
    import base64

    from normjax.finetune.evaluate import request_messages
    from normjax.finetune.text import vlm

    png = b"\x89PNG\r\n\x1a\nfake"
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(png)
    rec = dict(
        norm="n",
        t=3,
        images=["images/a.png"],
        prompt=vlm([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], True),
    )
    assert rec["prompt"][1]["content"] == [{"type": "text", "text": "U"}, {"type": "image"}]
    msgs = request_messages(rec, tmp_path)
    assert msgs[0] == {"role": "system", "content": "S"}
    assert msgs[1]["content"][0] == {"type": "text", "text": "U"}
    assert msgs[1]["content"][1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()
    text = dict(rec, images=[], prompt=vlm([{"role": "user", "content": "U"}], False))
    assert request_messages(text, tmp_path) == [{"role": "user", "content": "U"}]
    with pytest.raises(ValueError, match="missing"):
        request_messages(dict(rec, images=["images/b.png"]), tmp_path)


def test_several_files_in_one_call_are_planned_and_refused_by_name():
    from normjax.cli import build_parser
    from normjax.finetune.many import build_many, plan

    out = ["--examples", "2", "--out", "o"]
    a = build_parser().parse_args(["finetune-data", "--task", "all", "--family", "all", "--split", "all", *out])
    files = plan(a.task, a.family, a.split)
    assert len(files) == len(set(files)) == 4 * 4 * 2  # tasks x families x splits
    assert files[:5] == [
        ("compliant_action", "access", "train"),
        ("norm_judgment", "access", "train"),
        ("norm_selection", "access", "train"),
        ("action_judgment", "access", "train"),
        ("compliant_action", "access", "heldout"),
    ]
    a = build_parser().parse_args(
        ["finetune-data", "--task", "norm_selection", "norm_judgment", "norm_selection", "--family", "procedure"]
        + ["--split", "heldout", *out]
    )
    assert plan(a.task, a.family, a.split) == [
        ("norm_selection", "procedure", "heldout"),
        ("norm_judgment", "procedure", "heldout"),
    ]
    with pytest.raises(ValueError, match=r"unknown family 'cafe'; valid: access, .*allocation, all"):
        plan(["norm_judgment"], ["access", "cafe"], ["train"])
    with pytest.raises(ValueError, match=r"serve compliant_action and norm_selection, not \['norm_judgment'\]"):
        build_many(["norm_selection", "norm_judgment"], "access", "train", 2, "o", states_from="runs/x")
    with pytest.raises(ValueError, match=r"must be >= 1, got 0"):
        build_many("all", "all", "all", 0, "o")
