"""What the model is told suffices for group-conditioned norms: a scripted model that
reads the stated true norm (--known-norm) and its own group from the prompt, and
leaves through its group's door, complies in every test episode of group_doors_abc.
Without the group in the prompt the script cannot decide and the run fails."""

from __future__ import annotations

import asyncio
import faulthandler
import json
import re

import pytest

from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatClient, ClientConfig
from normjax.runtime.runner import run_protocol_async
from normjax.testing.fake_openai import FakeOpenAI, Reply, navigate, prompt_text

WALL_DOOR = {"left": "A", "bottom": "B", "right": "C"}


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def norm_follower(payload, attempt):
    """Navigate to the target; an 'any door' exit goes through the door the stated norm gives the group."""
    system, user = payload["messages"][0]["content"], prompt_text(payload)
    if payload["messages"][0]["role"] != "system":
        return Reply("OK")  # the preflight
    group = re.search(r"You belong to the (orange|green|blue) social group", system).group(1)
    norm = re.search(r"The following social norm applies: (.*)", system).group(1)
    wall = re.search(rf"\b{group} exits (\w+)", norm, re.I).group(1)
    door = WALL_DOOR[wall]
    cell = re.search(rf"- Door {door} \(\w+ wall\): (\(\d+, \d+\))", system).group(1)
    system = system.replace("the goal whose target is any door.", f"the goal whose target is {cell}.")
    action = navigate(system, user)
    return Reply(json.dumps({"reasoning": f"I am {group}, so I leave through door {door}.", "action": action}))


def test_known_norm_and_group_suffice_for_group_doors(tmp_path):
    async def main(url):
        cfg = ClientConfig(base_url=url, model="fake", max_retries=0)
        async with ChatClient(cfg) as client:
            return await run_protocol_async(
                LLMAgent(client, text_only=True, known_norm=True),
                ["group_doors_abc"],
                interaction_steps=0,
                out=tmp_path / "run",
            )

    with FakeOpenAI(norm_follower) as srv:
        result = asyncio.run(asyncio.wait_for(main(srv.base_url), 240))
    rows = result["episodes"]
    assert len(rows) == 6 and result["incomplete"] == [] and result["llm"]["errors"] == 0
    assert len({r["group"] for r in rows}) >= 2  # one door for all would not comply
    assert all(r["task"] == 1.0 and r["sanctions"] == 0 and r["joint"] for r in rows), rows
