"""Host-side art for the renderer: colours, the ten cell tiles and the agent
sprites as anti-aliased coverage masks (numpy, built once per cell size).

`normjax.interop.render` only gathers and blends these inside jit.
"""

from __future__ import annotations

import functools

import numpy as np

from normjax import constants as C

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
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "##.##", "#...#"),
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
    ch: np.array([[c == "#" for c in row] for row in rows], dtype=bool) for ch, rows in _FONT_ROWS.items()
}
GLYPH_H = 7
HABIT_GLYPHS = ("", "D", "W")  # badge letter per habit code (normjax.constants.HABIT_NAMES)


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


@functools.cache
def cell_tiles(px: int) -> np.ndarray:
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

    # Doors: mint panel with a dark frame and the door's letter (docs/world.md §1: dA, dB, dC).
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

    # Zones Q and R: tinted floor with a faint letter (docs/world.md §1 overlays).
    zone_scale = max(1, px // 16)
    for t_idx, rgb, name in ((T_Q, ZONE_Q_RGB, "Q"), (T_R, ZONE_R_RGB, "R")):
        t = floor_tile(rgb, darker(rgb))
        t[_centered_glyph(name, px, zone_scale)] = darker(rgb, 0.72)
        tiles[t_idx] = t
    return tiles


@functools.cache
def agent_sprites(px: int) -> dict[str, np.ndarray]:
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
    s["digits"] = np.stack([_glyph_mask(str(k), px, gs, top + 1 + pad, left + 1 + pad) for k in range(10)]).astype(
        np.float32
    )
    # Top-right: collision "!".
    left = px - bw_bang
    s["bang_box_edge"], s["bang_box"] = box(0, left, bh, bw_bang)
    s["bang"] = _glyph_mask("!", px, gs, 1 + pad, left + 1 + pad).astype(np.float32)
    # Bottom-left: distractor habit (docs/world.md §8.5), its letter by habit code
    # (none, D = same_exit_door, W = move1_wait1).
    top = px - bh
    s["habit_box_edge"], s["habit_box"] = box(top, 0, bh, bw_digit)
    s["habits"] = np.stack(
        [np.zeros((px, px), bool)] + [_glyph_mask(ch, px, gs, top + 1 + pad, 1 + pad) for ch in HABIT_GLYPHS[1:]]
    ).astype(np.float32)
    # Top-left: goal-1 check mark, an anti-aliased thick polyline in a square box.
    cw = bh
    s["check_box_edge"], s["check_box"] = box(0, 0, bh, cw)
    u = lambda v: v / px
    pts = [(u(bh * 0.52), u(cw * 0.20)), (u(bh * 0.74), u(cw * 0.42)), (u(bh * 0.28), u(cw * 0.82))]
    s["check"] = _coverage(_polyline_dist(y, x, pts) <= max(0.9, 0.55 * gs) / px, px)
    return s
