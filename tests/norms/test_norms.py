"""docs/world.md §7 norms: registry metadata, table-driven cases for all 50 predicates on
a hand-made layout and on real layouts, a plain-Python reference on random
states, per-action masks, jit / vmap agreement and sanctions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.layouts import ALL_LAYOUTS, LAYOUTS, parse_layout
from normjax.layouts.tables import world_tables
from normjax.norms import (
    FAMILIES,
    NORM_NAMES,
    NORMS,
    UNSEEN_LAYOUTS,
    family_of,
    get_norm,
    norm_id,
    permissible,
    permissible_per_action,
    sanctions,
)
from normjax.norms import registry as reg
from tests.support import norm_cases as NC
from tests.support.helpers import jitted

PERMISSIBLE = jax.jit(permissible)
PER_ACTION = jax.jit(permissible_per_action)
SANCTIONS = jax.jit(sanctions)

# Layouts the table-driven cases run on: the hand-made map, the cafe and one
# unseen layout.
CASE_LAYOUTS = ("test_map", "cafe", "bank")


@functools.cache
def tables(name: str):
    if name == "test_map":
        return NC.build_test_tables()
    return world_tables().at(LAYOUTS.index(name))


@functools.cache
def np_tables(name: str):
    return NC.numpy_view(tables(name))


def mask_of(name, scenario):
    return np.asarray(PERMISSIBLE(tables(name), *scenario.arrays()))


# ---------------------------------------------------------------------------
# Registry


def test_fifty_norms_in_spec_order():
    assert len(NORMS) == 50 and len(set(NORM_NAMES)) == 50
    assert [n.id for n in NORMS] == list(range(50))
    assert NORM_NAMES[:3] == ("forbidden_zone_q", "all_exit_left", "all_exit_bottom")
    assert NORM_NAMES[12] == "clockwise_circulation"
    assert NORM_NAMES[22] == "visit_zone_q_first"
    assert NORM_NAMES[23] == "bend_right_1" and NORM_NAMES[38] == "edge_queue_right"
    assert NORM_NAMES[39] == "zone_r_capacity_1" and NORM_NAMES[49] == "seats_in_order_r2l"


def test_family_sizes_and_family_of():
    counts = [sum(n.family == f for n in NORMS) for f in FAMILIES]
    assert counts == [12, 11, 16, 11]
    assert np.asarray(family_of).tolist() == [FAMILIES.index(n.family) for n in NORMS]
    assert jax.jit(lambda i: family_of[i])(jnp.int32(30)) == 2
    for fam, ids in enumerate(reg.FAMILY_IDS):
        assert {n.id for n in NORMS if n.family_id == fam} == set(ids)


def test_held_out_split_matches_spec():
    held = {n.name for n in NORMS if n.held_out}
    assert held == {
        "all_exit_bottom",
        "right_door_forbidden",
        "bottom_right_seats_only",
        "no_bottom_right_seats",
        "counterclockwise_circulation",
        "even_turns_only",
        "no_turns_1_mod_3",
        "move2_wait1",
        "zigzag_left_2",
        "bend_right_2",
        "square_left",
        "staircase_right",
        "l_shape_left",
        "zone_r_capacity_2",
        "group_doors_cab",
        "group_seating_rot2",
        "seats_in_order_r2l",
    }
    per_family = [sum(n.held_out for n in NORMS if n.family == f) for f in FAMILIES]
    assert per_family == [4, 4, 5, 4]  # Table A4


def test_unseen_layouts_cover_all_non_cafe_layouts():
    used = {n.unseen_layout for n in NORMS}
    assert used == set(LAYOUTS) - {"cafe"} == set(UNSEEN_LAYOUTS)  # each norm's: tests/norms/test_unseen_layouts.py


def test_metadata_text():
    for n in NORMS:
        assert n.description.endswith(".") and n.description[0].isupper()
        assert n.condition
    assert get_norm("forbidden_zone_q").description == "No agent may enter the marked zone Q."
    assert "x' = dB" in get_norm("all_exit_bottom").condition


def test_get_norm_and_norm_id():
    assert get_norm("square_left").id == 36
    assert get_norm(36).name == "square_left"
    assert get_norm(np.int32(5)) is NORMS[5]
    assert norm_id("zigzag_left_2") == 30
    assert norm_id(None) == norm_id("none") == norm_id(-1) == -1
    assert norm_id(7) == 7


@pytest.mark.parametrize("bad", ["no_such_norm", 50, -2, True, "Forbidden_Zone_Q"])
def test_unknown_norm_lists_valid_names(bad):
    with pytest.raises(ValueError) as err:
        get_norm(bad)
    assert "forbidden_zone_q" in str(err.value) and "seats_in_order_r2l" in str(err.value)
    with pytest.raises(ValueError):
        norm_id(bad)


# ---------------------------------------------------------------------------
# The hand-made layout agrees with normjax.layouts (queue order = norm order)


def test_test_map_tables_match_layout_parser():
    ours = NC.map_arrays()
    theirs = parse_layout("test_map", "\n".join(NC.TEST_MAP))
    for field in (
        "kind",
        "zone_q",
        "zone_r",
        "walkable",
        "region",
        "ring",
        "cw",
        "ccw",
        "doors",
        "door_inward",
        "service",
        "queue_paths",
        "queue_len",
        "chairs",
        "seat_order",
    ):
        np.testing.assert_array_equal(np.asarray(getattr(theirs, field)), ours[field], field)


def test_every_norm_has_a_compliant_and_a_violating_case():
    for name in NORM_NAMES:
        outcomes = {c.expect for c in NC.CASES if c.norm == name and not c.test_map_only}
        assert outcomes == {True, False}, name


# ---------------------------------------------------------------------------
# Table-driven cases


def _case_params():
    for case in NC.CASES:
        for lay in CASE_LAYOUTS:
            if lay == "test_map" or not case.test_map_only:
                yield pytest.param(case, lay, id=f"{case.id}-{lay}")


@pytest.mark.parametrize("case,layout", list(_case_params()))
def test_case(case, layout):
    lay = np_tables(layout)
    scenario = case.build(lay)
    mover = scenario.agents[0]
    # A case must describe a real (effective) move, or an intended WAIT.
    assert NC.effective_action_np(lay, mover.pos, mover.action) == mover.action
    mask = mask_of(layout, scenario)
    nid = get_norm(case.norm).id
    assert mask[nid, 0] == case.expect
    assert np.asarray(SANCTIONS(jnp.int32(nid), mask))[0] == (not case.expect)
    # Everyone else in the scenario waits: never sanctioned.
    assert mask[:, 1:].all()
    # The vectorised mask agrees with the plain-Python reference for all 50 norms.
    args = [np.asarray(a) for a in scenario.arrays()]
    ref = NC.reference_mask(lay, int(args[0]), *args[1:])
    np.testing.assert_array_equal(mask, ref)


@pytest.mark.parametrize("case", [c for c in NC.CASES if not c.expect], ids=lambda c: c.id)
def test_wait_and_inactive_are_never_sanctioned(case):
    lay = np_tables("test_map")
    scenario = case.build(lay)
    mover = scenario.agents[0]
    waiting = NC.Scenario([NC.Agent(**{**vars(mover), "action": C.WAIT})] + scenario.agents[1:], t=scenario.t)
    assert mask_of("test_map", waiting)[:, 0].all()
    gone = NC.Scenario([NC.Agent(**{**vars(mover), "active": False})] + scenario.agents[1:], t=scenario.t)
    assert mask_of("test_map", gone)[:, 0].all()


def test_blocked_move_counts_as_wait():
    # (1, 1) UP hits the wall: effective WAIT, so even odd_turns_only at t = 4 allows it.
    sc = NC.Scenario([NC.Agent(pos=(1, 1), action=C.UP, moves=(True, True, True))], t=4)
    assert mask_of("test_map", sc)[:, 0].all()


def test_inactive_agents_are_not_others():
    # An inactive slot standing in R or on the queue head does not count.
    lay = np_tables("test_map")
    mover, rest = NC.r_entry(lay)
    ghost = NC.Agent(pos=rest[0], active=False, group=2)
    mask = mask_of("test_map", NC.Scenario([mover, ghost]))
    assert mask[get_norm("zone_r_capacity_1").id, 0]
    assert mask[get_norm("single_group_zone_r").id, 0]
    head_ghost = NC.Agent(pos=(1, 7), active=False)
    joiner = NC.Agent(pos=(1, 6), action=C.RIGHT)  # into the head of bend_right_1
    mask = mask_of("test_map", NC.Scenario([joiner, head_ghost]))
    assert mask[get_norm("bend_right_1").id, 0]


# ---------------------------------------------------------------------------
# Random states: reference agreement and per-action masks


@st.composite
def random_state(draw, layout):
    lay = np_tables(layout)
    all_cells = [NC.cell(c) for c in np.argwhere(lay.walkable)]
    pool = draw(st.sampled_from([all_cells, NC.hot_cells(lay)]))
    pos = draw(st.lists(st.sampled_from(pool), min_size=NC.K, max_size=NC.K, unique=True))
    active = draw(st.lists(st.sampled_from([True, True, True, False]), min_size=NC.K, max_size=NC.K))
    raw = draw(st.lists(st.integers(0, C.N_ACTIONS - 1), min_size=NC.K, max_size=NC.K))
    action = [NC.effective_action_np(lay, p, a) for p, a in zip(pos, raw)]
    group = draw(st.lists(st.integers(0, 2), min_size=NC.K, max_size=NC.K))
    moves = draw(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=NC.K, max_size=NC.K))
    visited = draw(st.lists(st.booleans(), min_size=NC.K, max_size=NC.K))
    t = draw(st.integers(0, 30))
    return (
        np.int32(t),
        np.asarray(pos, np.int32),
        np.asarray(active),
        np.asarray(action, np.int32),
        np.asarray(group, np.int32),
        np.asarray(moves, bool),
        np.asarray(visited, bool),
    )


@pytest.mark.parametrize("layout", ["test_map", "cafe"])
@settings(max_examples=120, deadline=None, derandomize=True)
@given(data=st.data())
def test_random_states_match_reference_and_per_action(layout, data):
    t, pos, active, action, group, moves, visited = data.draw(random_state(layout))
    lt, lay = tables(layout), np_tables(layout)
    mask = np.asarray(PERMISSIBLE(lt, t, pos, active, action, group, moves, visited))
    np.testing.assert_array_equal(mask, NC.reference_mask(lay, int(t), pos, active, action, group, moves, visited))
    per = np.asarray(PER_ACTION(lt, t, pos, active, group, moves, visited))
    assert per.shape == (50, NC.K, 5)
    np.testing.assert_array_equal(per[:, np.arange(NC.K), action], mask)
    for a in range(C.N_ACTIONS):
        eff = np.array([NC.effective_action_np(lay, p, a) for p in pos], np.int32)
        np.testing.assert_array_equal(
            per[:, :, a], NC.reference_mask(lay, int(t), pos, active, eff, group, moves, visited)
        )


# ---------------------------------------------------------------------------
# jit / vmap


def _random_batch(layout, n, seed):
    """n random states on one layout (numpy), stacked on a leading axis."""
    rng = np.random.default_rng(seed)
    lay = np_tables(layout)
    cells = np.array(NC.hot_cells(lay), np.int32)
    states = []
    for _ in range(n):
        pos = cells[rng.choice(len(cells), NC.K, replace=False)]
        action = np.array([NC.effective_action_np(lay, p, a) for p, a in zip(pos, rng.integers(0, 5, NC.K))], np.int32)
        states.append(
            (
                np.int32(rng.integers(0, 30)),
                pos,
                rng.random(NC.K) < 0.8,
                action,
                rng.integers(0, 3, NC.K).astype(np.int32),
                rng.random((NC.K, 3)) < 0.5,
                rng.random(NC.K) < 0.5,
            )
        )
    return [np.stack(field) for field in zip(*states)]


def test_jit_and_vmap_agree_with_unbatched_call():
    lt = tables("test_map")
    batch = _random_batch("test_map", 8, seed=0)
    t, pos, active, action, group, moves, visited = batch
    batched = jax.jit(jax.vmap(permissible, in_axes=(None, 0, 0, 0, 0, 0, 0, 0)))(lt, *batch)
    per_action = jax.jit(jax.vmap(permissible_per_action, in_axes=(None, 0, 0, 0, 0, 0, 0)))(
        lt, t, pos, active, group, moves, visited
    )
    for b in range(8):
        state = [f[b] for f in batch]
        np.testing.assert_array_equal(np.asarray(batched[b]), np.asarray(PERMISSIBLE(lt, *state)))
        np.testing.assert_array_equal(
            np.asarray(per_action[b]),
            np.asarray(PER_ACTION(lt, t[b], pos[b], active[b], group[b], moves[b], visited[b])),
        )


@pytest.mark.slow
def test_eager_call_agrees_with_jit():
    lt = tables("test_map")
    for state in zip(*_random_batch("test_map", 2, seed=4)):
        np.testing.assert_array_equal(np.asarray(permissible(lt, *state)), np.asarray(PERMISSIBLE(lt, *state)))


def test_vmap_over_mixed_layouts():
    stacked = world_tables()
    ids = np.array([0, 1, 0, 1], np.int32)  # cafe, bank, cafe, bank
    cafe = _random_batch("cafe", 2, seed=1)
    bank = _random_batch("bank", 2, seed=2)
    batch = [np.stack([c[0], b[0], c[1], b[1]]) for c, b in zip(cafe, bank)]

    def on_layout(lid, *state):
        return permissible(stacked.at(lid), *state)

    out = jax.jit(jax.vmap(on_layout))(ids, *batch)
    for b, lid in enumerate(ids):
        state = [f[b] for f in batch]
        expect = PERMISSIBLE(tables(LAYOUTS[lid]), *state)
        np.testing.assert_array_equal(np.asarray(out[b]), np.asarray(expect))


# ---------------------------------------------------------------------------
# Sanctions


def test_sanctions_select_the_episode_norm():
    lt = tables("test_map")
    state = [f[0] for f in _random_batch("test_map", 1, seed=3)]
    mask = PERMISSIBLE(lt, *state)
    assert not np.asarray(SANCTIONS(jnp.int32(-1), mask)).any()
    # No norm: nothing is sanctioned even when every norm forbids everything.
    forbid_all = jnp.zeros((50, NC.K), bool)
    assert not np.asarray(SANCTIONS(jnp.int32(-1), forbid_all)).any()
    assert np.asarray(SANCTIONS(jnp.int32(0), forbid_all)).all()
    for nid in (0, 23, 49):
        np.testing.assert_array_equal(np.asarray(SANCTIONS(jnp.int32(nid), mask)), ~np.asarray(mask[nid]))
    # Violation of exactly one norm: only that norm's episode sanctions it.
    sc = NC.Scenario([NC.exit_via(np_tables("test_map"), 0)])  # exit left
    mask = PERMISSIBLE(lt, *sc.arrays())
    assert bool(SANCTIONS(jnp.int32(get_norm("left_door_forbidden").id), mask)[0])
    assert not bool(SANCTIONS(jnp.int32(get_norm("all_exit_left").id), mask)[0])
    # Per-action masks [50, K, 5] work too.
    per = PER_ACTION(lt, state[0], state[1], state[2], state[4], state[5], state[6])
    assert SANCTIONS(jnp.int32(7), per).shape == (NC.K, 5)
    assert not np.asarray(SANCTIONS(jnp.int32(-1), per)).any()
    assert not np.asarray(SANCTIONS(jnp.int32(7), per)[:, C.WAIT]).any()


def _first_free_traced(lid, pos, active):
    from normjax.norms.predicates import first_free_chairs

    return first_free_chairs(world_tables().at(lid), pos, active)


@pytest.mark.parametrize("lid", range(len(ALL_LAYOUTS)))
def test_first_free_chair_on_the_single_layout_path(lid):
    """With every chair of a seat order taken but its last, that last chair is the
    first free one, on the single-layout path (seat orders cut to the layout's
    chairs) as on the traced one; with every chair taken there is none (-1)."""
    from normjax.norms.predicates import first_free_chairs

    tables = world_tables()
    order = np.asarray(tables.seat_order[lid])  # [2, 48, 2]
    traced_path = jitted(_first_free_traced)
    for sigma in range(2):
        chairs = order[sigma][order[sigma][:, 0] >= 0]
        for taken, want in ((chairs[:-1], chairs[-1]), (chairs, [-1, -1])):
            # Padded with inactive agents to one length: one traced program for all.
            n = len(taken)
            pos = jnp.asarray(np.concatenate([taken, np.ones((48 - n, 2), np.int32)]), jnp.int32)
            active = jnp.arange(48) < n
            static = first_free_chairs(tables.at(lid), pos, active)
            traced = traced_path(jnp.int32(lid), pos, active)
            assert tables.at(lid).static_index == lid
            np.testing.assert_array_equal(np.asarray(static), np.asarray(traced))
            np.testing.assert_array_equal(np.asarray(static)[sigma], want)
