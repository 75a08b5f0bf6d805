"""The frames of newcomer-state records: what `llm-eval`'s VLM mode shows for the same state.

    pngs = record_frames([(episode, step index), ...])  # PNG bytes, one per item

Each frame is the harvested world state before the step (`Episode.states`)
drawn by the runner's own renderer (`normjax.llm.batch.render`: no
distractor-habit badges, hidden state the community cannot see) at the
runner's default cell size, then annotated by `normjax.llm.frames.annotated_png`
with the other agents' intended moves of the record's `Turn` (the arrows
the VLM prompt refers to) and the coordinate margin.  Rendering goes in
fixed batches of `CHUNK` states (padded), so one compiled program serves
every build.

`image_path(record)`: where a record's frame is written, relative to the
JSON Lines file: ``images/<task>/<norm>_s<episode seed>_t<step>.png``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from normjax.finetune.text import Episode, newcomer_turn
from normjax.llm import batch
from normjax.llm.frames import annotated_png
from normjax.observer.interaction import interaction_params

CELL_PX = 32  # normjax.llm.runner's default cell size
CHUNK = 16


def image_path(record: dict) -> str:
    return f"images/{record['task']}/{record['norm']}_s{record['episode_seed']}_t{record['t']:03d}.png"


def _stack(trees: list):
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


def record_frames(items: list[tuple[Episode, int]], cell_px: int = CELL_PX) -> list[bytes]:
    """PNG bytes of each (episode, step index)'s state, as the runner's VLM newcomer sees it."""
    out = []
    for lo in range(0, len(items), CHUNK):
        chunk = items[lo: lo + CHUNK]
        padded = chunk + [chunk[0]] * (CHUNK - len(chunk))
        states = _stack([ep.state(i) for ep, i in padded])
        params = _stack([interaction_params(ep.norm_id) for ep, _ in padded])
        frames = batch.render(states, params, np.arange(len(chunk)), cell_px)
        out += [annotated_png(f, newcomer_turn(ep, i).others, cell_px) for f, (ep, i) in zip(frames, chunk)]
    return out


__all__ = ["CELL_PX", "image_path", "record_frames"]
