"""A scripted module that infers the true norm lifts a norm-blind newcomer to the known-norm row.

The newcomer is the fake server's norm-blind navigator; the Infer + Edit module's model is
scripted: its inference returns the true norm's description (the test's oracle; nothing in
its prompt names the norm) and its edit follows the inferred rule the way
tests/llm/test_groups.py's known-norm follower does (each group leaves through its door of
group_doors_abc).  Its test episodes then comply like the known-norm follower's, where the
memory newcomer's do not.
"""

from __future__ import annotations

import faulthandler
import json
import re

import pytest

from normjax.norms import NORMS
from normjax.testing.fake_openai import FakeOpenAI, Reply, navigate, navigator_text, prompt_text
from tests.llm.test_groups import norm_follower

NORM = "group_doors_abc"
RULE = next(n for n in NORMS if n.name == NORM).description


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def true_norm_module(payload) -> str:
    system, user = payload["messages"][0]["content"], prompt_text(payload)
    if "Edit the proposal" not in user:
        return json.dumps({"reasoning": "scripted", "norm": RULE, "confidence": 1.0})
    rule = re.search(r"INFERRED NORM: (.*)", user).group(1)
    group = re.search(r"You belong to the (orange|green|blue) group", user).group(1)
    target = re.search(r"\(target (.*)\)\.$", user, re.M).group(1)
    door = re.search(rf"\b{group} exits (\w+)", rule, re.I)
    if door is not None and target == "any door":
        wall = door.group(1).lower()
        target = re.search(rf"- Door \w \({wall} wall\): (\(\d+, \d+\))", system).group(1)
    action = navigate(system + f"\nYou are currently working on the goal whose target is {target}.\n", user)
    reply = {"reasoning": f"the rule: {rule}", "action": action}
    if "Proposed norm belief" in user:
        reply.update(belief=rule, confidence=1.0)
    return json.dumps(reply)


def scripted(payload, attempt) -> Reply:
    if "normative module" in payload["messages"][0]["content"]:
        return Reply(true_norm_module(payload))
    return Reply(navigator_text(payload))


def _run(url, out, *extra):
    from normjax.cli import main

    args = ["llm-eval", "--base-url", url, "--model", "fake", "--norms", NORM, "--text-only", "--out", str(out)]
    assert main(args + ["--timeout", "5", "--max-retries", "1", *extra]) == 0
    return json.loads((out / "results.json").read_text())


def test_a_module_returning_the_true_norm_reaches_the_known_norm_row(tmp_path):
    with FakeOpenAI(scripted) as srv:
        module = _run(srv.base_url, tmp_path / "module", "--newcomer", "infer_edit", "--interaction-steps", "30")
        blind = _run(srv.base_url, tmp_path / "memory", "--interaction-steps", "30")
    with FakeOpenAI(norm_follower) as srv:
        known = _run(srv.base_url, tmp_path / "known", "--known-norm", "--interaction-steps", "0")
    assert module["interaction"][0]["belief"] == RULE  # the module's inferred rule became the belief
    joint = lambda r: [row["joint"] for row in r["episodes"]]
    assert joint(known) == joint(module) == [True] * 6
    assert not all(joint(blind))  # the memory newcomer's path breaks the norm
