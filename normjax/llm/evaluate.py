"""``normjax llm-eval``: an OpenAI-compatible model through the whole protocol.

    config = ClientConfig(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-VL-8B-Instruct")
    result = llm_eval(config, out="runs/llm/qwen3vl", norms=None)

Builds the client (`normjax.llm.client`) and the paper's LLM newcomer
(`normjax.llm.agents.LLMAgent`), runs (or resumes) the protocol into `out`
(`normjax.runtime.runner`), writes the judge prompts of the interaction beliefs
(``OUT/judge_prompts.jsonl``, `normjax.analysis.judge`), and with `judge_scores`
imports a judge's scores into ``results.json`` as ``belief_accuracy``.  A run
whose episodes are all finished makes no model request, so importing scores
later is the same command with ``--judge-scores FILE`` added.  `distractor` /
`distractor_share` give the background agents a distractor habit
(docs/world.md §8.5; `normjax.runtime.runner`).  `newcomer` picks the
newcomer: the paper's memory agent, or one of the debate study's normative
modules around it (`normjax.llm.modules`), whose calls go to `module_config`;
``meta.newcomer`` names it, and a run is resumed only with the same one.

A broken endpoint never becomes a result: `llm_eval` raises
`normjax.llm.client.EndpointError` when the preflight request fails or too
many requests fail during the run, and `RunIncomplete` when some requested
episode's decisions mostly got no reply; neither writes ``results.json``.
Every invocation, failed ones included, is appended to
``OUT/invocations.jsonl`` (start time, wall time, endpoint, client
statistics, outcome; with a cache directory also ``programs``: how many of
this process's programs were loaded whole or compiled, `normjax.runtime.programs`), and ``meta``
sums them (`meta.invocations`, `meta.client`, `meta.wall_s_total`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from normjax.cache import cache_stats, persistent
from normjax.runtime.programs import programs_line
from normjax.runtime.runner import INTERACTION_STEPS, run_protocol_async

if TYPE_CHECKING:  # the client needs the `llm` extra; the command imports it when it runs
    from normjax.llm.client import ClientConfig

INVOCATIONS = "invocations.jsonl"


class RunIncomplete(RuntimeError):
    """Some requested episodes are incomplete (their decisions mostly got no reply)."""


class Progress:
    """A tqdm line per stage: episodes done, requests, errors and retries of the client."""

    def __init__(self, stats: dict):
        self.stats, self.bar, self.stage = stats, None, None

    def __call__(self, stage: str, t: int, steps: int, total: int, done: int, asked: int) -> None:
        from tqdm.auto import tqdm

        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = tqdm(total=total, desc=f"llm-eval {stage}", unit="ep", mininterval=0.5, leave=True)
        s = self.stats
        self.bar.set_postfix_str(
            f"step {t}/{steps}, requests {s['requests']}, errors {s['errors']}, retries {s['retries']}", refresh=False
        )
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _record_invocation(out, entry: dict) -> list[dict]:
    """Append this invocation to ``OUT/invocations.jsonl``; returns all of them."""
    path = Path(out, INVOCATIONS)
    if not Path(out, "run.json").exists():  # the run never started (e.g. the preflight failed)
        return [entry]
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def llm_eval(
    config: ClientConfig,
    out,
    norms=None,
    *,
    text_only: bool = False,
    known_norm: bool = False,
    allow_mixed_endpoint: bool = False,
    seed: int = 0,
    capacity: int = 10,
    interaction_steps: int = INTERACTION_STEPS,
    judge_scores=None,
    progress: bool = True,
    distractor: str | None = None,
    distractor_share: float = 0.0,
    newcomer: str = "memory",
    module_config: ClientConfig | None = None,
) -> dict:
    """Run or resume the protocol for one model; returns the results dict (also in OUT/results.json).

    `config` is the endpoint and its request settings, as `llm-judge` and `finetune-eval` take
    them (`normjax.llm.settings.client_config` builds it from the command's options).
    `newcomer` (`normjax.llm.modules.NEWCOMERS`): ``memory`` is the paper's newcomer; the others
    wrap it with a normative module whose calls go to `module_config` (default: `config`, with
    the API key read from NORMJAX_MODULE_API_KEY first)."""
    import asyncio

    from normjax.analysis.judge import export_judge_prompts, import_judge_scores
    from normjax.llm.agents import LLMAgent
    from normjax.llm.client import API_KEY_ENV, ChatClient
    from normjax.llm.modules import MODULE_KEY_ENV, NEWCOMERS, ModuleAgent

    # The distractor settings are validated by run_protocol_async, before anything is traced.
    base_url, model = config.base_url, config.model
    if judge_scores is not None and not Path(judge_scores).is_file():
        raise ValueError(f"--judge-scores file not found: {judge_scores}")
    if newcomer not in NEWCOMERS:
        raise ValueError(f"newcomer {newcomer!r} is invalid; allowed: {', '.join(NEWCOMERS)}")
    if newcomer == "memory" and module_config is not None:
        raise ValueError("--module-model / --module-base-url need a normative module (--newcomer other than memory)")
    if newcomer != "memory" and module_config is None:
        module_config = dataclasses.replace(config, api_key_env=(MODULE_KEY_ENV, *API_KEY_ENV))
    settings = dict(
        model=model,
        base_url=base_url,
        text_only=bool(text_only),
        known_norm=bool(known_norm),
        temperature=config.temperature if config.send_temperature else None,
        max_tokens=config.max_tokens,
        token_param=config.token_param,
        send_temperature=bool(config.send_temperature),
        extra_body=dict(config.extra_body),
    )
    if newcomer != "memory":  # absent for the memory newcomer: its run.json and transcripts are as before
        settings.update(newcomer=newcomer, module_base_url=module_config.base_url, module_model=module_config.model)
    started, t0 = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.perf_counter()
    client_settings = dict(concurrency=config.concurrency, timeout=config.timeout, max_retries=config.max_retries)
    stats: dict = {}
    module_stats: dict = {}

    async def main():
        async with ChatClient(config) as client, ChatClient(module_config or config) as module_client:
            stats.update(client.stats)
            bar = Progress(client.stats) if progress else None
            try:
                if newcomer == "memory":
                    agent = LLMAgent(client, text_only=text_only, known_norm=known_norm)
                else:
                    agent = ModuleAgent(client, module_client, newcomer, text_only=text_only, known_norm=known_norm)
                return await run_protocol_async(
                    agent,
                    norms,
                    seed=seed,
                    capacity=capacity,
                    interaction_steps=interaction_steps,
                    out=out,
                    settings=settings,
                    progress=bar,
                    distractor=distractor,
                    distractor_share=distractor_share,
                    allow_mixed_endpoint=allow_mixed_endpoint,
                )
            finally:
                stats.update(client.stats)
                if newcomer != "memory":
                    module_stats.update(module_client.stats)
                if bar is not None:
                    bar.close()

    def invocation(outcome: str) -> list[dict]:
        entry = dict(
            started=started,
            wall_s=round(time.perf_counter() - t0, 3),
            base_url=base_url,
            model=model,
            outcome=outcome,
            client=dict(stats, **client_settings),
        )
        if newcomer != "memory":
            entry.update(newcomer=newcomer, module_client=dict(module_stats))
        if persistent():  # how this invocation got its programs (normjax.runtime.programs)
            s = cache_stats()
            entry["programs"] = dict(
                loaded=s["executable_loads"], compiled=s["executable_stores"], seconds=round(s["program_s"], 3)
            )
        return _record_invocation(out, entry)

    try:
        result = asyncio.run(main())
    except Exception as e:
        invocation(f"{type(e).__name__}: {e}"[:500])
        raise
    if result["incomplete"]:
        invocation("incomplete")
        raise RunIncomplete(
            f"{len(result['incomplete'])} requested episode(s) are incomplete (most of their "
            f"decisions got no reply from {base_url}): {', '.join(result['incomplete'][:10])}; "
            "no results table was written. Fix the endpoint and run the same command again: "
            "incomplete episodes are rerun, complete ones are kept"
        )
    runs = invocation("complete")
    totals = {k: sum(r["client"].get(k, 0) for r in runs) for k in stats}
    result["meta"].update(
        client=dict(totals, **client_settings), invocations=runs, wall_s_total=round(sum(r["wall_s"] for r in runs), 3)
    )
    result["meta"]["newcomer"] = newcomer
    if newcomer != "memory":
        result["meta"]["module_client"] = {
            k: sum(r.get("module_client", {}).get(k, 0) for r in runs) for k in module_stats
        }
    result["meta"]["judge_prompts"] = str(export_judge_prompts(out))
    if judge_scores is not None:
        result["belief_accuracy"] = import_judge_scores(out, judge_scores, norms=result["meta"]["norms"])
    Path(out, "results.json").write_text(json.dumps(result, indent=1))
    line = programs_line()
    if progress and line is not None:  # the line every compiling command prints
        print(line, flush=True)
    return result


__all__ = ["INVOCATIONS", "Progress", "RunIncomplete", "llm_eval"]
