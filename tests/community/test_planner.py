"""Scripted community (docs/world.md §8) and the environment API (gymnax-style)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.constants import ROLE_AWARE, ROLE_BLIND
from normjax.env import env_step, make, oracle_policy, phase_params
from normjax.layouts import load_layout
from normjax.layouts.parse import ALL_LAYOUTS
from normjax.layouts.routes import (
    CASE_CHAIR,
    CASE_DOOR,
    CASE_Q,
    CASE_R,
    V_BASE,
    V_CCW,
    V_CW,
    V_NO_Q,
    host_goal_candidates,
    host_route_tables,
    planner_width,
)
from normjax.norms import NORMS
from normjax.world.step import reset_world

N_NORMS = 50


def _interaction(key, params):
    """A 200-step interaction phase with the oracle newcomer; per-step sanctions."""
    state = reset_world(key, params)

    def body(state, k):
        k1, k2, k3 = jax.random.split(k, 3)
        _, new, info = env_step(k1, k3, state, oracle_policy(k2, state, params), params)
        return new, (info.sanctioned, info.collided, state.agents.role, state.agents.active)

    return jax.lax.scan(body, state, jax.random.split(key, 200))


@pytest.fixture(scope="module")
def all_norms_interaction():
    params = [phase_params("interaction", 0, n) for n in range(N_NORMS)]
    batched = jax.tree.map(lambda *x: jnp.stack(x), *params)
    keys = jax.random.split(jax.random.PRNGKey(2026), N_NORMS)
    final, (sanc, coll, role, active) = jax.jit(jax.vmap(_interaction))(keys, batched)
    return jax.tree.map(np.asarray, (final, sanc, coll, role, active))


def test_norm_aware_agents_are_never_sanctioned(all_norms_interaction):
    _, sanc, _, role, _ = all_norms_interaction
    aware = role == ROLE_AWARE
    newcomer = np.zeros_like(aware)
    newcomer[:, :, 0] = True  # the oracle newcomer is norm-aware too
    bad = np.argwhere((sanc & (aware | newcomer)).any(axis=(1, 2)))
    assert bad.size == 0, [NORMS[i].name for i in bad.ravel()]


def test_every_interaction_phase_shows_a_sanctioned_background_agent(all_norms_interaction):
    _, sanc, _, role, _ = all_norms_interaction
    seen = (sanc & (role == ROLE_BLIND)).any(axis=(1, 2))
    missing = [NORMS[i].name for i in np.flatnonzero(~seen)]
    assert not missing, missing


def test_community_keeps_moving(all_norms_interaction):
    final = all_norms_interaction[0]
    # Background agents finish tasks and are replaced under every norm.
    assert (final.community_finished >= 1).all(), np.flatnonzero(final.community_finished < 1)
    assert (final.newcomer_tasks >= 1).all()


def test_route_tables_shape_norm_graphs():
    lay = load_layout("cafe")
    tables = host_route_tables()[0]
    flat = lambda r, c: r * C.W + c
    # forbidden_zone_q graph: a route from the cell left of Q to the cell right
    # of it must go around the Q patch, so it is longer than the base route.
    qcells = np.argwhere(lay.zone_q)
    row = qcells[:, 0].min()
    cols = qcells[qcells[:, 0] == row][:, 1]
    a, b = flat(row, cols.min() - 1), flat(row, cols.max() + 1)
    assert tables[V_NO_Q, b, a] > tables[V_BASE, b, a]
    # clockwise ring: along row 1 one may go right but not left.
    assert tables[V_CW, flat(1, 3), flat(1, 2)] == 1
    assert tables[V_CW, flat(1, 2), flat(1, 3)] > 1
    assert tables[V_CCW, flat(1, 2), flat(1, 3)] == 1


def test_env_api_and_terminated_truncated_separate():
    env = make("cafe", "clockwise_circulation", phase="test")
    params = env.default_params
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    assert obs.shape == (env.obs_size,) == (585,)
    step = env.step  # jitted by NormGymEnv itself (the program gymnasium's single env uses)
    for i in range(3):
        obs, state, reward, term, trunc, info = step(jax.random.PRNGKey(i), state, C.WAIT, params)
    assert obs.shape == (585,) and reward.shape == () and term.dtype == bool and trunc.dtype == bool
    assert not bool(term) and not bool(trunc) and int(state.t) == 3


def test_make_rejects_bad_names():
    with pytest.raises(ValueError, match="unknown layout 'caf'.*cafe"):
        make("caf")
    with pytest.raises(ValueError, match="unknown norm 'no_such_norm'"):
        make("cafe", "no_such_norm")
    with pytest.raises(ValueError, match="unknown phase"):
        make("cafe", None, phase="warmup")


def test_goal_candidate_rows_list_exactly_the_cells_of_each_case():
    """Row CASE_CHAIR lists the layout's chairs with their seat regions, CASE_R
    and CASE_Q its R and Q cells, CASE_DOOR its doors 0, 1, 2 in order; the
    rest is -1, and the last column (the planner's own-cell column) is always
    padding.  Widths are multiples of 8 with room for the own cell."""
    cand = host_goal_candidates()
    assert [planner_width(n) for n in (1, 7, 8, 12, 15, 23)] == [8, 8, 16, 16, 16, 24]
    for lid, name in enumerate(ALL_LAYOUTS):
        lay = load_layout(name)
        row = lambda case: [int(v) for v in cand["cell"][lid, case] if v >= 0]
        flat = lambda mask: sorted(int(r) * C.W + int(c) for r, c in np.argwhere(mask))
        assert row(CASE_CHAIR) == flat(lay.kind == C.CHAIR)
        assert row(CASE_R) == flat(lay.zone_r) and row(CASE_Q) == flat(lay.zone_q)
        assert row(CASE_DOOR) == [int(r) * C.W + int(c) for r, c in lay.doors]
        regions = [int(v) for v in cand["region"][lid] if v >= 0]
        assert regions == [int(lay.region.reshape(-1)[x]) for x in row(CASE_CHAIR)]
        assert (cand["cell"][lid, :, -1] == -1).all()
