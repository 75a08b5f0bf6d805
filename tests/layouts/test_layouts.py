"""Tests of the ten layouts, the layout validator and the per-layout norm features
(docs/world.md §1 and 7; normjax/layout.py)."""

import numpy as np
import pytest

from normjax import constants as C
from normjax.layouts import (
    LAYOUTS,
    QUEUE_NAMES,
    QUEUE_SHAPES,
    Layout,
    LayoutError,
    get_layout,
    load_layout,
    parse_layout,
    validate_grid,
)

EXPECTED_ORDER = (
    "cafe",
    "bank",
    "barbershop",
    "clothing_store",
    "grocery_store",
    "hospital",
    "library",
    "movie_theater",
    "pharmacy",
    "post_office",
)

EXPECTED_QUEUE_ORDER = (
    "bend_right_1",
    "bend_right_2",
    "bend_left_1",
    "bend_left_2",
    "zigzag_right_1",
    "zigzag_right_2",
    "zigzag_left_1",
    "zigzag_left_2",
    "staircase_right",
    "staircase_left",
    "l_shape_right",
    "l_shape_left",
    "square_right",
    "square_left",
    "edge_queue_left",
    "edge_queue_right",
)

UP, DOWN, LEFT, RIGHT = (-1, 0), (1, 0), (0, -1), (0, 1)


def cafe_lines() -> list[str]:
    return list(load_layout("cafe").grid)


def edit(lines, *changes):
    """Copy of `lines` with (row, col, char) changes applied."""
    out = [list(line) for line in lines]
    for r, c, ch in changes:
        out[r][c] = ch
    return ["".join(row) for row in out]


def cells_of(lay: Layout, ch: str):
    return [(r, c) for r, line in enumerate(lay.grid) for c, x in enumerate(line) if x == ch]


# ---------------------------------------------------------------------------
# The ten shipped layouts
# ---------------------------------------------------------------------------


def test_layout_names_and_order():
    assert LAYOUTS == EXPECTED_ORDER


@pytest.mark.parametrize("name", LAYOUTS)
def test_layout_parses_and_validates(name):
    lay = load_layout(name)
    assert lay.name == name
    assert len(lay.grid) == C.H and all(len(line) == C.W for line in lay.grid)
    validate_grid(name, lay.grid)  # does not raise
    assert lay.kind.shape == (C.H, C.W) and lay.kind.dtype == np.int8
    assert lay.zone_q.any() and lay.zone_r.any()
    assert not (lay.zone_q & lay.zone_r).any()
    assert lay.walkable.dtype == bool
    assert lay.doors.shape == (3, 2) and lay.door_inward.shape == (3, 2)
    assert lay.chairs.shape == (lay.n_chairs, 2)


@pytest.mark.parametrize("name", LAYOUTS)
def test_kind_codes_match_legend(name):
    lay = load_layout(name)
    for r, line in enumerate(lay.grid):
        for c, ch in enumerate(line):
            assert lay.kind[r, c] == C.LEGEND[ch]
            assert lay.zone_q[r, c] == (ch == "q")
            assert lay.zone_r[r, c] == (ch == "r")
            assert lay.walkable[r, c] == (ch in ".qrh")


@pytest.mark.parametrize("name", LAYOUTS)
def test_doors_counter_service(name):
    lay = load_layout(name)
    (ra, ca), (rb, cb), (rc, cc) = lay.doors.tolist()
    assert ca == 0 and rb == C.H - 1 and cc == C.W - 1
    assert lay.door_inward.tolist() == [[ra, 1], [C.H - 2, cb], [rc, C.W - 2]]
    for i, name_ch in enumerate("ABC"):
        assert lay.grid[lay.doors[i][0]][lay.doors[i][1]] == name_ch
        r, c = lay.door_inward[i]
        assert lay.walkable[r, c] and lay.kind[r, c] == C.FLOOR
    kr, kc = lay.counter
    assert kr == 0 and lay.kind[kr, kc] == C.COUNTER
    assert lay.service.tolist() == [1, kc]


def test_cafe_spot_checks():
    lay = load_layout("cafe")
    assert lay.kind[0, 7] == C.COUNTER
    assert lay.kind[6, 0] == C.DOOR
    assert lay.kind[3, 2] == C.OBSTACLE
    assert lay.kind[2, 2] == C.CHAIR
    assert lay.kind[6, 7] == C.FLOOR and lay.zone_q[6, 7]
    assert lay.kind[2, 11] == C.FLOOR and lay.zone_r[2, 11]
    assert lay.ascii() == "\n".join(lay.grid)


def test_parse_accepts_trailing_newline_and_crlf():
    text = "\n".join(cafe_lines())
    a = parse_layout("cafe", text + "\n")
    b = parse_layout("cafe", text.replace("\n", "\r\n") + "\r\n")
    assert a.grid == b.grid == tuple(cafe_lines())


def test_layouts_differ_from_the_cafe():
    """Unseen layouts must really differ: counter, door or zone placement."""
    cafe = load_layout("cafe")
    for name in LAYOUTS[1:]:
        lay = load_layout(name)
        assert lay.grid != cafe.grid
    keys = {(tuple(lay.counter), tuple(map(tuple, lay.doors))) for lay in map(load_layout, LAYOUTS)}
    assert len(keys) == len(LAYOUTS)


def test_arrays_are_read_only():
    lay = load_layout("cafe")
    with pytest.raises(ValueError):
        lay.kind[1, 1] = C.WALL


def test_unknown_layout_name():
    with pytest.raises(ValueError, match="unknown layout 'airport'") as info:
        get_layout("airport")
    for name in LAYOUTS:
        assert name in str(info.value)
    with pytest.raises(ValueError, match="valid layouts"):
        load_layout("airport")
    assert get_layout("bank") is load_layout("bank")


# ---------------------------------------------------------------------------
# Regions, chairs, seat orders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUTS)
def test_region_grid_follows_the_inequalities(name):
    lay = load_layout(name)
    row_a, col_b = lay.doors[0][0], lay.doors[1][1]
    for r in range(C.H):
        for c in range(C.W):
            if r < row_a and c < col_b:
                want = C.TL
            elif r > row_a and c < col_b:
                want = C.BL
            elif r > row_a and c > col_b:
                want = C.BR
            else:
                want = -1
            assert lay.region[r, c] == want, (r, c)


@pytest.mark.parametrize("name", LAYOUTS)
def test_chairs_regions(name):
    lay = load_layout(name)
    assert [tuple(x) for x in lay.chairs.tolist()] == cells_of(lay, "h")  # row-major
    regions = lay.region[lay.chairs[:, 0], lay.chairs[:, 1]]
    assert (regions >= 0).all()
    for region in (C.TL, C.BL, C.BR):
        assert (regions == region).sum() >= 2


def test_cafe_chair_regions_by_hand():
    lay = load_layout("cafe")
    assert lay.region[2, 2] == C.TL
    assert lay.region[7, 3] == C.BL
    assert lay.region[7, 9] == C.BR
    assert lay.region[6, 3] == -1  # dA's row
    assert lay.region[8, 7] == -1  # dB's column
    assert lay.region[2, 11] == -1  # top-right quadrant


@pytest.mark.parametrize("name", LAYOUTS)
def test_seat_orders(name):
    lay = load_layout(name)
    l2r, r2l = lay.seat_order.tolist()
    chairs = sorted(map(tuple, lay.chairs.tolist()))
    assert sorted(map(tuple, l2r)) == chairs
    assert sorted(map(tuple, r2l)) == chairs
    assert [tuple(x) for x in l2r] == sorted(chairs, key=lambda rc: (rc[1], rc[0]))
    assert [tuple(x) for x in r2l] == sorted(chairs, key=lambda rc: (-rc[1], rc[0]))


def test_cafe_seat_order_by_hand():
    l2r, r2l = load_layout("cafe").seat_order.tolist()
    assert l2r[:6] == [[2, 2], [4, 2], [2, 3], [4, 3], [7, 3], [8, 3]]
    assert r2l[:4] == [[7, 11], [8, 11], [7, 9], [8, 9]]


# ---------------------------------------------------------------------------
# Ring and circulation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUTS)
def test_ring_and_steps(name):
    lay = load_layout(name)
    rows, cols = np.indices((C.H, C.W))
    on_lines = (rows == 1) | (rows == C.H - 2) | (cols == 1) | (cols == C.W - 2)
    assert (lay.ring == (lay.walkable & on_lines)).all()
    assert lay.cw.dtype == np.int8 and lay.ccw.dtype == np.int8
    assert (lay.cw[~lay.ring] == 0).all() and (lay.ccw[~lay.ring] == 0).all()
    for r, c in np.argwhere(lay.ring):
        for steps in (lay.cw, lay.ccw):
            dr, dc = steps[r, c]
            assert abs(dr) + abs(dc) == 1
            nr, nc = r + dr, c + dc
            # The next cell along the ring is a ring cell whenever it is walkable.
            assert lay.ring[nr, nc] == lay.walkable[nr, nc], (name, r, c)


def test_cafe_ring_by_hand():
    lay = load_layout("cafe")
    cw = lambda r, c: tuple(lay.cw[r, c].tolist())
    ccw = lambda r, c: tuple(lay.ccw[r, c].tolist())
    assert cw(1, 1) == RIGHT and cw(1, 13) == DOWN and cw(9, 13) == LEFT and cw(9, 1) == UP
    assert ccw(1, 1) == DOWN and ccw(9, 1) == RIGHT and ccw(9, 13) == UP and ccw(1, 13) == LEFT
    assert cw(1, 5) == RIGHT and cw(5, 13) == DOWN and cw(9, 6) == LEFT and cw(4, 1) == UP
    assert ccw(1, 5) == LEFT and ccw(5, 13) == UP and ccw(9, 6) == RIGHT and ccw(4, 1) == DOWN
    assert lay.ring[1, 7] and not lay.ring[5, 5]
    assert tuple(lay.cw[5, 5].tolist()) == (0, 0)


# ---------------------------------------------------------------------------
# Queue paths (norms 23..38)
# ---------------------------------------------------------------------------


def test_queue_shape_table():
    assert QUEUE_NAMES == EXPECTED_QUEUE_ORDER
    assert tuple(QUEUE_SHAPES) == EXPECTED_QUEUE_ORDER
    assert QUEUE_SHAPES["square_right"] == [(0, 0), (0, 1), (1, 1), (2, 1), (2, 0), (2, -1), (1, -1)]
    assert QUEUE_SHAPES["edge_queue_left"] == [(0, 0), (0, -1), (0, -2), (0, -3)]
    assert QUEUE_SHAPES["zigzag_right_2"] == [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1), (1, 0)]
    assert QUEUE_SHAPES["l_shape_right"] == [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (3, 2)]
    # Left variants mirror the column offsets of the right ones.
    for name, offsets in QUEUE_SHAPES.items():
        if "right" in name:
            mirror = QUEUE_SHAPES[name.replace("right", "left")]
            assert mirror == [(a, -b) for a, b in offsets]


@pytest.mark.parametrize("name", LAYOUTS)
def test_queue_paths(name):
    lay = load_layout(name)
    assert lay.queue_paths.shape == (C.N_QUEUE_PATHS, C.MAX_QUEUE_LEN, 2)
    assert lay.queue_paths.dtype == np.int32 and lay.queue_len.dtype == np.int32
    expected_len = [6] * 12 + [7, 7, 4, 4]
    assert lay.queue_len.tolist() == expected_len
    sr, sc = lay.service
    for i, qname in enumerate(QUEUE_NAMES):
        n = lay.queue_len[i]
        path = lay.queue_paths[i, :n]
        assert (lay.queue_paths[i, n:] == -1).all()
        assert tuple(path[0]) == (sr, sc)  # the head is the service cell
        assert len({tuple(p) for p in path.tolist()}) == n
        steps = np.abs(np.diff(path, axis=0)).sum(axis=1)
        assert (steps == 1).all(), qname
        assert ((path[:, 0] >= 1) & (path[:, 0] <= 5)).all()
        assert ((path[:, 1] >= sc - 3) & (path[:, 1] <= sc + 3)).all()
        for r, c in path:
            assert lay.grid[r][c] == ".", (qname, r, c)
        assert (path - [sr, sc]).tolist() == [list(o) for o in QUEUE_SHAPES[qname]]
        assert (lay.queue_path(qname) == path).all()


def test_cafe_queue_paths_by_hand():
    lay = load_layout("cafe")  # service cell (1, 7)
    assert lay.queue_path("edge_queue_left").tolist() == [[1, 7], [1, 6], [1, 5], [1, 4]]
    assert lay.queue_path("bend_right_1").tolist() == [[1, 7], [1, 8], [2, 8], [3, 8], [4, 8], [5, 8]]
    assert lay.queue_path("square_left").tolist() == [[1, 7], [1, 6], [2, 6], [3, 6], [3, 7], [3, 8], [2, 8]]


# ---------------------------------------------------------------------------
# Validator: every rule rejects a hand-broken cafe
# ---------------------------------------------------------------------------

# The cafe, for reference when reading the broken maps below:
#    0 #######K#######
#    1 #.............#
#    2 #.hh.......rr.#
#    3 #.oo.......rr.C
#    4 #.hh..........#
#    5 #.............#
#    6 A.....qqq.....#
#    7 #..hoh.q.hoh..#
#    8 #..hoh...hoh..#
#    9 #.............#
#   10 #######B#######


def broken_maps():
    base = cafe_lines()
    no_r = [line.replace("r", ".") for line in base]
    no_q = [line.replace("q", ".") for line in base]
    no_br = edit(base, (7, 9, "."), (7, 11, "."), (8, 9, "."), (8, 11, "."))
    k_moved = edit(base, (0, 7, "#"), (0, 2, "K"))
    return [
        ("size", base[:-1], r"rule 'size'.*expected 11 lines"),
        ("size", base[:5] + [base[5][:-1]] + base[6:], r"rule 'size'.*line 5 has 14"),
        (
            "legend",
            edit(base, (5, 5, "x")),
            r"rule 'legend'.*unknown character 'x'.*allowed legend: # \. A B C h K o q r.*\(5, 5\)",
        ),
        ("border", edit(base, (0, 3, ".")), r"rule 'border'.*\(0, 3\)"),
        ("border", edit(base, (0, 0, "K"), (0, 7, "#")), r"rule 'border'.*\(0, 0\)"),
        ("border", edit(base, (10, 7, "#"), (10, 3, "A")), r"rule 'border'.*\(10, 3\)"),
        ("doors", edit(base, (10, 7, "#")), r"rule 'doors'.*one door B, found 0"),
        ("doors", edit(base, (2, 0, "A")), r"rule 'doors'.*one door A, found 2"),
        ("doors", edit(base, (3, 14, "#"), (5, 5, "C")), r"rule 'doors'.*door C must be on the right wall.*\(5, 5\)"),
        ("counter", edit(base, (0, 3, "K")), r"rule 'counter'.*one counter K, found 2"),
        ("counter", edit(base, (0, 7, "#"), (5, 12, "K")), r"rule 'counter'.*top wall.*\(5, 12\)"),
        ("door_inward", edit(base, (6, 1, "o")), r"rule 'door_inward'.*door A.*\(6, 1\)"),
        ("door_inward", edit(base, (9, 7, "h")), r"rule 'door_inward'.*door B.*'h'.*\(9, 7\)"),
        ("service_cell", edit(base, (1, 7, "o")), r"rule 'service_cell'.*\(1, 7\)"),
        ("queue_block", edit(base, (3, 5, "o")), r"rule 'queue_block'.*plain '\.' floor.*\(3, 5\)"),
        ("queue_block", edit(base, (5, 10, "q")), r"rule 'queue_block'.*\(5, 10\)"),
        ("queue_block", edit(base, (4, 4, "h")), r"rule 'queue_block'.*\(4, 4\)"),
        ("queue_block", k_moved, r"rule 'queue_block'.*counter column 2.*\(0, 2\)"),
        ("chair_region", edit(base, (6, 3, "h")), r"rule 'chair_region'.*\(6, 3\)"),
        ("chair_region", edit(base, (8, 7, "h")), r"rule 'chair_region'.*\(8, 7\)"),
        ("chair_region", edit(base, (1, 12, "h")), r"rule 'chair_region'.*\(1, 12\)"),
        ("region_chairs", no_br, r"rule 'region_chairs'.*region BR holds 0 chair"),
        ("zones", no_q, r"rule 'zones'.*zone Q is empty"),
        ("zones", no_r, r"rule 'zones'.*zone R is empty"),
        ("reachability", edit(base, (1, 2, "o"), (2, 1, "o")), r"rule 'reachability'.*\(1, 1\)"),
        # A chair may end a path but never be passed through.
        ("reachability", edit(base, (1, 2, "h"), (2, 1, "o")), r"rule 'reachability'.*\(1, 1\)"),
        ("q_avoidable", edit(base, (1, 2, "o"), (2, 1, "q")), r"rule 'q_avoidable'.*Q removed.*\(1, 1\)"),
        ("q_avoidable", edit(base, (6, 1, "q")), r"rule 'q_avoidable'.*door A's inward cell.*\(6, 1\)"),
        ("r_avoidable", edit(base, (1, 2, "o"), (2, 1, "r")), r"rule 'r_avoidable'.*R removed.*\(1, 1\)"),
    ]


BROKEN = broken_maps()


@pytest.mark.parametrize("rule,lines,pattern", BROKEN, ids=[f"{b[0]}-{i}" for i, b in enumerate(BROKEN)])
def test_validator_rejects_broken_map(rule, lines, pattern):
    with pytest.raises(LayoutError, match=pattern) as info:
        validate_grid("broken_cafe", lines)
    assert info.value.rule == rule
    assert "broken_cafe" in str(info.value)
    # parse_layout runs the same validation.
    with pytest.raises(LayoutError, match=f"rule '{rule}'"):
        parse_layout("broken_cafe", "\n".join(lines))


def test_every_rule_has_a_broken_map():
    from normjax.layouts import VALIDATION_RULES

    assert {rule for rule, _ in VALIDATION_RULES} == {b[0] for b in BROKEN}


def test_layout_error_is_value_error():
    assert issubclass(LayoutError, ValueError)


def test_single_layout_path_cuts_only_padding():
    """The single-layout path scores rows of its own longest candidate list
    (rounded up for the own cell) and reads `seat_order_length(l)` seat-order
    entries: everything it cuts is padding (the cafe by hand: 12 chairs, 4 R,
    4 Q, 3 doors -> 16 columns, against 24 for all layouts)."""
    from normjax.layouts.routes import candidate_count, host_goal_candidates, planner_width
    from normjax.layouts.tables import host_tables
    from normjax.norms.predicates import seat_order_length

    cell, tables = host_goal_candidates()["cell"], host_tables()
    assert cell.shape[2] == planner_width(candidate_count())
    assert candidate_count(0) == 12 and planner_width(12) == 16 and seat_order_length(0) == 12
    for lid in range(cell.shape[0]):
        n, m = candidate_count(lid), seat_order_length(lid)
        assert (cell[lid, :, :n] >= 0).any(axis=0).all() and (cell[lid, :, n:] == -1).all()
        assert n < planner_width(n) <= cell.shape[2]  # the cut keeps every entry and the own column
        order = tables["seat_order"][lid]
        assert (order[:, :m] >= 0).any(axis=0).all() and (order[:, m:] == -1).all()
        assert m == tables["n_chairs"][lid]  # both orders list every chair
