"""Tests of normjax.interop.render (frames of world states, GIF / PNG export, matplotlib helper)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.interop import render as R
from normjax.interop import sprites as S
from normjax.layouts.tables import host_tables, layout_id
from normjax.world.state import empty_state, make_params

PX = 16  # most tests render small frames
CAFE = layout_id("cafe")
PARAMS = make_params(CAFE)
RENDER = R.render_frame_jit  # one module-level jitted renderer (cell_px static)

# Free cells of maps/cafe.txt: plain floor, zone Q, zone R, a chair.
FLOOR_CELLS = [(5, 2), (5, 4), (5, 9), (9, 3), (1, 2), (4, 6)]
Q_CELL = (6, 6)
R_CELL = (2, 11)
CHAIR_CELL = (2, 2)


def make_state(agents, t=0):
    """empty_state(10) with agents placed by hand: {slot: dict(pos=(r, c), group=g, ...)}."""
    state = empty_state(10)
    ag = state.agents
    upd = {name: getattr(ag, name) for name in ("pos", "active", "group", "timer", "leg", "sanctioned", "collided")}
    for slot, spec in agents.items():
        upd["pos"] = upd["pos"].at[slot].set(jnp.asarray(spec["pos"], jnp.int32))
        upd["active"] = upd["active"].at[slot].set(spec.get("active", True))
        for name in ("group", "timer", "leg", "sanctioned", "collided"):
            if name in spec:
                upd[name] = upd[name].at[slot].set(spec[name])
    return state.replace(t=jnp.int32(t), agents=ag.replace(**upd))


def cell(frame, rc, px=PX):
    r, c = rc
    return np.asarray(frame)[r * px : (r + 1) * px, c * px : (c + 1) * px]


def has_colour(tile, rgb):
    return bool(np.all(tile == np.asarray(rgb, np.uint8), axis=-1).any())


SCENE = make_state(
    {
        0: dict(pos=FLOOR_CELLS[0], group=0),  # newcomer
        1: dict(pos=FLOOR_CELLS[1], group=0),
        2: dict(pos=FLOOR_CELLS[2], group=1, sanctioned=True),
        3: dict(pos=FLOOR_CELLS[3], group=2),
        4: dict(pos=FLOOR_CELLS[4], group=1, timer=2),
        5: dict(pos=FLOOR_CELLS[5], group=2, collided=True, leg=1),
        6: dict(pos=(5, 7), group=1, active=False),  # inactive: not drawn
    },
    t=3,
)
EMPTY = make_state({})


@pytest.fixture(scope="module")
def scene16():
    return np.asarray(RENDER(SCENE, PARAMS, cell_px=PX))


@pytest.fixture(scope="module")
def empty16():
    return np.asarray(RENDER(EMPTY, PARAMS, cell_px=PX))


@pytest.mark.parametrize("px", [16, 32])
def test_shape_and_dtype(px):
    frame = RENDER(SCENE, PARAMS, cell_px=px)
    assert frame.shape == (C.H * px, C.W * px, 3)
    assert frame.dtype == jnp.uint8


def test_jit_equals_eager(scene16):
    eager = np.asarray(R.render_frame(SCENE, PARAMS, cell_px=PX))
    np.testing.assert_array_equal(eager, scene16)


def test_vmap_over_states_and_layouts(scene16):
    other = make_state({0: dict(pos=(5, 5), group=2, leg=1)})
    bank = make_params(layout_id("bank"))
    states = jax.tree.map(lambda a, b: jnp.stack([a, b]), SCENE, other)
    params = jax.tree.map(lambda a, b: jnp.stack([a, b]), PARAMS, bank)
    batch = jax.jit(jax.vmap(lambda s, p: R.render_frame(s, p, PX)))(states, params)
    assert batch.shape == (2, C.H * PX, C.W * PX, 3)
    np.testing.assert_array_equal(np.asarray(batch[0]), scene16)
    np.testing.assert_array_equal(np.asarray(batch[1]), np.asarray(RENDER(other, bank, cell_px=PX)))


def test_render_rollout_matches_frames(scene16, empty16):
    states = jax.tree.map(lambda a, b: jnp.stack([a, b, a]), SCENE, EMPTY)
    frames = np.asarray(R.render_rollout(states, PARAMS, cell_px=PX))
    assert frames.shape == (3, C.H * PX, C.W * PX, 3)
    np.testing.assert_array_equal(frames[0], scene16)
    np.testing.assert_array_equal(frames[1], empty16)
    np.testing.assert_array_equal(frames[2], scene16)


def test_newcomer_star_and_group_colours(scene16):
    assert has_colour(cell(scene16, FLOOR_CELLS[0]), S.STAR_RGB)
    assert has_colour(cell(scene16, FLOOR_CELLS[0]), S.STAR_EDGE_RGB)
    # Background agents carry no star; each shows its group colour.
    for rc, group in ((FLOOR_CELLS[1], 0), (FLOOR_CELLS[2], 1), (FLOOR_CELLS[3], 2)):
        tile = cell(scene16, rc)
        assert has_colour(tile, S.GROUP_RGB[group])
        assert not has_colour(tile, S.STAR_RGB)


def test_sanction_x(scene16):
    assert has_colour(cell(scene16, FLOOR_CELLS[2]), S.SANCTION_RGB)
    for rc in (FLOOR_CELLS[0], FLOOR_CELLS[1], FLOOR_CELLS[3]):
        assert not has_colour(cell(scene16, rc), S.SANCTION_RGB)


def test_badges(scene16):
    timer = cell(scene16, FLOOR_CELLS[4])
    assert has_colour(timer, S.GLYPH_RGB) and has_colour(timer, S.BADGE_RGB)
    both = cell(scene16, FLOOR_CELLS[5])
    assert has_colour(both, S.COLLISION_BADGE_RGB) and has_colour(both, S.CHECK_RGB)
    plain = cell(scene16, FLOOR_CELLS[3])
    assert not has_colour(plain, S.COLLISION_BADGE_RGB) and not has_colour(plain, S.CHECK_RGB)
    # Different timer values draw different digits.
    s3 = make_state({4: dict(pos=FLOOR_CELLS[4], group=1, timer=3)})
    assert not np.array_equal(cell(RENDER(s3, PARAMS, cell_px=PX), FLOOR_CELLS[4]), timer)


def test_inactive_agent_not_drawn(scene16, empty16):
    np.testing.assert_array_equal(cell(scene16, (5, 7)), cell(empty16, (5, 7)))
    only_inactive = make_state({3: dict(pos=(5, 7), group=1, active=False, sanctioned=True)})
    np.testing.assert_array_equal(np.asarray(RENDER(only_inactive, PARAMS, cell_px=PX)), empty16)


def test_cells_by_kind(empty16):
    tab = host_tables()
    doors = tab["doors"][CAFE]
    wall = cell(empty16, (0, 0))
    door_tiles = [cell(empty16, tuple(d)) for d in doors]
    for tile in door_tiles:
        assert not np.array_equal(tile, wall)
    # The three doors carry different letters.
    assert not np.array_equal(door_tiles[0], door_tiles[1])
    assert not np.array_equal(door_tiles[1], door_tiles[2])
    mean = lambda rc: cell(empty16, rc).reshape(-1, 3).astype(float).mean(0)
    floor, q, r = mean((5, 5)), mean(Q_CELL), mean(R_CELL)
    assert tab["zone_q"][CAFE][Q_CELL] and tab["zone_r"][CAFE][R_CELL]
    assert np.abs(q - floor).max() > 20 and np.abs(r - floor).max() > 20
    assert np.abs(q - r).max() > 20
    assert not np.array_equal(cell(empty16, CHAIR_CELL), cell(empty16, (5, 5)))


def test_seated_agent_keeps_chair_visible(empty16):
    seated = np.asarray(RENDER(make_state({2: dict(pos=CHAIR_CELL, group=2)}), PARAMS, cell_px=PX))
    tile = cell(seated, CHAIR_CELL)
    assert has_colour(tile, S.GROUP_RGB[2]) and has_colour(tile, S.CHAIR_RGB)


def test_save_png_and_gif(tmp_path, scene16, empty16):
    from PIL import Image, ImageSequence

    png = R.save_png(scene16, tmp_path / "f.png")
    np.testing.assert_array_equal(np.asarray(Image.open(png).convert("RGB")), scene16)
    frames = np.stack([scene16, empty16, scene16[::-1].copy()])
    gif = R.save_gif(jnp.asarray(frames), tmp_path / "sub" / "roll.gif", fps=5)
    with Image.open(gif) as im:
        assert im.format == "GIF"
        seq = [f.convert("RGB") for f in ImageSequence.Iterator(im)]
    assert len(seq) == 3
    assert seq[0].size == (C.W * PX, C.H * PX)
    with pytest.raises(ValueError):
        R.save_gif(frames.astype(np.float32), tmp_path / "bad.gif")


def test_plot_state_returns_axes():
    import matplotlib.pyplot as plt

    ax = R.plot_state(SCENE, PARAMS, title="cafe", cell_px=PX)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert ax.get_title() == "cafe"
    assert [int(t) for t in ax.get_xticks()] == list(range(C.W))
    assert [int(t) for t in ax.get_yticks()] == list(range(C.H))
    plt.close(ax.figure)
