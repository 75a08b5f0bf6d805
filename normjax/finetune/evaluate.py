"""`normjax finetune-eval`: greedy replies of an OpenAI-compatible model on a records file,
scored by the task verifiers (paper Table A5's metrics).

    finetune_eval(data_path, config) -> {"tasks": {task: {n, accuracy[, balanced_accuracy]}}, "score": ...}

Every record's ``prompt`` is sent as `llm-eval` sends its prompts
(`normjax.llm.client`, temperature from the config: 0 for greedy): text
contents as strings, and a record with frames (the multimodal layout,
``images`` relative to the file) as the user's text followed by the PNG as
a data URL (`request_messages`); the reply is graded by `rewards.accuracy` (a reward of 1 or
more counts as correct).  ``score`` is Table A5's validation metric of the file:
action accuracy, selection accuracy, judgment balanced accuracy, or for a mixed
Action + Judgment file the mean of action accuracy and judgment balanced accuracy.
A request that got no reply is a fault, not a wrong answer: the evaluation raises
`EndpointError` and writes no metrics.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from normjax.finetune.baselines import baselines
from normjax.finetune.rewards import accuracy


def read_records(path) -> list[dict]:
    path = Path(path)
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: not a JSON line ({e})") from None
        if not isinstance(rec, dict) or "prompt" not in rec or "task" not in rec:
            raise ValueError(f"{path}:{n}: a record needs 'prompt' and 'task' (a normjax finetune-data file)")
        out.append(rec)
    if not out:
        raise ValueError(f"{path}: no records")
    return out


def request_messages(record: dict, base_dir) -> list[dict]:
    """The chat request of a record: llm-eval's layout, image parts read from `base_dir`."""
    from normjax.llm.client import user_message

    images = list(record.get("images") or [])
    out = []
    for m in record["prompt"]:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        text = "".join(p.get("text") or "" for p in content if p.get("type") == "text")
        pngs = []
        for p in content:
            if p.get("type") == "image":
                if not images:
                    raise ValueError(
                        f"record {record.get('norm')} t={record.get('t')}: more image parts than 'images' entries"
                    )
                path = Path(base_dir) / images.pop(0)
                if not path.is_file():
                    raise ValueError(f"record {record.get('norm')} t={record.get('t')}: image {path} is missing")
                pngs.append(path.read_bytes())
        out.append(user_message(text, pngs) if m["role"] == "user" else {"role": m["role"], "content": text})
    return out


async def _replies(config, prompts: list[list[dict]]):
    from normjax.llm.client import ChatClient

    async with ChatClient(config) as client:
        return await asyncio.gather(*(client.chat(p) for p in prompts))


def score(by_task: dict) -> float | None:
    """Table A5's metric of a file from its per-task metrics."""
    action = by_task.get("compliant_action", {}).get("accuracy")
    judge = by_task.get("norm_judgment", {}).get("balanced_accuracy")
    select = by_task.get("norm_selection", {}).get("accuracy")
    parts = [v for v in (action, judge) if v is not None]
    if parts:
        return sum(parts) / len(parts)
    return select


def finetune_eval(data_path, config, out_dir=None) -> dict:
    from normjax.llm.client import EndpointError

    records = read_records(data_path)
    base = Path(data_path).parent
    results = asyncio.run(_replies(config, [request_messages(r, base) for r in records]))
    failed = [r.error for r in results if r.error is not None]
    if failed:
        raise EndpointError(
            f"{len(failed)} of {len(records)} requests to {config.url} got no reply "
            f"(first: {failed[0][:200]}); no metrics written"
        )
    texts = [r.text or "" for r in results]
    by_task = {}
    for task in sorted({r["task"] for r in records}):
        idx = [i for i, r in enumerate(records) if r["task"] == task]
        by_task[task] = accuracy([texts[i] for i in idx], [records[i] for i in idx])
    out = dict(
        data=str(data_path),
        model=config.model,
        temperature=config.temperature,
        tasks=by_task,
        score=score(by_task),
        baselines=baselines(records),
    )
    if out_dir is not None:
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        with open(d / "replies.jsonl", "w") as f:
            for r, text in zip(records, texts):
                f.write(json.dumps(dict(task=r["task"], norm=r.get("norm"), t=r.get("t"), reply=text)) + "\n")
        (d / "metrics.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


__all__ = ["finetune_eval", "read_records", "score"]
