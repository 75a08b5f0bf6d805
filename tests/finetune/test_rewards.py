"""The fine-tuning verifiers on hand-built replies (no JAX, default tier)."""

from __future__ import annotations

import json

import pytest

from normjax import cli_names
from normjax.finetune import rewards as R

# A Compliant Action record: the oracle moves right (3); up (0) is an equally fast
# alternative in its tie set; down violates, left collides, wait is slower.
ACTION = dict(
    task="compliant_action",
    allowed_actions=[3, 0],
    oracle_action=3,
    action_reasons=["compliant", "violating", "colliding", "compliant", "suboptimal"],
    violates=None,
    answer=None,
    choices=None,
)
JUDGE_YES = dict(task="norm_judgment", violates=True, allowed_actions=None, answer=None, choices=None)
JUDGE_NO = dict(JUDGE_YES, violates=False)
SELECT = dict(task="norm_selection", answer="C", choices=["a", "b", "c", "d"], violates=None, allowed_actions=None)


def reply(action, belief="agents avoid zone Q", confidence=0.6):
    obj = {"reasoning": "r", "action": action, "confidence": confidence}
    if belief is not None:
        obj["belief"] = belief
    return json.dumps(obj)


@pytest.mark.parametrize(
    "text,expected",
    [
        (reply("move right"), 1.1),  # the oracle's action, with a belief
        (reply("move up"), 1.1),  # an equally fast alternative of its tie set
        (reply("wait"), 0.1),  # suboptimal
        (reply("move left"), 0.1),  # colliding
        (reply("move down"), 0.1),  # violating
        (reply("move right", belief=None), 1.0),  # no belief: no format bonus
        (reply("move right", belief="  "), 1.0),  # an empty belief is no belief
        (reply("north"), -0.1),  # unparsable action
        ("I would go right.", -0.1),  # no JSON object
        ("", -0.1),
        (reply("move right", confidence=7), -0.1),  # confidence off the scale: unusable (llm-eval's parser)
        ("<think>right is best</think>" + reply("right"), 1.1),
    ],
)
def test_compliant_action(text, expected):
    assert R.reward(text, ACTION) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text,record,expected",
    [
        ('{"reasoning": "r", "violates": true}', JUDGE_YES, 1.1),
        ('{"reasoning": "r", "violates": false}', JUDGE_YES, 0.1),
        ('{"reasoning": "r", "violates": false}', JUDGE_NO, 1.1),
        ('```json\n{"Violates": "yes"}\n```', JUDGE_YES, 1.1),
        ('{"reasoning": "r", "violates": "maybe"}', JUDGE_YES, 0.0),
        ('{"reasoning": "r"}', JUDGE_YES, 0.0),
        ("it violates the norm", JUDGE_YES, 0.0),
    ],
)
def test_norm_judgment(text, record, expected):
    assert R.reward(text, record) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"reasoning": "r", "answer": "C"}', 1.1),
        ('{"reasoning": "r", "answer": "c."}', 1.1),
        ('{"reasoning": "r", "answer": "(C)"}', 1.1),
        ('{"reasoning": "r", "answer": "B"}', 0.1),
        ('{"reasoning": "r", "answer": "E"}', 0.0),  # not a listed letter
        ('{"reasoning": "r", "answer": "CD"}', 0.0),
        ('{"reasoning": "r", "answer": 3}', 0.0),
        ("C", 0.0),
    ],
)
def test_norm_selection(text, expected):
    assert R.reward(text, SELECT) == pytest.approx(expected)


def test_reward_funcs_takes_the_trainers_batch_convention():
    """Keyword columns, chat-format completions, extra keywords ignored, one float each."""
    records = [ACTION, JUDGE_YES, SELECT]
    completions = [
        [{"role": "assistant", "content": reply("move up")}],
        [{"role": "assistant", "content": '{"violates": false}'}],
        '{"answer": "C"}',
    ]
    columns = {k: [r.get(k) for r in records] for k in ("task", "allowed_actions", "violates", "answer", "choices")}
    out = R.reward_funcs(prompts=["p"] * 3, completions=completions, trainer_state=object(), **columns)
    assert out == pytest.approx([1.1, 0.1, 1.1])


def test_reward_funcs_needs_the_task_column():
    with pytest.raises(ValueError, match="'task' column"):
        R.reward_funcs(prompts=["p"], completions=["x"], answer=["A"])


def test_unknown_task_is_named():
    with pytest.raises(ValueError, match="'nope'.*compliant_action"):
        R.reward("x", {"task": "nope"})


def test_accuracy_and_balanced_accuracy():
    recs = [JUDGE_YES, JUDGE_YES, JUDGE_NO, JUDGE_NO, JUDGE_NO, JUDGE_NO]
    said = ["true", "false", "false", "false", "false", "false"]
    out = R.accuracy([f'{{"violates": {s}}}' for s in said], recs)
    assert out["accuracy"] == pytest.approx(5 / 6)
    assert out["balanced_accuracy"] == pytest.approx((0.5 + 1.0) / 2)


def test_cli_names_match_the_modules():
    from normjax.finetune.harvest import HARVEST_POLICIES
    from normjax.norms import FAMILIES

    assert cli_names.FINETUNE_TASKS == R.TASKS
    assert cli_names.FAMILIES == FAMILIES
    assert cli_names.HARVEST_POLICIES == HARVEST_POLICIES
