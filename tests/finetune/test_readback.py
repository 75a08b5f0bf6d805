"""Compliant Action / Norm Selection states read back from an `llm-eval` run (slow tier: a
scripted-model run of one norm, then the harvest program's replay variant compiles for about
a minute and a half on a 2-core VM)."""

from __future__ import annotations

import asyncio
import json
import shutil

import numpy as np
import pytest

from normjax import constants as C
from normjax.finetune import dataset as D
from normjax.finetune import records as R
from normjax.finetune.readback import read_run
from normjax.finetune.text import action_messages, newcomer_turn
from normjax.llm.agents import LLMAgent
from normjax.llm.client import ChatClient, ClientConfig
from normjax.runtime.runner import run_protocol_async
from normjax.runtime.transcripts import TranscriptStore
from normjax.testing.fake_openai import FakeOpenAI, chaos

pytestmark = pytest.mark.slow
NORM = "forbidden_zone_q"  # access, a training norm
STEPS = 60  # past step 50, so that Norm Selection has states


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A text-only llm-eval run of one norm against the scripted model (malformed and invalid replies
    included, so the memory holds errors too)."""
    out = tmp_path_factory.mktemp("readback") / "run"

    async def main(url):
        cfg = ClientConfig(
            base_url=url, model="fake", timeout=5.0, max_retries=2, backoff=0.01, max_backoff=0.05, concurrency=16
        )
        async with ChatClient(cfg) as client:
            await run_protocol_async(
                LLMAgent(client, text_only=True),
                [NORM],
                interaction_steps=STEPS,
                out=out,
                settings=dict(model="fake", text_only=True, known_norm=False),
            )

    with FakeOpenAI(chaos(transport_errors=False)) as srv:
        asyncio.run(asyncio.wait_for(main(srv.base_url), 240))
    return out


@pytest.fixture(scope="module")
def source(run_dir):
    return read_run(run_dir, D.split_norms("access", "train"))


def test_replayed_states_give_the_prompts_the_model_was_sent(run_dir, source):
    [ep] = source.episodes
    lines = TranscriptStore(run_dir).read(f"{NORM}/interaction")[1:]
    candidates = R.newcomer_candidates(ep)
    assert len(candidates) > 10
    errors = 0
    for i in candidates:
        llm = lines[i]["llm"]
        assert llm["queried"] and not llm["forced_wait"]  # automatic waits are never candidates
        assert action_messages(newcomer_turn(ep, i)) == llm["messages"]  # the very request, rebuilt
        errors += "(no valid reply:" in llm["messages"][1]["content"]
    assert errors > 0  # the memory carried the model's failed replies as the runner remembered them
    skipped = [i for i, line in enumerate(lines) if line["llm"] and line["llm"]["queried"] and i not in candidates]
    assert all(ep.data["was_pushed"][i, 0] for i in skipped)  # the only queried steps left out: after a collision


def test_build_labels_the_run_states(run_dir, source, tmp_path):
    recs, man = D.build("compliant_action", "access", "train", 6, seed=2, states_from=run_dir, frames=True)
    assert len(recs) == 6 and man["states_from"]["episodes"] == [f"{NORM}/interaction"]
    [ep] = source.episodes
    ok = set(int(ep.data["t"][i]) for i in R.newcomer_candidates(ep))
    for r in recs:
        assert r["t"] in ok and r["norm"] == NORM
        i = r["t"]
        # the harvest's tie set less the actions that collide when stepped (issue 52)
        assert r["allowed_actions"] == np.flatnonzero(ep.data["reason"][i] == 0).tolist()
        assert set(r["allowed_actions"]) <= set(np.flatnonzero(ep.data["tie"][i]).tolist()) and r["allowed_actions"]
        assert [r["action_reasons"][a] == "compliant" for a in range(C.N_ACTIONS)] == (
            ep.data["reason"][i] == 0
        ).tolist()
    data, _ = D.write(tmp_path, recs, man)
    assert all((data.parent / r["images"][0]).is_file() for r in recs)
    sel, _ = D.build("norm_selection", "access", "train", 3, seed=2, states_from=run_dir, frames=False)
    assert len(sel) == 3 and all(r["t"] >= R.MIN_STEP and r["answer"] for r in sel)


def _tampered(run_dir, tmp_path, edit):
    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    path = TranscriptStore(out).path(f"{NORM}/interaction")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def test_a_run_that_does_not_replay_is_refused(run_dir, tmp_path):
    def move_an_agent(lines):
        a = next(a for line in lines[1:] for a in line["agents"] if a["active"] and a["slot"] > 0)
        a["pos"] = [a["pos"][0], a["pos"][1] + 1]

    with pytest.raises(ValueError, match=r"slot \d+: the replay gives .* the transcript recorded"):
        read_run(_tampered(run_dir, tmp_path / "a", move_an_agent), D.split_norms("access", "train"))

    def other_choice(lines):  # the model's recorded choice no longer leads where the run went
        llm = next(x["llm"] for x in lines[1:] if x["llm"] and x["llm"]["queried"] and x["llm"]["executed"] != C.WAIT)
        llm["action"] = C.WAIT

    with pytest.raises(ValueError, match="does not replay|executed"):
        read_run(_tampered(run_dir, tmp_path / "b", other_choice), D.split_norms("access", "train"))
    with pytest.raises(ValueError, match="no complete interaction transcript of these norms"):
        read_run(run_dir, D.split_norms("procedure", "train"))
