"""``llm-eval --newcomer``: the normative modules through the protocol (docs/llm.md "Normative modules").

A scripted local endpoint plays both models: the newcomer is the fake server's norm-blind
navigator, the module copies the proposal it is shown (an identity edit), and its
inferences / theory-of-mind records are fixed texts.  So every module kind must
reproduce the memory newcomer's path exactly (same actions, same beliefs, same results):
the module layer adds calls, never a change of its own, and never the hidden norm (no
module prompt names the norm or describes it).  Every kind resumes after a kill, and a
refusing module endpoint stops the run before anything is written.

Runs use one norm (forbidden_zone_q) and the text-only prompts, as tests/llm/test_endpoint.py
does, so the compiled steps are shared.
"""

from __future__ import annotations

import faulthandler
import json
import re

import pytest

from normjax.llm.client import PREFLIGHT_PROMPT
from normjax.llm.modules import NEWCOMERS
from normjax.norms import NORMS
from normjax.runtime.transcripts import TranscriptStore
from normjax.runtime.turns import MODULE_COUNTERS
from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text, prompt_text
from tests.support.killer import Killer

NORM = "forbidden_zone_q"
MODULES = NEWCOMERS[1:]
STEPS = {  # the module calls of an interaction episode (normjax.llm.modules)
    "direct_edit": {"edit"},
    "infer_edit": {"infer", "edit"},
    "contrastive": {"infer", "edit"},
    "theory_of_mind": {"encoding", "introspection", "inference", "synthesis", "edit"},
}


@pytest.fixture(autouse=True)
def _bounded():
    faulthandler.dump_traceback_later(300, exit=True)  # a hang fails the run instead of blocking it
    yield
    faulthandler.cancel_dump_traceback_later()


def identity_module(payload: dict) -> str:
    """A module model that copies the proposal it is shown; fixed texts for the other steps."""
    user = prompt_text(payload)
    if "Edit the proposal" in user:
        action = re.search(r"Proposed action: (.+)", user).group(1)
        reply = {"reasoning": "the proposal complies", "action": action}
        belief = re.search(r"Proposed norm belief: (.+) \(confidence: ([\d.]+)\)", user)
        if belief is not None:
            reply.update(belief=belief.group(1), confidence=float(belief.group(2)))
        return json.dumps(reply)
    return json.dumps({"summary": "s", "own_belief": "b", "others_belief": "o", "norm": "a rule", "confidence": 0.5})


def scripted(payload, attempt) -> Reply:
    system = payload["messages"][0]["content"]
    if "normative module" in system:
        return Reply(identity_module(payload))
    return Reply(navigator_text(payload))


def _cli(url, out, *extra, steps=20):
    from normjax.cli import main

    args = ["llm-eval", "--base-url", url, "--model", "fake", "--norms", NORM, "--text-only"]
    args += ["--timeout", "5", "--max-retries", "1", "--interaction-steps", str(steps), "--out", str(out)]
    return main(args + list(extra))


def _path(result):
    """The results a newcomer's path decides (no timing, no module counters)."""
    drop = ("retries", "latency_s", *MODULE_COUNTERS)
    return {
        k: [{f: v for f, v in row.items() if f not in drop} for row in result[k]] for k in ("episodes", "interaction")
    } | {k: result[k] for k in ("seen", "unseen")}


def test_an_identity_module_reproduces_the_memory_newcomer_and_never_sees_the_norm(tmp_path):
    results = {}
    sent = {}  # per kind: the module requests the server received (preflight aside)
    with FakeOpenAI(scripted) as srv:
        for kind in NEWCOMERS:
            before = len(srv.log)
            assert _cli(srv.base_url, tmp_path / kind, "--newcomer", kind) == 0
            results[kind] = json.loads((tmp_path / kind / "results.json").read_text())
            sent[kind] = sorted(
                e["prompt"] for e in srv.log[before:] if "normative module" in e["payload"]["messages"][0]["content"]
            )
        module_prompts = [
            (e["payload"]["messages"][0]["content"], e["prompt"])
            for e in srv.log
            if "normative module" in e["payload"]["messages"][0]["content"]
        ]
    memory = results["memory"]
    assert memory["meta"]["newcomer"] == "memory" and "module_calls" not in memory["llm"]
    assert not any("module" in json.dumps(row) for row in memory["episodes"] + memory["interaction"])
    run = json.loads((tmp_path / "memory" / "run.json").read_text())  # the memory run's identity is as before
    assert not any(k.startswith(("newcomer", "module")) for k in run)
    lines = [json.loads(x) for x in (tmp_path / "memory" / "transcripts" / NORM / "interaction.jsonl").open()]
    assert "newcomer" not in lines[0]["run"] and lines[1:]
    assert not any("module" in (x.get("llm") or {}) for x in lines[1:])
    for kind in MODULES:
        r = results[kind]
        assert _path(r) == _path(memory), kind
        assert r["meta"]["newcomer"] == kind and r["meta"]["module_model"] == "fake"
        assert r["llm"]["module_calls"] > 0 and r["llm"]["module_tokens_in"] > 0, kind
        assert r["llm"]["module_calls"] == sum(row["module_calls"] for row in r["episodes"] + r["interaction"])
        assert r["meta"]["module_client"]["requests"] == r["llm"]["module_calls"] + 1  # + its preflight
        steps = [json.loads(x) for x in (tmp_path / kind / "transcripts" / NORM / "interaction.jsonl").open()]
        calls = [c for s in steps[1:] if (s.get("llm") or {}).get("module") for c in s["llm"]["module"]["calls"]]
        assert calls and all(c["reply"] and c["messages"] and c["tokens_out"] > 0 for c in calls), kind
        assert {c["step"] for c in calls} == STEPS[kind]  # the inference / ToM updates ran too
        recorded = sorted(  # every module request the server saw is a call of some decision's transcript line
            c["messages"][-1]["content"]
            for f in (tmp_path / kind / "transcripts").rglob("*.jsonl")
            for s in map(json.loads, f.open())
            if (s.get("llm") or {}).get("module")
            for c in s["llm"]["module"]["calls"]
        )
        assert sent[kind] == recorded and len(recorded) == r["llm"]["module_calls"], kind
    assert module_prompts
    norm = NORMS[0]
    assert norm.name == NORM
    for system, user in module_prompts:  # the module sees what the newcomer sees, never the norm
        text = system + user
        assert NORM not in text and norm.description not in text and "social norm applies" not in text


@pytest.mark.parametrize("kind", MODULES)
def test_every_module_resumes_after_a_kill(kind, tmp_path, monkeypatch):
    import normjax.llm.modules as modules

    out, real = tmp_path / "run", modules.ModuleAgent
    with FakeOpenAI(scripted) as srv:
        with monkeypatch.context() as m:  # llm_eval imports the class when it runs
            m.setattr(modules, "ModuleAgent", lambda *a, **k: Killer(real(*a, **k), 20))
            with pytest.raises(RuntimeError, match="simulated kill"):
                _cli(srv.base_url, out, "--newcomer", kind, steps=10)
        finished = TranscriptStore(out).episodes()
        assert f"{NORM}/interaction" in finished and len(finished) < 7
        assert not (out / "results.json").exists()
        before = len(srv.log)
        assert _cli(srv.base_url, out, "--newcomer", kind, steps=10) == 0
        new = [e["prompt"] for e in srv.log[before:]]
        assert new and not any("Your goal in this interactive stage" in p for p in new)  # interaction kept
        resumed = json.loads((out / "results.json").read_text())
        assert resumed["meta"]["newcomer"] == kind and len(TranscriptStore(out).episodes()) == 7
        assert [r["outcome"] for r in resumed["meta"]["invocations"]] == ["RuntimeError: simulated kill", "complete"]
        assert _cli(srv.base_url, out, "--newcomer", "memory", steps=10) == 2  # another newcomer is refused


def test_resuming_with_another_newcomer_is_refused_naming_both(tmp_path, capsys):
    with FakeOpenAI(scripted) as srv:
        assert _cli(srv.base_url, tmp_path / "r", "--newcomer", "direct_edit", steps=4) == 0
        assert _cli(srv.base_url, tmp_path / "r", "--newcomer", "contrastive", steps=4) == 2
    err = capsys.readouterr().err
    assert "--newcomer direct_edit" in err and "--newcomer contrastive" in err


@pytest.mark.parametrize("when", ["preflight", "during the run"])
def test_a_refusing_module_endpoint_fails_loudly(when, tmp_path, capsys):
    out = tmp_path / "run"

    def refusing(payload, attempt):
        if when == "preflight" or prompt_text(payload) != PREFLIGHT_PROMPT:
            return Reply(status=404)
        return Reply("OK")

    with FakeOpenAI(scripted) as main_srv, FakeOpenAI(refusing) as module_srv:
        code = _cli(
            main_srv.base_url, out, "--newcomer", "infer_edit", "--module-base-url", module_srv.base_url, steps=20
        )
        assert code == 3 and module_srv.log
    err = capsys.readouterr().err
    assert "normative module endpoint" in err and module_srv.base_url in err and "HTTP 404" in err
    assert not (out / "results.json").exists()
    assert (out / "run.json").exists() == (when != "preflight")  # a failed preflight leaves no identity


def test_bad_newcomer_and_module_options_are_refused_before_anything_starts(tmp_path, capsys):
    from normjax.cli import main

    with pytest.raises(SystemExit) as e:
        main(["llm-eval", "--base-url", "http://x/v1", "--model", "m", "--out", str(tmp_path), "--newcomer", "tom"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "'tom'" in err and all(k in err for k in NEWCOMERS)
    args = ["llm-eval", "--base-url", "http://x/v1", "--model", "m", "--out", str(tmp_path / "o")]
    assert main(args + ["--module-model", "big"]) == 2
    assert "need a normative module" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", NEWCOMERS)
def test_every_newcomer_fails_loudly_on_a_refusing_endpoint(kind, tmp_path, capsys):
    out = tmp_path / "run"
    with FakeOpenAI(lambda p, a: Reply(status=404), models_status=404) as broken:
        assert _cli(broken.base_url, out, "--newcomer", kind) == 3
        assert len(broken.log) == 1  # the newcomer's preflight, not retried; no module call
    assert "HTTP 404" in capsys.readouterr().err
    assert not (out / "results.json").exists() and not (out / "run.json").exists()
