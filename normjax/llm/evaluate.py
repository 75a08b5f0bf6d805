"""``normjax llm-eval``: an OpenAI-compatible model through the whole protocol.

    result = llm_eval(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-VL-8B-Instruct",
                      norms=None, out="runs/llm/qwen3vl")

Builds the client (`normjax.llm.client`) and the paper's LLM newcomer
(`normjax.llm.agents.LLMAgent`), runs (or resumes) the protocol into `out`
(`normjax.llm.runner`), writes the judge prompts of the interaction beliefs
(``OUT/judge_prompts.jsonl``, `normjax.llm.judge`), and with `judge_scores`
imports a judge's scores into ``results.json`` as ``belief_accuracy``.  A run
whose episodes are all finished makes no model request, so importing scores
later is the same command with ``--judge-scores FILE`` added.  `distractor` /
`distractor_share` give the background agents a distractor habit
(docs/world.md §8.5; `normjax.llm.runner`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from normjax.llm.runner import INTERACTION_STEPS, run_protocol_async


def _progress(stage: str, t: int, steps: int, live: int, asked: int) -> None:
    if t == 1 or t % 10 == 0 or t == steps:
        print(f"[llm-eval] {stage}: step {t}/{steps}, {live} episodes running, {asked} requests this step",
              file=sys.stderr, flush=True)


def llm_eval(base_url: str, model: str, out, norms=None, *, text_only: bool = False, known_norm: bool = False,
             concurrency: int = 64, timeout: float = 120.0, max_retries: int = 4, temperature: float = 0.7,
             max_tokens: int = 4048, seed: int = 0, capacity: int = 10,
             interaction_steps: int = INTERACTION_STEPS, judge_scores=None, progress: bool = True,
             distractor: str | None = None, distractor_share: float = 0.0) -> dict:
    """Run or resume the protocol for one model; returns the results dict (also in OUT/results.json)."""
    import asyncio

    from normjax.llm.agents import LLMAgent
    from normjax.llm.client import ChatClient, ClientConfig
    from normjax.llm.judge import export_judge_prompts, import_judge_scores

    # The distractor settings are validated by run_protocol_async, before anything is traced.
    config = ClientConfig(base_url=base_url, model=model, temperature=temperature, max_tokens=max_tokens,
                          concurrency=concurrency, timeout=timeout, max_retries=max_retries)
    if judge_scores is not None and not Path(judge_scores).is_file():
        raise ValueError(f"--judge-scores file not found: {judge_scores}")
    settings = dict(model=model, base_url=base_url, text_only=bool(text_only), known_norm=bool(known_norm),
                    temperature=temperature, max_tokens=max_tokens)

    async def main():
        async with ChatClient(config) as client:
            agent = LLMAgent(client, text_only=text_only, known_norm=known_norm)
            result = await run_protocol_async(
                agent, norms, seed=seed, capacity=capacity, interaction_steps=interaction_steps, out=out,
                settings=settings, progress=_progress if progress else None, distractor=distractor,
                distractor_share=distractor_share)
            result["meta"]["client"] = dict(client.stats, concurrency=concurrency, timeout=timeout,
                                            max_retries=max_retries)
            return result

    result = asyncio.run(main())
    result["meta"]["judge_prompts"] = str(export_judge_prompts(out))
    if judge_scores is not None:
        result["belief_accuracy"] = import_judge_scores(out, judge_scores)
    Path(out, "results.json").write_text(json.dumps(result, indent=1))
    return result


__all__ = ["llm_eval"]
