"""One column schema for every task's records, so that any mix of files loads together.

    features(frames=False) -> datasets.Features

Every record has the same keys; a field of another task is null.  JSON cannot type a
null, so a file whose column is null throughout (``violates`` in a Compliant Action
file) is read by `datasets` as the null type, and a list of files that mixes it with a
file where the column holds booleans fails to cast.  Passing these features types every
column once for all files::

    from datasets import load_dataset
    from normjax.finetune.schema import features

    ds = load_dataset("json", data_files=[...], features=features(), split="train")

`load(paths, frames)` does this and, for files with frames, turns the image paths (relative to
each file) into `datasets.Image` values, so the frames load from any working directory.
`frames` selects the prompt layout: text-only files (``--text-only``: every message's
``content`` a string) or files with frames (the multimodal layout: ``content`` a list of
parts); the two layouts are not mixed in one load.
"""

from __future__ import annotations

AGENT = dict(
    slot="int64",
    uid="int64",
    pos=["int64"],
    group="int64",
    newcomer="bool",
    red_cross="bool",
    pushed="bool",
    goal_kind="int64",
    goal_cell=["int64"],
    exit_door="int64",
    leg="int64",
    moves=["bool"],
    visited_q="bool",
    action="int64",
    target=["int64"],
    sanctioned="bool",
)
STEP = dict(t="int64", uid=["int64"], pos=[["int64"]], action=["int64"], sanctioned=["bool"])
SUBJECT = dict(slot="int64", uid="int64", action="int64", target=["int64"], cross="string", enters="string")
STATE = dict(t="int64", layout="string", agents=[AGENT], history=[STEP], subject=SUBJECT)
TEXT_MESSAGE = dict(role="string", content="string")
PART = dict(type="string", text="string")
IMAGE_MESSAGE = dict(role="string", content=[PART])
COLUMNS = dict(
    task="string",
    family="string",
    split="string",
    norm="string",
    norm_id="int64",
    episode_seed="int64",
    t="int64",
    images=["string"],
    allowed_actions=["int64"],
    action_reasons=["string"],
    oracle_action="int64",
    violates="bool",
    agent_uid="int64",
    answer="string",
    choices=["string"],
    state=STATE,
)


# `finetune-data --task sft` (normjax.finetune.sft): chat examples, the assistant's reply included
SFT_COLUMNS = dict(
    {k: COLUMNS[k] for k in ("task", "family", "split", "norm", "norm_id", "episode_seed", "t")},
    episode="string",
    images=COLUMNS["images"],
)


def load(paths, frames: bool = False):
    """The records of `paths` (any mix of tasks) as one `datasets.Dataset`; with `frames` the
    ``images`` column holds `datasets.Image` values read from the files beside each JSONL file
    (their paths are relative to it), so it loads from any working directory."""
    from pathlib import Path

    from datasets import Image, List, concatenate_datasets, load_dataset

    parts = []
    for path in [Path(p).resolve() for p in paths]:
        ds = load_dataset("json", data_files=str(path), features=features(frames), split="train")
        if frames:
            base = path.parent
            ds = ds.map(lambda r: {"images": [str(base / rel) for rel in r["images"]]})
            ds = ds.cast_column("images", List(Image()))
        parts.append(ds)
    return concatenate_datasets(parts)


def _feature(spec):
    from datasets import List, Value

    if isinstance(spec, str):
        return Value(spec)
    if isinstance(spec, list):
        return List(_feature(spec[0]))
    return {k: _feature(v) for k, v in spec.items()}


def features(frames: bool = False):
    """The `datasets.Features` of a records file (text-only, or with frames)."""
    from datasets import Features

    spec = dict(COLUMNS, prompt=[IMAGE_MESSAGE if frames else TEXT_MESSAGE])
    return Features({k: _feature(v) for k, v in spec.items()})


def sft_features(frames: bool = False):
    """The `datasets.Features` of an SFT corpus file (text-only, or with frames)."""
    from datasets import Features

    spec = dict(SFT_COLUMNS, messages=[IMAGE_MESSAGE if frames else TEXT_MESSAGE])
    return Features({k: _feature(v) for k, v in spec.items()})


__all__ = ["COLUMNS", "SFT_COLUMNS", "features", "load", "sft_features"]
