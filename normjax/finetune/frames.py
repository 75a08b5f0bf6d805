"""The frames of the records: what `llm-eval`'s VLM mode shows for the same state.

    pngs = record_frames([(episode, step index), ...])          # newcomer records
    pngs = record_frames([(episode, step index, slot), ...])    # judgment records

Each frame is the harvested world state before the step (`Episode.states`)
drawn by the runner's own renderer (`normjax.runtime.batch.render`: no
distractor-habit badges, hidden state the community cannot see) at the
runner's default cell size, then annotated by `normjax.runtime.frames.annotated_png`
with the other agents' intended moves of the record's `Turn` (the arrows
the VLM prompt refers to) and the coordinate margin.  A judgment record's
frame has one arrow, the judged agent's proposed move (the others' moves
of the step are not in its text either).  Rendering goes in
fixed batches of `CHUNK` states (padded), so one compiled program serves
every build.

`image_path(record)`: where a record's frame is written, relative to the
JSON Lines file: ``images/<task>/<norm>_s<episode seed>_t<step>.png``
(judgment: ``..._t<step>_a<agent uid>.png``).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from normjax.finetune.text import Episode, newcomer_turn
from normjax.observer.interaction import interaction_params
from normjax.runtime import batch
from normjax.runtime.frames import annotated_png
from normjax.runtime.turns import Other

CELL_PX = 32  # normjax.runtime.runner's default cell size
CHUNK = 16


def image_path(record: dict) -> str:
    agent = "" if record.get("agent_uid") is None else f"_a{record['agent_uid']}"
    return f"images/{record['task']}/{record['norm']}_s{record['episode_seed']}_t{record['t']:03d}{agent}.png"


def arrows(ep: Episode, i: int, k: int | None = None) -> list[Other]:
    """The arrows of a frame: the newcomer turn's other agents, or slot k's proposed move alone."""
    if k is None:
        return newcomer_turn(ep, i).others
    d = ep.data
    return [
        Other(
            (int(d["pos"][i, k, 0]), int(d["pos"][i, k, 1])),
            int(d["group"][i, k]),
            bool(d["was_sanctioned"][i, k]),
            int(d["action"][i, k]),
        )
    ]


def _stack(trees: list):
    """One device array per leaf, stacked on the host: the render calls then read a resident batch
    (stacking leaf by leaf on the device cost a dispatch per state and leaf)."""
    return jax.device_put(jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees))


@functools.cache
def _params(norm_id: int):
    """A norm's interaction parameters as host arrays, built once per process."""
    return jax.device_get(interaction_params(norm_id))


def record_frames(items: list[tuple], cell_px: int = CELL_PX) -> list[bytes]:
    """PNG bytes of each (episode, step index[, judged slot])'s state, drawn as the runner's VLM newcomer sees it."""
    pngs = []
    # PNG encoding runs beside the next render (Pillow's encoder and XLA both release the GIL);
    # the bytes are the same as encoding in turn.
    with ThreadPoolExecutor(max_workers=1) as encoder:
        for lo in range(0, len(items), CHUNK):
            chunk = items[lo : lo + CHUNK]
            padded = chunk + [chunk[0]] * (CHUNK - len(chunk))
            states = _stack([it[0].state(it[1]) for it in padded])
            params = _stack([_params(int(it[0].norm_id)) for it in padded])
            step = batch.render_chunk()
            for r in range(0, len(chunk), step):
                frames = batch.render(states, params, np.arange(r, min(r + step, len(chunk))), cell_px)
                for f, it in zip(frames, chunk[r : r + step]):
                    pngs.append(encoder.submit(annotated_png, f, arrows(*it), cell_px))
        return [p.result() for p in pngs]


__all__ = ["CELL_PX", "arrows", "image_path", "record_frames"]
