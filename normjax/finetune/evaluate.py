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
A request that got no reply after its retries is a fault, not a wrong answer: it is not
scored, and is counted (``failed``, ``failed_share``); past the client's error-rate
limit (`llm-eval`'s ``--max-error-rate`` over ``--error-window`` requests) or on a refusal
(HTTP 401/403/404) the evaluation raises `EndpointError`.  With an output folder every reply
is appended to ``replies.jsonl`` as it arrives, and a rerun sends only the records without
one (a killed or stopped run resumes).
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


async def _request(config, todo: list[tuple[int, list[dict]]], path: Path | None, done: dict, data: str) -> list:
    """Send the prompts; each reply is appended to `path` as it arrives (one whole line a write)
    and put in `done`.  Returns the (record index, error) of requests that failed after their
    retries; raises `EndpointError` past the client's error-rate limit (the rest cancelled)."""
    from normjax.llm.client import ChatClient

    failed = []
    async with ChatClient(config) as client:
        f = path.open("a", encoding="utf-8") if path is not None else None

        async def one(idx: int, messages: list[dict]) -> None:
            res = await client.chat(messages)
            if res.error is None:
                done[idx] = res.text or ""
                if f is not None:
                    f.write(json.dumps(dict(index=idx, data=data, model=config.model, reply=done[idx])) + "\n")
                    f.flush()
            else:
                failed.append((idx, res.error))
            client.check_error_rate()

        tasks = [asyncio.create_task(one(i, m)) for i, m in todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # EndpointError or Ctrl-C: stop the requests still in flight
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            if f is not None:
                f.close()
    return sorted(failed)


def read_replies(path: Path, model: str, data: str, n: int) -> dict[int, str]:
    """The replies an earlier run of the same model on the same file (name `data`) appended to
    `path` (record index -> text)."""
    done = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill: its request is sent again
        if (rec.get("model"), rec.get("data")) != (model, data):
            raise ValueError(
                f"{path} holds replies of model {rec.get('model')!r} on {rec.get('data')!r}, not {model!r} on "
                f"{data!r}: runs are not mixed; use another --out"
            )
        if not isinstance(rec.get("index"), int) or not 0 <= rec["index"] < n:
            raise ValueError(
                f"{path}: reply index {rec.get('index')!r} outside the file's {n} records; use another --out"
            )
        done[rec["index"]] = rec.get("reply") or ""
    return done


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
    """Metrics of the model's replies on the file (module docstring); with `out_dir` the replies
    are appended to OUT/replies.jsonl as they arrive and a rerun sends only the missing ones."""
    records = read_records(data_path)
    base = Path(data_path).parent
    path = None
    done: dict[int, str] = {}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        path = Path(out_dir) / "replies.jsonl"
        done = read_replies(path, config.model, Path(data_path).name, len(records))
    resumed = len(done)
    todo = [(i, request_messages(r, base)) for i, r in enumerate(records) if i not in done]
    failed = asyncio.run(_request(config, todo, path, done, Path(data_path).name)) if todo else []
    answered = sorted(done)
    by_task = {}
    for task in sorted({records[i]["task"] for i in answered}):
        idx = [i for i in answered if records[i]["task"] == task]
        by_task[task] = accuracy([done[i] for i in idx], [records[i] for i in idx])
    out = dict(
        data=str(data_path),
        model=config.model,
        temperature=config.temperature,
        records=len(records),
        answered=len(answered),
        resumed=resumed,
        # isolated requests that failed after their retries: not scored; a rerun sends them again
        failed=len(failed),
        failed_share=len(failed) / len(records),
        first_error=failed[0][1][:200] if failed else None,
        tasks=by_task,
        score=score(by_task),
        baselines=baselines(records),
    )
    if out_dir is not None:
        (Path(out_dir) / "metrics.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


__all__ = ["finetune_eval", "read_records", "score"]
