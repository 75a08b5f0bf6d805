"""Rendering of world states to RGB images (docs/world.md §1, 2, 5; docs/world.md §12 "rendered frames").

`render_frame` draws one `WorldState` as a uint8 image [11*px, 15*px, 3] in pure
jnp: jittable (with `cell_px` static) and vmappable over batched states / params,
so a whole rollout renders in one call (`render_rollout`).  The picture follows the
paper's NormGym figures and is meant to be read by people and by vision-language
models alike:

* walls dark grey; floor light beige with thin grid lines; obstacles (tables,
  shelves) brown blocks; chairs a small seat shape on floor; the counter dark wood
  with a gold service bell; doors mint green with their letter A, B or C;
* zone Q tinted light blue and zone R light purple, each with a faint Q / R letter;
* active agents are discs in their group colour (orange, green, blue, docs/world.md §2); the
  newcomer (slot 0) carries a gold star with a dark outline; an agent on a chair
  is drawn smaller and lower so the chair stays visible (seated);
* a public sanction (docs/world.md §7, `agents.sanctioned`) is a bold red X over the agent;
* corner badges: a check mark (top left) once goal 1 is done (`leg == 1`), a "!"
  (top right) when the agent was charged a collision on the last step, and the
  service-timer digit (bottom right) while goal 1 is being served (`timer > 0`,
  docs/world.md §5), and a letter (bottom left) on background agents that have a
  distractor habit (D = same_exit_door, W = move1_wait1, docs/world.md §8.5) unless
  ``show_habits=False``: habits are hidden state (the community cannot see them), so
  the frames a VLM newcomer sees (`normjax.runtime.batch.render`) leave them out.
  Inactive agents are not drawn.

Implementation: sprite coverage masks (anti-aliased by 4x4 supersampling) and the
ten cell tiles are built once per cell size on the host with numpy; the jitted
part only gathers tiles per cell and blends sprites with `jnp` arithmetic over an
[11, 15, px, px] tile array, with no Python branching on traced values.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.interop.sprites import (
    AGENT_EDGE_RGB,
    BADGE_EDGE_RGB,
    BADGE_RGB,
    CHECK_RGB,
    COLLISION_BADGE_RGB,
    GLYPH_RGB,
    GROUP_RGB,
    SANCTION_EDGE_RGB,
    SANCTION_RGB,
    STAR_EDGE_RGB,
    STAR_RGB,
    T_CHAIR,
    T_COUNTER,
    T_DOOR_A,
    T_DOOR_B,
    T_DOOR_C,
    T_FLOOR,
    T_OBSTACLE,
    T_Q,
    T_R,
    T_WALL,
    agent_sprites,
    cell_tiles,
)
from normjax.layouts.tables import world_tables
from normjax.world.state import WorldParams, WorldState

# ---------------------------------------------------------------------------
# Device rendering (jnp)
# ---------------------------------------------------------------------------


def _blend(img, cond, mask, rgb):
    """img [H, W, px, px, 3] <- rgb where cond [H, W] (x coverage mask [.., px, px])."""
    a = (cond.astype(jnp.float32)[:, :, None, None] * jnp.asarray(mask))[..., None]
    rgb = jnp.asarray(rgb, jnp.float32)
    if rgb.ndim == 3:  # per-cell colours [H, W, 3]
        rgb = rgb[:, :, None, None, :]
    return img * (1.0 - a) + rgb * a


def _cell_layout(params: WorldParams):
    """Per-cell tile index [H, W] and chair mask [H, W] of the episode's layout (docs/world.md §1)."""
    tab = world_tables()
    lid = params.layout
    kind = tab.kind[lid].astype(jnp.int32)
    zq, zr, doors = tab.zone_q[lid], tab.zone_r[lid], tab.doors[lid]
    rows = jnp.arange(C.H)[:, None]
    cols = jnp.arange(C.W)[None, :]
    door_idx = jnp.full((C.H, C.W), T_DOOR_A, jnp.int32)
    for d, t_idx in enumerate((T_DOOR_A, T_DOOR_B, T_DOOR_C)):
        at = (rows == doors[d, 0]) & (cols == doors[d, 1])
        door_idx = jnp.where(at, t_idx, door_idx)
    by_kind = jnp.array([T_WALL, T_FLOOR, T_DOOR_A, T_CHAIR, T_COUNTER, T_OBSTACLE], jnp.int32)
    idx = by_kind[kind]
    idx = jnp.where(kind == C.DOOR, door_idx, idx)
    idx = jnp.where((kind == C.FLOOR) & zq, T_Q, idx)
    idx = jnp.where((kind == C.FLOOR) & zr, T_R, idx)
    return idx, kind == C.CHAIR


def render_frame(state: WorldState, params: WorldParams, cell_px: int = 32, show_habits: bool = True) -> jax.Array:
    """Draw one world state as a uint8 RGB image [11*cell_px, 15*cell_px, 3].

    Pure jnp: jit with `cell_px` static (`render_frame_jit`) and vmap over batched
    `state` / `params`.  The layout comes from `world_tables()` at
    `params.layout_id`; positions are (row, col) with row 0 on top (docs/world.md §1).  The
    legend is given in the module docstring; `show_habits` (a Python bool) draws the
    distractor-habit badges, a researcher's view of hidden state.
    """
    px = int(cell_px)
    tiles = jnp.asarray(cell_tiles(px))
    sp = agent_sprites(px)
    tile_idx, chair = _cell_layout(params)
    img = tiles[tile_idx]  # [H, W, px, px, 3] float32

    ag = state.agents
    rows = jnp.arange(C.H)[None, :, None]
    cols = jnp.arange(C.W)[None, None, :]
    here = ag.active[:, None, None] & (ag.pos[:, 0, None, None] == rows) & (ag.pos[:, 1, None, None] == cols)
    occupied = here.any(axis=0)  # [H, W]
    k = jnp.argmax(here, axis=0)  # the (first) agent on each cell
    slot = jnp.arange(ag.active.shape[0])
    newcomer = occupied & (slot[k] == 0)
    group_rgb = jnp.asarray(GROUP_RGB, jnp.float32)[jnp.clip(ag.group[k], 0, C.N_GROUPS - 1)]
    sanctioned = occupied & ag.sanctioned[k]
    collided = occupied & ag.collided[k]
    leg1 = occupied & (ag.leg[k] == 1)
    timer = ag.timer[k]
    serving = occupied & (timer > 0)
    habit = jnp.where(occupied & (ag.habit[k] > 0) & (ag.habit[k] < len(C.HABIT_NAMES)), ag.habit[k], 0)

    def pose(name):  # [H, W, px, px]: the seated variant on chairs
        return jnp.where(chair[:, :, None, None], sp["seated_" + name], sp[name])

    img = _blend(img, occupied, pose("disc_edge"), AGENT_EDGE_RGB)
    img = _blend(img, occupied, pose("disc"), group_rgb)
    img = _blend(img, newcomer, pose("star_edge"), STAR_EDGE_RGB)
    img = _blend(img, newcomer, pose("star"), STAR_RGB)
    img = _blend(img, sanctioned, sp["x_edge"], SANCTION_EDGE_RGB)
    img = _blend(img, sanctioned, sp["x"], SANCTION_RGB)
    img = _blend(img, leg1, sp["check_box_edge"], BADGE_EDGE_RGB)
    img = _blend(img, leg1, sp["check_box"], BADGE_RGB)
    img = _blend(img, leg1, sp["check"], CHECK_RGB)
    img = _blend(img, collided, sp["bang_box_edge"], BADGE_EDGE_RGB)
    img = _blend(img, collided, sp["bang_box"], COLLISION_BADGE_RGB)
    img = _blend(img, collided, sp["bang"], GLYPH_RGB)
    digit = jnp.asarray(sp["digits"])[jnp.clip(timer, 0, 9)]  # [H, W, px, px]
    img = _blend(img, serving, sp["digit_box_edge"], BADGE_EDGE_RGB)
    img = _blend(img, serving, sp["digit_box"], BADGE_RGB)
    img = _blend(img, serving, digit, GLYPH_RGB)
    if show_habits:
        letter = jnp.asarray(sp["habits"])[habit]  # [H, W, px, px]
        img = _blend(img, habit > 0, sp["habit_box_edge"], BADGE_EDGE_RGB)
        img = _blend(img, habit > 0, sp["habit_box"], BADGE_RGB)
        img = _blend(img, habit > 0, letter, GLYPH_RGB)

    img = jnp.clip(jnp.round(img), 0, 255).astype(jnp.uint8)
    return img.transpose(0, 2, 1, 3, 4).reshape(C.H * px, C.W * px, 3)


render_frame_jit = jax.jit(render_frame, static_argnames=("cell_px", "show_habits"))


@functools.partial(jax.jit, static_argnames="cell_px")
def _render_rollout(states, params, cell_px):
    return jax.vmap(lambda s: render_frame(s, params, cell_px))(states)


def render_rollout(states: WorldState, params: WorldParams, cell_px: int = 32) -> jax.Array:
    """Frames [T, 11*cell_px, 15*cell_px, 3] of a time-stacked WorldState (leading axis T).

    `params` is shared by all steps (one episode); the call is jitted once per cell size.
    """
    return _render_rollout(states, params, int(cell_px))


# ---------------------------------------------------------------------------
# Host helpers: PIL images, PNG / GIF files, matplotlib
# ---------------------------------------------------------------------------


def frame_to_pil(frame):
    """A uint8 frame [h, w, 3] (numpy or jax) as a PIL RGB image."""
    from PIL import Image

    arr = np.asarray(frame)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[-1] != 3:
        raise ValueError(f"expected a uint8 [h, w, 3] frame, got {arr.dtype} {arr.shape}")
    return Image.fromarray(arr, mode="RGB")


def save_png(frame, path) -> Path:
    """Write one frame as a PNG (docs/world.md §12: frames may sit beside a trajectory, named by step)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame_to_pil(frame).save(path, format="PNG")
    return path


def save_gif(frames, path, fps: float = 4) -> Path:
    """Write frames [T, h, w, 3] uint8 (numpy or jax) as a looping animated GIF.

    Each frame is quantised to its own adaptive palette.  GIF viewers show
    consecutive identical frames as one longer frame (Pillow merges them), so a
    reader may count fewer frames than T when the world did not change.
    """
    from PIL import Image

    arr = np.asarray(frames)
    if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"expected uint8 frames [T, h, w, 3], got {arr.dtype} {arr.shape}")
    if len(arr) == 0:
        raise ValueError("save_gif needs at least one frame")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(f, mode="RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT) for f in arr]
    duration = max(1, int(round(1000.0 / fps)))
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0)
    return path


def plot_state(state: WorldState, params: WorldParams, ax=None, title=None, cell_px: int = 32):
    """Show a state with matplotlib, ticks labelled by row and column (docs/world.md §1: (row, col)).

    Returns the Axes.  The default title gives the step index t.
    """
    import matplotlib.pyplot as plt

    frame = np.asarray(render_frame_jit(state, params, cell_px=cell_px))
    if ax is None:
        _, ax = plt.subplots(figsize=(C.W * 0.5, C.H * 0.5 + 0.4))
    ax.imshow(frame, extent=(-0.5, C.W - 0.5, C.H - 0.5, -0.5), interpolation="nearest")
    ax.set_xticks(range(C.W))
    ax.set_yticks(range(C.H))
    ax.set_xlabel("col")
    ax.set_ylabel("row")
    ax.tick_params(labelsize=7, length=2)
    ax.set_title(title if title is not None else f"t = {int(np.asarray(state.t))}")
    return ax


__all__ = [
    "render_frame",
    "render_frame_jit",
    "render_rollout",
    "frame_to_pil",
    "save_png",
    "save_gif",
    "plot_state",
]
