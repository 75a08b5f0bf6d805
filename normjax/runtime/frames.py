"""Frames for vision-language models: `render_frame_jit`'s image plus arrows.

The paper's prompt asks the model to take "other agents' arrows" into account
(appendix, ReAct procedure): the frame shows each agent's intended next move.
`normjax.interop.render.render_frame` already draws the public sanctions of
the last step (a red cross on the agent), the newcomer's gold star and the
status badges (`normjax.runtime.batch.render` leaves out the distractor-habit
badges: hidden state that the community cannot see); this module adds, on
the host (numpy / PIL):

* an arrow from every other agent toward the cell it intends to enter, for
  intended moves (intents 0-3; a WAIT, or a move blocked by a wall, draws
  none).  The intents are the community's planned actions for the step,
  computed with the step's own community key, reduced to effective actions
  (`normjax.runtime.batch.view`); the newcomer has no arrow, since its move is
  what the model decides;
* a margin with row numbers on the left and column numbers on top, so that
  the image and the prompt's (row, column) positions line up.

`annotated_png(frame, others, cell_px)` returns PNG bytes.
"""

from __future__ import annotations

import functools
import io

import numpy as np

from normjax import constants as C

ARROW_RGB = (20, 20, 20)
ARROW_EDGE_RGB = (255, 255, 255)
MARGIN_RGB = (255, 255, 255)
LABEL_RGB = (40, 40, 40)


@functools.lru_cache(maxsize=1)
def _font():
    from PIL import ImageFont

    return ImageFont.load_default()


def _arrow(draw, r: int, c: int, action: int, px: int, ox: int, oy: int) -> None:
    dr, dc = (int(v) for v in C.ACTION_DELTAS[action])
    cx, cy = ox + (c + 0.5) * px, oy + (r + 0.5) * px
    start = (cx + dc * 0.30 * px, cy + dr * 0.30 * px)
    tip = (cx + dc * 0.95 * px, cy + dr * 0.95 * px)
    head = 0.22 * px
    # the two back corners of the arrow head, perpendicular to the direction
    base = (tip[0] - dc * head, tip[1] - dr * head)
    left = (base[0] + dr * head * 0.7, base[1] - dc * head * 0.7)
    right = (base[0] - dr * head * 0.7, base[1] + dc * head * 0.7)
    width = max(2, px // 10)
    draw.line([start, base], fill=ARROW_EDGE_RGB, width=width + 2)
    draw.polygon([tip, left, right], fill=ARROW_EDGE_RGB)
    draw.line([start, base], fill=ARROW_RGB, width=width)
    inner = 0.75
    draw.polygon(
        [
            tip,
            (base[0] + (left[0] - base[0]) * inner, base[1] + (left[1] - base[1]) * inner),
            (base[0] + (right[0] - base[0]) * inner, base[1] + (right[1] - base[1]) * inner),
        ],
        fill=ARROW_RGB,
    )


def annotate(frame, others, cell_px: int, margin: bool = True):
    """A PIL image: `frame` [11*px, 15*px, 3] uint8 with arrows (and a coordinate margin).

    `others` is a sequence of objects with `pos` (row, col) and `intent`
    (an action id or None), e.g. `normjax.runtime.turns.Other`.
    """
    from PIL import Image, ImageDraw

    arr = np.asarray(frame)
    if arr.dtype != np.uint8 or arr.shape != (C.H * cell_px, C.W * cell_px, 3):
        raise ValueError(
            f"expected a uint8 frame of shape {(C.H * cell_px, C.W * cell_px, 3)}, got {arr.dtype} {arr.shape}"
        )
    m = max(14, cell_px // 2) if margin else 0
    img = Image.new("RGB", (arr.shape[1] + m, arr.shape[0] + m), MARGIN_RGB)
    img.paste(Image.fromarray(arr, mode="RGB"), (m, m))
    draw = ImageDraw.Draw(img)
    if margin:
        font = _font()
        for c in range(C.W):
            draw.text((m + (c + 0.5) * cell_px, m / 2), str(c), fill=LABEL_RGB, font=font, anchor="mm")
        for r in range(C.H):
            draw.text((m / 2, m + (r + 0.5) * cell_px), str(r), fill=LABEL_RGB, font=font, anchor="mm")
    for o in others:
        if o.intent is not None and 0 <= int(o.intent) < C.WAIT:
            _arrow(draw, int(o.pos[0]), int(o.pos[1]), int(o.intent), cell_px, m, m)
    return img


def annotated_png(frame, others, cell_px: int, margin: bool = True) -> bytes:
    """PNG bytes of `annotate(frame, others, cell_px)`."""
    buf = io.BytesIO()
    annotate(frame, others, cell_px, margin).save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


__all__ = ["annotate", "annotated_png"]
