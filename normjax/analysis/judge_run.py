"""``normjax llm-judge``: score a run's interaction beliefs with an LLM judge (paper Figure 4b).

    summary = judge_run("runs/llm/qwen", ClientConfig(base_url="http://127.0.0.1:8001/v1", model="judge",
                                                      temperature=0.0))

1. ``OUT/judge_prompts.jsonl`` is written again from the finished interaction
   transcripts (`normjax.analysis.judge.export_judge_prompts`; deterministic, so an
   unchanged run keeps its ids).
2. Every prompt without a usable score in the scores file (default
   ``OUT/judge_scores.jsonl``) is sent through `normjax.llm.client.ChatClient`
   (preflight first; concurrency, retries and the error-rate limit as in
   ``llm-eval``), and each answered request appends one line as soon as it
   arrives: ``{"id", "reply", "norm", "belief", "model"}``, the judge's raw
   reply, which `import_judge_scores` reads (it ignores the other fields).
3. The file is imported (strict: `import_judge_scores`); when every prompt has
   a usable score and ``OUT/results.json`` exists, the curve over the run's
   norms is stored there as ``belief_accuracy``, with ``judge`` (model,
   endpoint, sampling, the scores file).

Resume: a rerun requests only the ids without a usable score; a reply that
did not parse is asked again (its line stays in the file and the import lists
it under ``errors``).  A scores file whose lines name other beliefs (the
interaction was rerun since), another judge model, or that this command did
not write is refused with a ValueError, never mixed.

Failing loudly: `EndpointError` (the preflight failed, too many requests
failed, an HTTP 401 / 403 / 404, or some request still failed after its
retries) and `JudgeIncomplete` (some prompt has no usable score) leave
``results.json`` as it was; the lines already written are kept for a rerun.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from normjax.analysis.judge import (
    JUDGE_FILE,
    SCORES_FILE,
    check_run_dir,
    export_judge_prompts,
    import_judge_scores,
    jsonl_records,
    read_scores,
)
from normjax.llm.client import ChatClient, ClientConfig, EndpointError

LINE_FIELDS = ("id", "reply", "norm", "belief", "model")


class JudgeIncomplete(RuntimeError):
    """Some judge prompts have no usable score (the judge's replies did not parse)."""

    def __init__(self, message: str, summary: dict):
        super().__init__(message)
        self.summary = summary


def scored_ids(path: Path, prompts: list[dict], model: str) -> set[str]:
    """The ids with a usable score in an existing scores file written by this command for these prompts."""
    if not path.exists():
        return set()
    by_id = {p["id"]: p for p in prompts}
    for n, rec in jsonl_records(path):
        if not isinstance(rec, dict) or any(k not in rec for k in LINE_FIELDS):
            raise ValueError(
                f"{path} line {n} was not written by normjax llm-judge (a JSON object with "
                f"{', '.join(LINE_FIELDS)}); choose another --out"
            )
        p = by_id.get(rec["id"])
        if p is None or (p["norm"], p["belief"]) != (rec["norm"], rec["belief"]):
            raise ValueError(
                f"{path} line {n} scores a belief that {JUDGE_FILE} no longer holds (id {rec['id']!r}): "
                "the interaction was rerun since. Use a new --out, or delete the file"
            )
        if rec["model"] != model:
            raise ValueError(
                f"{path} line {n} is by judge model {rec['model']!r}, not {model!r}; scores of two "
                "judges are not mixed. Use another --out"
            )
    return set(read_scores(path, set(by_id))[0])


async def _request(todo: list[dict], config: ClientConfig, path: Path, progress: bool) -> dict:
    """Send the prompts, append a line per reply; returns the client statistics and failed requests."""
    failed: list[tuple[str, str]] = []
    async with ChatClient(config) as client:
        await client.preflight()
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc="llm-judge", unit="belief", mininterval=0.5)

        async def one(p: dict, f) -> None:
            res = await client.chat(p["messages"])
            if res.error is None:
                line = dict(id=p["id"], reply=res.text, norm=p["norm"], belief=p["belief"], model=config.model)
                f.write(json.dumps(line) + "\n")  # one write per line: a killed run leaves whole lines
                f.flush()
            else:
                failed.append((p["id"], res.error))
            if bar is not None:
                bar.update(1)
            client.check_error_rate()  # raises EndpointError: the other requests are cancelled

        with path.open("a", encoding="utf-8") as f:
            tasks = [asyncio.create_task(one(p, f)) for p in todo]
            try:
                await asyncio.gather(*tasks)
            except BaseException:  # EndpointError, or Ctrl-C: stop the requests still in flight
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            finally:
                if bar is not None:
                    bar.close()
        return dict(client=dict(client.stats), failed=failed)


def judge_run(run_dir, config: ClientConfig, scores_path=None, progress: bool = True) -> dict:
    """Judge every belief of the run that has no usable score yet; see the module docstring."""
    run = check_run_dir(run_dir)
    prompts_path = export_judge_prompts(run)
    prompts = [json.loads(x) for x in prompts_path.read_text().splitlines() if x.strip()]
    path = Path(scores_path) if scores_path is not None else run / SCORES_FILE
    done = scored_ids(path, prompts, config.model)
    todo = [p for p in prompts if p["id"] not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    sent = asyncio.run(_request(todo, config, path, progress)) if todo else dict(client={}, failed=[])
    path.touch()  # a run whose newcomer never stated a belief has nothing to request
    if sent["failed"]:
        ids, last = [i for i, _ in sent["failed"]], sent["failed"][-1][1]
        raise EndpointError(
            f"{len(ids)} judge request(s) to {config.url} (model {config.model!r}) failed after "
            f"their retries ({', '.join(ids[:5])}); last error: {last[:200]}. The replies received "
            f"are in {path}; rerun the same command to request the rest. results.json is unchanged"
        )
    results = run / "results.json"
    norms = json.loads(results.read_text())["meta"]["norms"] if results.exists() else None
    accuracy = import_judge_scores(run, path, norms=norms)
    scores, errors = read_scores(path, {p["id"] for p in prompts})
    missing = [p["id"] for p in prompts if p["id"] not in scores]
    accuracy["judge"] = dict(
        model=config.model,
        base_url=config.base_url,
        temperature=config.temperature if config.send_temperature else None,
        max_tokens=config.max_tokens,
        extra_body=config.extra_body,
        scores=str(path),
    )
    summary = dict(
        prompts=len(prompts),
        skipped=len(done),
        requested=len(todo),
        scores=str(path),
        judge_prompts=str(prompts_path),
        usable=len(scores),
        missing=missing,
        errors=errors,
        client=sent["client"],
        results=None,
        belief_accuracy=accuracy,
    )
    if missing:
        first = next((e for e in errors if e["id"] == missing[0]), None)
        why = f" (e.g. {missing[0]}, line {first['line']}: {first['error']})" if first else ""
        raise JudgeIncomplete(
            f"{len(missing)} of {len(prompts)} belief(s) have no usable judge score{why}; the "
            f"replies are in {path} and results.json is unchanged. Rerun the same command to ask "
            "the judge again for those",
            summary,
        )
    if results.exists():
        result = json.loads(results.read_text())
        result["belief_accuracy"] = accuracy
        tmp = results.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(results)  # never a half-written table
        summary["results"] = str(results)
    return summary


__all__ = ["JudgeIncomplete", "LINE_FIELDS", "judge_run", "scored_ids"]
