"""normjax.llm.parse: the tolerant reply parser never raises and accepts the
reply shapes models produce (code fences, prose, <think> blocks, key case,
action spellings, percentages), while unusable replies are errors."""

from __future__ import annotations

import json

import pytest

from normjax.llm.parse import extract_object, parse_action, parse_confidence, parse_reply

UP, DOWN, LEFT, RIGHT, WAIT = range(5)


@pytest.mark.parametrize(
    "value, want",
    [
        ("move up", UP),
        ("up", UP),
        ("UP", UP),
        ("Move Up", UP),
        ("move_up", UP),
        ("MOVE-UP", UP),
        ("go up", UP),
        ("up.", UP),
        (" 'move down' ", DOWN),
        ("left", LEFT),
        ("Move Right!", RIGHT),
        ("wait", WAIT),
        ("WAIT", WAIT),
        ("stay", WAIT),
        ("no-op", WAIT),
        ("noop", WAIT),
        ("<wait>", WAIT),
        ("action: move left", LEFT),
        (0, UP),
        (1, DOWN),
        (2, LEFT),
        (3, RIGHT),
        (4, WAIT),
        ("0", UP),
        ("4", WAIT),
        (3.0, RIGHT),
    ],
)
def test_actions_accepted(value, want):
    assert parse_action(value) == want


@pytest.mark.parametrize(
    "value",
    [
        "north",
        "move up then left",
        "jump",
        "",
        "   ",
        5,
        -1,
        2.5,
        "7",
        True,
        None,
        ["up"],
        {"a": 1},
        "move",
        "up down",
    ],
)
def test_actions_rejected(value):
    assert parse_action(value) is None


@pytest.mark.parametrize("value, want", [(0.7, 0.7), (0, 0.0), (1, 1.0), ("0.25", 0.25), (" 1 ", 1.0)])
def test_confidence(value, want):
    assert parse_confidence(value) == pytest.approx(want)


@pytest.mark.parametrize(
    "value", [-0.1, 7, 1.5, 80, "80%", " 5 % ", "100", 101, "high", None, True, float("nan"), [0.5]]
)
def test_confidence_off_the_scale_is_rejected_not_rescaled(value):
    assert parse_confidence(value) is None


@pytest.mark.parametrize("value", [7, 1.5, "80%", "high"])
def test_a_reply_with_confidence_off_the_scale_is_an_error(value):
    r = parse_reply(json.dumps({"action": "up", "belief": "b", "confidence": value}), "interaction")
    assert r.action is None and "not a number in [0, 1]" in r.error and str(value) in r.error
    assert r.belief == "b" and r.confidence is None


FULL = {"reasoning": "I am at (3, 4).", "action": "move left", "belief": "Avoid zone Q.", "confidence": 0.6}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(FULL),
        "```json\n" + json.dumps(FULL, indent=2) + "\n```",
        "```\n" + json.dumps(FULL) + "\n```",
        "Sure! Here is my answer:\n" + json.dumps(FULL) + "\nHope this helps.",
        '<think>maybe {"action": "up"}? no.</think>\n' + json.dumps(FULL),
        json.dumps({k.upper(): v for k, v in FULL.items()}),
        json.dumps({k.title(): v for k, v in FULL.items()}),
        json.dumps({"Thought": FULL["reasoning"], "Action": "LEFT", "Hypothesis": FULL["belief"], "Conf": "0.6"}),
        "{'reasoning': 'I am at (3, 4).', 'action': 'left', 'belief': 'Avoid zone Q.', 'confidence': 0.6}",
        '{"reasoning": "I am at (3, 4).", "action": "left", "belief": "Avoid zone Q.", "confidence": 0.6,}',
        '{\u201creasoning\u201d: "x", "action": 2, "belief": "Avoid zone Q.", "confidence": 0.6}',  # typographic quotes
        'First a draft: {"action": "up"}. Final answer: ' + json.dumps(FULL),
        "A stray { brace in my text. " + json.dumps(FULL),
        "{ oops, then the answer:\n```json\n" + json.dumps(FULL) + "\n```",
        "I considered moving up.</think>\n" + json.dumps(FULL),  # the server put <think> in the prompt
        '<reasoning>{"action": "up"}</reasoning>' + json.dumps(FULL),
    ],
)
def test_interaction_reply_shapes(text):
    r = parse_reply(text, "interaction")
    assert r.error is None, r
    assert r.action == LEFT
    assert r.belief == "Avoid zone Q."
    assert r.confidence == pytest.approx(0.6)


def test_reasoning_with_braces_and_quotes_inside_strings():
    text = json.dumps({"reasoning": 'The set {a, b} and a "quote" } here', "action": "wait"})
    r = parse_reply(text, "test")
    assert r.error is None and r.action == WAIT and r.reasoning.startswith("The set {a, b}")


def test_test_stage_ignores_belief_fields():
    r = parse_reply('{"reasoning": "r", "action": "move down"}', "test")
    assert (r.action, r.error, r.warnings, r.belief) == (DOWN, None, [], None)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        (42, "empty"),
        ("I will move up.", "no JSON object"),
        ('{"reasoning": "x", "action": "move up"', "no JSON object"),  # truncated
        ("[1, 2, 3]", "no JSON object"),
        ('{"reasoning": "no action here"}', "no 'action'"),
        ('{"action": "fly north"}', "invalid action"),
        ('{"action": 9}', "invalid action"),
        ('{"action": null}', "invalid action"),
        ('{"action": ["up", "left"]}', "invalid action"),
        ('<think>I should go {"action": "up"} maybe', "unclosed <think>"),  # no action from the reasoning
        ('{"action": "down"} <think>and then {"action": "up"}', "unclosed <think>"),
        ('<think>draft {"action": "up"}</think> I am not sure yet.', "no JSON object"),
    ],
)
def test_unusable_replies_are_errors(text, fragment):
    r = parse_reply(text, "interaction")
    assert r.action is None and r.error is not None and fragment in r.error, r


def test_missing_or_bad_belief_fields_are_warnings_not_errors():
    r = parse_reply('{"action": "up"}', "interaction")
    assert r.action == UP and r.error is None
    assert set(r.warnings) == {"missing belief", "missing confidence"}
    r = parse_reply('{"action": "up", "belief": "b", "confidence": null}', "interaction")
    assert r.error is None and r.belief == "b" and r.confidence is None and r.warnings == ["missing confidence"]


def test_last_object_with_an_action_wins_and_keys_are_normalised():
    text = '{"note": 1} {"ACTION": "up"} text {"Action": "down", "Reasoning": "final"} {"other": 2}'
    assert extract_object(text) == {"action": "down", "reasoning": "final"}
    assert extract_object("no object") is None


@pytest.mark.parametrize(
    "text",
    [
        "{" * 5000,
        "}" * 100 + "{",
        '{"a": ' * 300,
        '\x00\x01{"action": "up"\x00',
        "{'a': __import__('os')}",
        '{"action": "up", "action": "down"}',
        '{"action": 1e400}',
        "{" * 3000 + "}" * 3000,
        "{x}" * 3000,
        "<think>" * 100,
        "</think>" * 100 + "{",
    ],
)
def test_never_raises(text):
    r = parse_reply(text, "interaction")
    assert r.error is not None or r.action in range(5)
