"""Slow-tier end-to-end checks of normjax.runtime.runner (pytest -m slow).

* all 50 norms: the oracle and blind state policies as external agents equal
  `normjax.protocol.evaluate` episode by episode;
* an interaction episode of the runner equals a direct `lax.scan` of
  `env_step` with the default `COMMUNITY` and the exporter's key splits;
* all 50 norms through the fake OpenAI-compatible server (200-step
  interaction phases, 300 test episodes) with scripted failures.
"""

from __future__ import annotations

import asyncio
import faulthandler

import jax
import pytest

from normjax.env import COMMUNITY, blind_policy, env_step, oracle_policy, phase_params
from normjax.interop.export import trajectory_records
from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatClient, ClientConfig
from normjax.protocol import evaluate, format_table
from normjax.protocol.seeds import base_seed
from normjax.runtime.agents import StatePolicyAgent
from normjax.runtime.runner import run_protocol, run_protocol_async
from normjax.runtime.transcripts import TranscriptStore
from normjax.testing.fake_openai import FakeOpenAI, category, chaos, prompt_text
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world

pytestmark = pytest.mark.full_protocol  # all 50 norms: the slow tier


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(3000, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.parametrize("policy", [oracle_policy, blind_policy])
def test_all_norms_equal_evaluate(policy):
    want = evaluate(policy)
    got = run_protocol(StatePolicyAgent(policy), None, interaction_steps=0)
    assert len(got["episodes"]) == 300
    for g, w in zip(got["episodes"], want["episodes"]):
        assert {k: g[k] for k in w} == w
    assert format_table(got) == format_table(want)


@pytest.mark.parametrize("distractor", [None, "move1_wait1"])
def test_interaction_equals_a_direct_scan_with_the_default_community(tmp_path, distractor):
    norm = 12  # clockwise_circulation: the norm-blind background slot is sanctioned often
    share = 1.0 if distractor else 0.0
    run_protocol(
        StatePolicyAgent(oracle_policy),
        [norm],
        out=tmp_path / "run",
        settings={},
        distractor=distractor,
        distractor_share=share,
    )
    records = TranscriptStore(tmp_path / "run").read("clockwise_circulation/interaction")

    params = phase_params("interaction", 0, norm, distractor=distractor or "none", distractor_share=share)
    k_reset, k_run = jax.random.split(jax.random.PRNGKey(base_seed(norm)))

    @jax.jit
    def scan(k_reset, k_run):
        state = reset_world(k_reset, params, WorldConfig())

        def body(s, k):
            kc, kp, kw = jax.random.split(k, 3)
            _, new, info = env_step(kc, kw, s, oracle_policy(kp, s, params), params, COMMUNITY)
            return new, (s, info)

        return jax.lax.scan(body, state, jax.random.split(k_run, 200))

    _, (states, infos) = scan(k_reset, k_run)
    header = {"seed": base_seed(norm), "phase": "interaction"}
    if distractor:  # every agent's habit in the records too
        header["distractor"] = {"habit": distractor, "share": share}
    want = trajectory_records(states, infos, params, header)
    assert len(records) == len(want) == 201
    for got, ref in zip(records[1:], want[1:]):
        assert got["t"] == ref["t"] and got["agents"] == ref["agents"]
    assert sum(a["sanctioned"] for r in want[1:] for a in r["agents"]) > 0
    if distractor:
        assert records[0]["distractor"] == header["distractor"]
        assert distractor in {a["habit"] for r in want[1:] for a in r["agents"]}


def test_all_norms_through_the_fake_server(tmp_path):
    out = tmp_path / "full"

    async def main(url):
        cfg = ClientConfig(base_url=url, model="fake", timeout=60.0, max_retries=2, backoff=0.01, concurrency=128)
        async with ChatClient(cfg) as client:
            return await run_protocol_async(
                LLMAgent(client, text_only=True), None, out=out, settings=dict(model="fake", text_only=True)
            )

    with FakeOpenAI(chaos(slow_s=0.0)) as srv:
        result = asyncio.run(asyncio.wait_for(main(srv.base_url), 2400))
    assert len(result["episodes"]) == 300 and len(result["interaction"]) == 50
    store = TranscriptStore(out)
    assert len(store.episodes()) == 350
    errors = 0
    for name in store.episodes():
        for rec in store.read(name)[1:]:
            llm = rec["llm"]
            if llm and llm["queried"]:
                kind = category(prompt_text({"messages": llm["messages"]}))
                assert (llm["error"] is not None) == (kind in ("malformed", "invalid"))
                errors += llm["error"] is not None
    assert result["llm"]["errors"] == errors > 0 and result["llm"]["retries"] > 0
    assert result["seen"]["overall"]["task"] > 50.0  # the scripted navigator finishes most tasks
    print(format_table(result))
