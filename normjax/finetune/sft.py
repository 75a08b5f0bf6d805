"""The paper's supervised cold-start corpus (§5, "Supervised cold start"): chat examples for SFT.

    corpus = from_runs(["runs/llm/qwen"], "access")        # successful llm-eval episodes
    corpus = from_oracle("access", n=400, steps=200)       # the norm-aware oracle's turns
    train, validation, manifest = split(corpus, seed=0)
    write("data/", train, validation, manifest, corpus["frames"])

**From llm-eval runs** (`from_runs`): every finished, complete episode transcript of each run
(`normjax.runtime.transcripts.TranscriptStore`) whose norm is a *training* norm of the family
(paper Table A4; held-out norms never enter).  An interaction episode is kept when the newcomer
was never sanctioned (``newcomer_sanctions`` 0) and finished at least one whole task
(``newcomer_tasks`` >= 1: in the interaction phase a newcomer is replaced when it finishes, so
the one on the grid at the last step is always unfinished; our reading of "completes all
goals"); a test episode (``seen_*``, ``unseen_*``) when it is successful and violation-free
(both goals, ``goals`` 2, and ``sanctions`` 0: the protocol's joint success).  A kept episode
gives one example per turn the model was asked: the request's system and user messages, then
the model's raw reply as the assistant message.  Turns whose reply could not be parsed
(``llm.error``) or that got no reply are dropped.  Runs whose system prompt states the true
norm (``known_norm``) are refused: the norm must never be in a prompt.

**From the oracle** (`from_oracle`): the Compliant Action states of the norm-aware oracle's
interaction episodes on the family's training norms (`normjax.finetune.dataset.build`, policy
``oracle``: the same prompts, memory without reasoning, belief "none yet"), each answered in the
interactive output format by a template (`oracle_reply`): the oracle's action, the true norm's
description as belief with confidence 1, and a fixed sentence as reasoning.  A state whose
oracle action would not score (it collides or is pushed) is dropped and counted.

`split` holds out `VALIDATION_SHARE` of the examples by episode (no episode straddles the two
files), episodes in the order of ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from normjax.cli_names import SFT_TASK as TASK
from normjax.norms import NORMS
from normjax.runtime.transcripts import RUN_FORMAT, TranscriptStore
from normjax.runtime.turns import PROMPT_ACTIONS

VALIDATION_SHARE = 0.05
FORMAT = "normjax.sft/1"
EPISODE_DROPS = (
    "other_family",
    "held_out_norm",
    "incomplete",
    "interaction_violation",
    "interaction_not_all_goals",
    "test_violation",
    "test_unsuccessful",
)


def check_runs(paths) -> list[Path]:
    """The run directories, each checked to be an ``llm-eval --out`` directory (ValueError otherwise)."""
    runs = []
    for p in [Path(p) for p in paths]:
        if not p.is_dir():
            raise ValueError(f"{p}: no such directory; expected an llm-eval run directory (llm-eval --out DIR)")
        meta = p / "run.json"
        try:
            run = json.loads(meta.read_text())
        except (OSError, ValueError):
            raise ValueError(
                f"{p}: not an llm-eval run directory: expected {meta} (written by llm-eval --out) and transcripts/"
            ) from None
        if not isinstance(run, dict) or run.get("format") != RUN_FORMAT:
            raise ValueError(f"{p}: {meta} is not an llm-eval run (format {RUN_FORMAT!r} expected)")
        if not (p / "transcripts").is_dir():
            raise ValueError(f"{p}: an llm-eval run without transcripts/ (no episode finished)")
        if run.get("known_norm"):
            raise ValueError(f"{p}: a known-norm run (its prompts state the true norm); SFT prompts must not")
        runs.append(p)
    modes = {bool(json.loads((p / "run.json").read_text()).get("text_only")) for p in runs}
    if len(modes) > 1:
        raise ValueError("the runs mix text-only and VLM prompts; build one corpus per prompt mode")
    return runs


def _drop_reason(phase: str, raw: dict) -> str | None:
    if phase == "interaction":
        if raw.get("newcomer_sanctions", 1) != 0:
            return "interaction_violation"
        return None if raw.get("newcomer_tasks", 0) >= 1 else "interaction_not_all_goals"
    if raw.get("sanctions", 1) != 0:
        return "test_violation"
    return None if raw.get("goals", 0) == 2 else "test_unsuccessful"


def _image_layout(messages: list[dict], reply: str) -> tuple[list[dict], str | None]:
    """The finetune files' multimodal layout (every content a list of parts, images as
    ``{"type": "image"}``) and the frame's file name relative to the transcript, if any."""
    out, frame = [], None
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts = []
        for part in content:
            if part.get("type") == "image_url":
                frame = part["image_url"]["url"]
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": part["text"]})
        out.append({"role": m["role"], "content": parts})
    out.append({"role": "assistant", "content": [{"type": "text", "text": reply}]})
    return out, frame


def _example(family: str, norm: int, seed: int, t: int, episode: str, messages: list, images: list) -> dict:
    return dict(
        task=TASK,
        family=family,
        split="train",
        norm=NORMS[norm].name,
        norm_id=norm,
        episode_seed=seed,
        t=t,
        episode=episode,
        images=images,
        messages=messages,
    )


def from_runs(paths, family: str) -> dict:
    """{"examples", "frames", "counts", "sources"} of the family's corpus from llm-eval runs."""
    runs = check_runs(paths)
    text_only = bool(json.loads((runs[0] / "run.json").read_text()).get("text_only"))
    by_name = {s.name: s for s in NORMS}
    examples, frames = [], {}
    counts = dict(episodes_seen=0, episodes_kept=0, dropped={k: 0 for k in EPISODE_DROPS}, turns_asked=0, turns_kept=0)
    counts["turns_dropped"] = dict(unparsable=0, no_reply=0)
    for i, run in enumerate(runs):
        store = TranscriptStore(run)
        for name in store.episodes():
            counts["episodes_seen"] += 1
            spec = by_name.get(name.split("/")[0])
            if spec is None or spec.family != family:
                counts["dropped"]["other_family"] += 1
                continue
            if spec.held_out:
                counts["dropped"]["held_out_norm"] += 1
                continue
            header = store.load(name)
            if header is None:
                counts["dropped"]["incomplete"] += 1
                continue
            phase = "interaction" if name.endswith("/interaction") else "test"
            why = _drop_reason(phase, header["result"]["raw"])
            if why is not None:
                counts["dropped"][why] += 1
                continue
            counts["episodes_kept"] += 1
            episode = f"{i}:{name}"
            folder = store.path(name).parent
            for step in store.read(name)[1:]:
                llm = step.get("llm")
                if not llm or not llm.get("queried"):
                    continue
                counts["turns_asked"] += 1
                if llm.get("reply") is None or llm.get("messages") is None:
                    counts["turns_dropped"]["no_reply"] += 1
                    continue
                if llm.get("error") is not None:
                    counts["turns_dropped"]["unparsable"] += 1
                    continue
                counts["turns_kept"] += 1
                t = int(step["t"])
                if spec.description in _text(llm["messages"][0]):
                    raise ValueError(
                        f"{store.path(name)} step {t}: the system prompt states the norm; SFT prompts must not"
                    )
                if text_only:
                    msgs = [{"role": m["role"], "content": m["content"]} for m in llm["messages"]]
                    msgs.append({"role": "assistant", "content": llm["reply"]})
                    images = []
                else:
                    msgs, frame = _image_layout(llm["messages"], llm["reply"])
                    images = []
                    if frame is not None:
                        if not (folder / frame).is_file():
                            raise ValueError(f"{run}: the frame {folder / frame} of {name} step {t} is missing")
                        rel = f"images/{TASK}/run{i}/{name}_t{t:03d}.png"
                        frames[rel] = folder / frame
                        images = [rel]
                examples.append(_example(family, spec.id, int(header["seed"]), t, episode, msgs, images))
    sources = [dict(run=str(r), **_run_info(r)) for r in runs]
    return dict(examples=examples, frames=frames, counts=counts, sources=sources, text_only=text_only)


def _text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def _run_info(run: Path) -> dict:
    meta = json.loads((run / "run.json").read_text())
    return {k: meta.get(k) for k in ("model", "seed", "text_only", "interaction_steps")}


def oracle_reply(action: int, norm: int) -> str:
    """The oracle's answer in the interactive output format (a template, not a model's words)."""
    name = PROMPT_ACTIONS[action]
    desc = NORMS[norm].description
    return json.dumps(
        dict(
            reasoning=f"The group follows this norm: {desc} The fastest step toward my goal that complies "
            f"with it and collides with no one is to {name}.",
            action=name,
            belief=desc,
            confidence=1.0,
        )
    )


def from_oracle(family: str, n: int, seed: int = 0, batch: int = 16, steps: int | None = None, frames=False):
    """{"examples", "frames", "counts", "sources"}: `n` oracle states' examples (fewer when the
    oracle action of some does not score; counted)."""
    from normjax.constants import INTERACTION_STEPS
    from normjax.finetune.dataset import build

    steps = INTERACTION_STEPS if steps is None else steps
    records, manifest = build(
        "compliant_action", family, "train", n, seed=seed, policy="oracle", batch=batch, steps=steps, frames=frames
    )
    examples = []
    dropped = 0
    for r in records:
        if r["oracle_action"] not in (r["allowed_actions"] or []):
            dropped += 1
            continue
        reply = oracle_reply(r["oracle_action"], r["norm_id"])
        last = {"role": "assistant", "content": [{"type": "text", "text": reply}] if frames else reply}
        ep = f"oracle:{r['norm']}/s{r['episode_seed']}"
        examples.append(
            _example(family, r["norm_id"], r["episode_seed"], r["t"], ep, r["prompt"] + [last], r["images"])
        )
    seeds = {(r["norm"], r["episode_seed"]) for r in records}
    counts = dict(
        states=len(records),
        episodes_seen=len(seeds),
        episodes_kept=len({e["episode"] for e in examples}),
        turns_kept=len(examples),
        turns_dropped=dict(oracle_action_not_scoring=dropped),
        harvest_dropped=manifest.get("dropped"),
    )
    pngs = getattr(records, "pngs", {})
    sources = [dict(policy="oracle", seed=seed, steps=steps, batch=batch)]
    return dict(examples=examples, frames=pngs, counts=counts, sources=sources, text_only=not frames)


def split(corpus: dict, seed: int = 0, share: float = VALIDATION_SHARE) -> tuple[list, list, dict]:
    """(train, validation, manifest): whole episodes, in a seeded order, go to validation until
    it holds ``ceil(share * examples)`` examples (none when there is a single episode)."""
    import numpy as np

    examples = corpus["examples"]
    if not examples:
        raise ValueError(f"the SFT corpus is empty: no turn passed the filters ({json.dumps(corpus['counts'])})")
    episodes = sorted({e["episode"] for e in examples})
    sizes = {k: 0 for k in episodes}
    for e in examples:
        sizes[e["episode"]] += 1
    want = math.ceil(share * len(examples))
    held = set()
    if len(episodes) > 1:
        for j in np.random.default_rng(seed).permutation(len(episodes)).tolist():
            if sum(sizes[k] for k in held) >= want or len(held) == len(episodes) - 1:
                break
            held.add(episodes[j])
    train = [e for e in examples if e["episode"] not in held]
    validation = [e for e in examples if e["episode"] in held]
    manifest = dict(
        format=FORMAT,
        task=TASK,
        family=examples[0]["family"],
        seed=seed,
        validation_share=share,
        text_only=corpus["text_only"],
        examples=len(examples),
        train=dict(examples=len(train), episodes=len(episodes) - len(held)),
        validation=dict(examples=len(validation), episodes=len(held)),
        counts=corpus["counts"],
        sources=corpus["sources"],
        norms=sorted({e["norm"] for e in examples}),
    )
    return train, validation, manifest


def write(out_dir, train: list, validation: list, manifest: dict, frames: dict) -> list[Path]:
    """``sft_<family>_train.jsonl``, ``sft_<family>_validation.jsonl``, ``sft_<family>.manifest.json``
    and the frames (`frames`: path relative to OUT -> PNG bytes or the source file)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    used = {rel for e in train + validation for rel in e["images"]}
    for rel in sorted(used):
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        src = frames[rel]
        if isinstance(src, bytes):
            dst.write_bytes(src)
        else:
            shutil.copyfile(src, dst)
    stem = f"{TASK}_{manifest['family']}"
    paths = [out / f"{stem}_train.jsonl", out / f"{stem}_validation.jsonl", out / f"{stem}.manifest.json"]
    for path, rows in zip(paths, (train, validation)):
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    files = dict(train=paths[0].name, validation=paths[1].name)
    paths[2].write_text(json.dumps(dict(manifest, files=files), indent=2) + "\n")
    return paths


__all__ = [
    "EPISODE_DROPS",
    "TASK",
    "VALIDATION_SHARE",
    "check_runs",
    "from_oracle",
    "from_runs",
    "oracle_reply",
    "split",
    "write",
]
