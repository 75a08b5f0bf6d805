"""The two validation cafes (docs/world.md §1.7): valid maps, every norm's tables and
scenarios build on them, and no paper layout id or registered environment id moves."""

import numpy as np
import pytest

from normjax.layouts import ALL_LAYOUTS, LAYOUTS, VALIDATION_LAYOUTS, load_layout, validate_grid
from normjax.layouts.tables import host_tables, layout_id
from normjax.norms import N_NORMS, UNSEEN_LAYOUTS
from normjax.world.state import make_params


def test_ids_follow_the_ten_paper_layouts():
    assert ALL_LAYOUTS[:10] == LAYOUTS and len(LAYOUTS) == 10
    assert VALIDATION_LAYOUTS == ("cafe_rearranged", "cafe_shifted")
    assert [layout_id(n) for n in VALIDATION_LAYOUTS] == [10, 11]
    assert [layout_id(n) for n in LAYOUTS] == list(range(10))
    assert not set(VALIDATION_LAYOUTS) & set(UNSEEN_LAYOUTS)  # never a test layout


def test_registered_env_ids_unchanged():
    from normjax.registration import registered_envs

    assert len(registered_envs) == 10 * 51 * 3
    assert not any(v in e for e in registered_envs for v in VALIDATION_LAYOUTS)


@pytest.mark.parametrize("name", VALIDATION_LAYOUTS)
def test_validation_cafe_is_a_valid_modified_cafe(name):
    lay, cafe = load_layout(name), load_layout("cafe")
    validate_grid(name, lay.grid)  # the same validator as the ten layouts
    assert lay.grid != cafe.grid
    # Same furniture budget as the cafe: 12 chairs, 4 per region, non-empty Q and R.
    regions = [int(lay.region[r, c]) for r, c in lay.chairs]
    assert sorted(regions) == [0] * 4 + [1] * 4 + [2] * 4
    assert lay.zone_q.any() and lay.zone_r.any()
    # Every queue path (norms 23..38) has the cafe's length; the ring is closed.
    np.testing.assert_array_equal(lay.queue_len, cafe.queue_len)
    assert lay.ring.sum() == cafe.ring.sum()


def test_cafe_shifted_moves_counter_and_doors():
    lay, cafe = load_layout("cafe_shifted"), load_layout("cafe")
    assert tuple(lay.counter) != tuple(cafe.counter)
    assert tuple(lay.doors[1]) != tuple(cafe.doors[1]) and tuple(lay.doors[2]) != tuple(cafe.doors[2])


def test_stacked_tables_hold_every_layout_unchanged():
    t = host_tables()
    assert t["kind"].shape[0] == len(ALL_LAYOUTS) == 12
    cafe = load_layout("cafe")
    np.testing.assert_array_equal(t["kind"][0], cafe.kind)
    for i, name in enumerate(ALL_LAYOUTS):
        np.testing.assert_array_equal(t["walkable"][i], load_layout(name).walkable)


def test_every_norm_has_a_scenario_on_the_validation_cafes():
    from normjax.protocol.scenario_tables import host_scenarios

    valid = host_scenarios()["valid"]
    assert valid.shape[:2] == (len(ALL_LAYOUTS), N_NORMS)
    for name in VALIDATION_LAYOUTS:
        assert valid[layout_id(name)].all(), name  # every norm, every newcomer group


def test_make_params_layout_range_names_the_allowed_ids():
    assert int(make_params(11).layout_id) == 11
    with pytest.raises(ValueError, match=r"0\.\.11"):
        make_params(12)
    with pytest.raises(ValueError, match="cafe_rearranged"):
        layout_id("cafe_moved")


@pytest.mark.parametrize("lid", [10, 11])
def test_random_rollouts_keep_world_invariants_on_validation_cafes(lid):
    import jax

    from tests.world.test_world import N_STEPS, ROLLOUT, check_invariants

    for norm, seed in ((0, 1), (12, 2), (36, 3), (49, 4)):
        states, infos = ROLLOUT(jax.random.PRNGKey(seed), make_params(lid, norm), N_STEPS)
        check_invariants(lid, states, infos)
