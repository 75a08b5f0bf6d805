"""Rendering of world states to RGB images (SPEC 1, 2, 5; SPEC 11 "rendered frames").

`render_frame` draws one `WorldState` as a uint8 image [11*px, 15*px, 3] in pure
jnp: jittable (with `cell_px` static) and vmappable over batched states / params,
so a whole rollout renders in one call (`render_rollout`).  The picture follows the
paper's NormGym figures and is meant to be read by people and by vision-language
models alike:

* walls dark grey; floor light beige with thin grid lines; obstacles (tables,
  shelves) brown blocks; chairs a small seat shape on floor; the counter dark wood
  with a gold service bell; doors mint green with their letter A, B or C;
* zone Q tinted light blue and zone R light purple, each with a faint Q / R letter;
* active agents are discs in their group colour (orange, green, blue, SPEC 2); the
  newcomer (slot 0) carries a gold star with a dark outline; an agent on a chair
  is drawn smaller and lower so the chair stays visible (seated);
* a public sanction (SPEC 7, `agents.sanctioned`) is a bold red X over the agent;
* corner badges: a check mark (top left) once goal 1 is done (`leg == 1`), a "!"
  (top right) when the agent was charged a collision on the last step, and the
  service-timer digit (bottom right) while goal 1 is being served (`timer > 0`,
  SPEC 5).  Inactive agents are not drawn.

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
from normjax.state import WorldParams, WorldState
from normjax.tables import world_tables

# ---------------------------------------------------------------------------
# Colours (RGB)
# ---------------------------------------------------------------------------

WALL_RGB = (64, 64, 70)
FLOOR_RGB = (238, 228, 204)
FLOOR_LINE_RGB = (200, 188, 160)
OBSTACLE_RGB = (139, 94, 58)
OBSTACLE_EDGE_RGB = (92, 60, 34)
CHAIR_RGB = (168, 74, 52)
COUNTER_RGB = (84, 50, 26)
COUNTER_GRAIN_RGB = (112, 72, 40)
BELL_RGB = (250, 205, 60)
DOOR_RGB = (120, 205, 150)
DOOR_EDGE_RGB = (40, 120, 70)
DOOR_LETTER_RGB = (10, 60, 30)
ZONE_Q_RGB = (178, 212, 250)
ZONE_R_RGB = (214, 186, 242)
GROUP_RGB = ((255, 140, 0), (34, 160, 70), (40, 100, 230))  # orange, green, blue
AGENT_EDGE_RGB = (30, 30, 30)
STAR_RGB = (255, 200, 0)
STAR_EDGE_RGB = (25, 25, 25)
SANCTION_RGB = (220, 0, 0)
SANCTION_EDGE_RGB = (255, 255, 255)
BADGE_EDGE_RGB = (20, 20, 20)
BADGE_RGB = (255, 255, 255)
COLLISION_BADGE_RGB = (255, 225, 0)
CHECK_RGB = (0, 150, 40)
GLYPH_RGB = (0, 0, 0)

# Tile indices (one appearance per cell).
T_WALL, T_FLOOR, T_DOOR_A, T_DOOR_B, T_DOOR_C, T_CHAIR, T_COUNTER, T_OBSTACLE, T_Q, T_R = range(10)
N_TILES = 10

# ---------------------------------------------------------------------------
# 5x7 bitmap font (host constants, built at import)
# ---------------------------------------------------------------------------

_FONT_ROWS = {
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "Q": (".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "!": ("##", "##", "##", "##", "##", "..", "##"),
    "0": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
}
FONT: dict[str, np.ndarray] = {
    ch: np.array([[c == "#" for c in row] for row in rows], dtype=bool)
    for ch, rows in _FONT_ROWS.items()
}
GLYPH_H = 7


# ---------------------------------------------------------------------------
# Host-side geometry (numpy)
# ---------------------------------------------------------------------------

_SS = 4  # supersampling factor for anti-aliased sprite edges


def _subpixels(px: int) -> tuple[np.ndarray, np.ndarray]:
    """Subpixel centre coordinates (y, x) in cell units [0, 1), shape [px*ss, px*ss]."""
    t = (np.arange(px * _SS) + 0.5) / (px * _SS)
    return np.meshgrid(t, t, indexing="ij")


def _coverage(inside: np.ndarray, px: int) -> np.ndarray:
    """Boolean subpixel mask -> float coverage per pixel [px, px]."""
    return inside.reshape(px, _SS, px, _SS).mean(axis=(1, 3)).astype(np.float32)


def _seg_dist(y, x, p0, p1) -> np.ndarray:
    """Distance from points (y, x) to the segment p0-p1 (cell units)."""
    (y0, x0), (y1, x1) = p0, p1
    dy, dx = y1 - y0, x1 - x0
    t = np.clip(((y - y0) * dy + (x - x0) * dx) / (dy * dy + dx * dx), 0.0, 1.0)
    return np.hypot(y - (y0 + t * dy), x - (x0 + t * dx))


def _polyline_dist(y, x, points) -> np.ndarray:
    return np.min([_seg_dist(y, x, points[i], points[i + 1]) for i in range(len(points) - 1)], axis=0)


def _star_polygon(cy, cx, r_out, r_in) -> np.ndarray:
    """Vertices (y, x) of a 5-point star, one point straight up."""
    ang = np.pi / 5 * np.arange(10)
    rad = np.where(np.arange(10) % 2 == 0, r_out, r_in)
    return np.stack([cy - rad * np.cos(ang), cx + rad * np.sin(ang)], axis=1)


def _in_polygon(y, x, poly) -> np.ndarray:
    """Even-odd rule point-in-polygon test."""
    inside = np.zeros(y.shape, dtype=bool)
    n = len(poly)
    for i in range(n):
        (y0, x0), (y1, x1) = poly[i], poly[(i + 1) % n]
        crosses = (y0 > y) != (y1 > y)
        xi = x0 + (y - y0) * (x1 - x0) / np.where(y1 == y0, 1e-9, y1 - y0)
        inside ^= crosses & (x < xi)
    return inside


def _glyph_mask(ch: str, px: int, scale: int, top: int, left: int) -> np.ndarray:
    """A font glyph scaled by `scale`, placed at pixel (top, left) of a [px, px] mask."""
    g = np.kron(FONT[ch], np.ones((scale, scale), dtype=bool))
    out = np.zeros((px, px), dtype=bool)
    h, w = g.shape
    out[top : top + h, left : left + w] = g[: px - top, : px - left]
    return out


def _dilate(mask: np.ndarray, n: int) -> np.ndarray:
    """Grow a boolean mask by n pixels (square neighbourhood): bolder strokes."""
    out = mask.copy()
    for _ in range(n):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def _centered_glyph(ch: str, px: int, scale: int) -> np.ndarray:
    """A glyph centred in the cell; large scales get strokes thickened by scale // 4."""
    h, w = FONT[ch].shape[0] * scale, FONT[ch].shape[1] * scale
    return _dilate(_glyph_mask(ch, px, scale, (px - h) // 2, (px - w) // 2), scale // 4)


def _paint(tile: np.ndarray, mask: np.ndarray, rgb) -> None:
    """Blend colour `rgb` into a float tile [px, px, 3] with coverage `mask`."""
    a = mask.astype(np.float32)[..., None]
    tile[:] = tile * (1.0 - a) + np.asarray(rgb, np.float32) * a


def _rect(px: int, y0: float, y1: float, x0: float, x1: float) -> np.ndarray:
    """Coverage of the rectangle [y0, y1) x [x0, x1) in cell units."""
    y, x = _subpixels(px)
    return _coverage((y >= y0) & (y < y1) & (x >= x0) & (x < x1), px)


@functools.lru_cache(maxsize=None)
def _tiles(px: int) -> np.ndarray:
    """The ten cell appearances as float32 RGB tiles [N_TILES, px, px, 3]."""
    line = max(1, px // 24)  # grid line width in pixels
    y, x = _subpixels(px)
    tiles = np.zeros((N_TILES, px, px, 3), np.float32)

    def floor_tile(fill, edge):
        t = np.empty((px, px, 3), np.float32)
        t[:] = fill
        t[:line, :] = edge
        t[:, :line] = edge
        return t

    def darker(rgb, f=0.82):
        return tuple(int(v * f) for v in rgb)

    tiles[T_WALL] = WALL_RGB
    tiles[T_FLOOR] = floor_tile(FLOOR_RGB, FLOOR_LINE_RGB)

    # Doors: mint panel with a dark frame and the door's letter (SPEC 1: dA, dB, dC).
    frame = max(1, px // 12)
    letter_scale = max(1, px // 10)
    for t_idx, name in zip((T_DOOR_A, T_DOOR_B, T_DOOR_C), C.DOOR_NAMES):
        t = np.empty((px, px, 3), np.float32)
        t[:] = DOOR_EDGE_RGB
        t[frame : px - frame, frame : px - frame] = DOOR_RGB
        t[_centered_glyph(name, px, letter_scale)] = DOOR_LETTER_RGB
        tiles[t_idx] = t

    # Chair: a seat with a backrest and legs, on floor.
    t = floor_tile(FLOOR_RGB, FLOOR_LINE_RGB)
    chair = (
        _rect(px, 0.12, 0.30, 0.22, 0.78)  # backrest
        + _rect(px, 0.30, 0.46, 0.24, 0.32)  # back posts
        + _rect(px, 0.30, 0.46, 0.68, 0.76)
        + _rect(px, 0.46, 0.60, 0.17, 0.83)  # seat
        + _rect(px, 0.60, 0.87, 0.21, 0.30)  # legs
        + _rect(px, 0.60, 0.87, 0.70, 0.79)
    )
    _paint(t, np.clip(chair, 0, 1), CHAIR_RGB)
    tiles[T_CHAIR] = t

    # Counter: dark wood with grain lines and a gold service bell.
    t = np.empty((px, px, 3), np.float32)
    t[:] = COUNTER_RGB
    for fy in (0.2, 0.45, 0.7):
        t[int(fy * px) : int(fy * px) + line, :] = COUNTER_GRAIN_RGB
    bell = (((y - 0.62) ** 2 + (x - 0.5) ** 2 <= 0.24**2) & (y <= 0.62)) | (
        (y >= 0.62) & (y < 0.72) & (np.abs(x - 0.5) <= 0.32)
    )
    knob = (y - 0.32) ** 2 + (x - 0.5) ** 2 <= 0.06**2
    _paint(t, _coverage(bell | knob, px), BELL_RGB)
    tiles[T_COUNTER] = t

    # Obstacle (table / shelf): brown block with a darker rim.
    rim = max(1, px // 10)
    t = np.empty((px, px, 3), np.float32)
    t[:] = OBSTACLE_EDGE_RGB
    t[rim : px - rim, rim : px - rim] = OBSTACLE_RGB
    tiles[T_OBSTACLE] = t

    # Zones Q and R: tinted floor with a faint letter (SPEC 1 overlays).
    zone_scale = max(1, px // 16)
    for t_idx, rgb, name in ((T_Q, ZONE_Q_RGB, "Q"), (T_R, ZONE_R_RGB, "R")):
        t = floor_tile(rgb, darker(rgb))
        t[_centered_glyph(name, px, zone_scale)] = darker(rgb, 0.72)
        tiles[t_idx] = t
    return tiles


@functools.lru_cache(maxsize=None)
def _sprites(px: int) -> dict[str, np.ndarray]:
    """Coverage masks [px, px] (float32 in [0, 1]) of the agent sprites and badges."""
    y, x = _subpixels(px)
    edge = max(1.0, px / 20) / px  # outline width in cell units
    s: dict[str, np.ndarray] = {}

    # Agent disc with a dark rim, and the newcomer's star with a dark outline.  A
    # seated agent (on a chair) is drawn smaller and lower so the chair shows.
    for pose, cy, r in (("", 0.5, 0.36), ("seated_", 0.56, 0.27)):
        d = np.hypot(y - cy, x - 0.5)
        s[pose + "disc_edge"] = _coverage(d <= r + edge, px)
        s[pose + "disc"] = _coverage(d <= r, px)
        f = r / 0.36
        star = _star_polygon(cy + 0.03 * f, 0.5, 0.29 * f, 0.12 * f)
        closed = np.concatenate([star, star[:1]])
        inside = _in_polygon(y, x, star)
        s[pose + "star_edge"] = _coverage(inside | (_polyline_dist(y, x, closed) <= 1.3 * edge), px)
        s[pose + "star"] = _coverage(inside, px)

    # Sanction: bold red X with a white outline.
    half = 0.075
    a, b = 0.14, 0.86
    dx = np.minimum(_seg_dist(y, x, (a, a), (b, b)), _seg_dist(y, x, (a, b), (b, a)))
    s["x_edge"] = _coverage(dx <= half + edge, px)
    s["x"] = _coverage(dx <= half, px)

    # Badges: boxes in three corners, glyphs inside.
    gs = max(1, px // 16)  # glyph scale
    pad = gs // 2  # padding around the glyph, inside a 1-pixel border
    bh = GLYPH_H * gs + 2 * pad + 2
    bw_digit = 5 * gs + 2 * pad + 2
    bw_bang = 2 * gs + 2 * pad + 2

    def box(top, left, h, w):
        outer = np.zeros((px, px), np.float32)
        inner = np.zeros((px, px), np.float32)
        outer[top : top + h, left : left + w] = 1
        inner[top + 1 : top + h - 1, left + 1 : left + w - 1] = 1
        return outer, inner

    # Bottom-right: service-timer digit.
    top, left = px - bh, px - bw_digit
    s["digit_box_edge"], s["digit_box"] = box(top, left, bh, bw_digit)
    s["digits"] = np.stack(
        [_glyph_mask(str(k), px, gs, top + 1 + pad, left + 1 + pad) for k in range(10)]
    ).astype(np.float32)
    # Top-right: collision "!".
    left = px - bw_bang
    s["bang_box_edge"], s["bang_box"] = box(0, left, bh, bw_bang)
    s["bang"] = _glyph_mask("!", px, gs, 1 + pad, left + 1 + pad).astype(np.float32)
    # Top-left: goal-1 check mark, an anti-aliased thick polyline in a square box.
    cw = bh
    s["check_box_edge"], s["check_box"] = box(0, 0, bh, cw)
    u = lambda v: v / px  # noqa: E731
    pts = [(u(bh * 0.52), u(cw * 0.20)), (u(bh * 0.74), u(cw * 0.42)), (u(bh * 0.28), u(cw * 0.82))]
    s["check"] = _coverage(_polyline_dist(y, x, pts) <= max(0.9, 0.55 * gs) / px, px)
    return s


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
    """Per-cell tile index [H, W] and chair mask [H, W] of the episode's layout (SPEC 1)."""
    tab = world_tables()
    lid = params.layout_id
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


def render_frame(state: WorldState, params: WorldParams, cell_px: int = 32) -> jax.Array:
    """Draw one world state as a uint8 RGB image [11*cell_px, 15*cell_px, 3].

    Pure jnp: jit with `cell_px` static (`render_frame_jit`) and vmap over batched
    `state` / `params`.  The layout comes from `world_tables()` at
    `params.layout_id`; positions are (row, col) with row 0 on top (SPEC 1).  The
    legend is given in the module docstring.
    """
    px = int(cell_px)
    tiles = jnp.asarray(_tiles(px))
    sp = _sprites(px)
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

    img = jnp.clip(jnp.round(img), 0, 255).astype(jnp.uint8)
    return img.transpose(0, 2, 1, 3, 4).reshape(C.H * px, C.W * px, 3)


render_frame_jit = jax.jit(render_frame, static_argnames="cell_px")


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
    """Write one frame as a PNG (SPEC 11: frames may sit beside a trajectory, named by step)."""
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
    images[0].save(
        path, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0
    )
    return path


def plot_state(state: WorldState, params: WorldParams, ax=None, title=None, cell_px: int = 32):
    """Show a state with matplotlib, ticks labelled by row and column (SPEC 1: (row, col)).

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
