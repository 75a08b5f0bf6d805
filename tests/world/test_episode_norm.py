"""The single-norm fast paths equal the full 50-norm masks (docs/world.md §7)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.layouts.tables import ALL_LAYOUTS, host_tables, world_tables
from normjax.norms import (
    action_sanctions,
    episode_norm,
    episode_sanctions,
    permissible,
    permissible_per_action,
    sanctions,
)
from normjax.world.state import WorldConfig, make_params
from normjax.world.step import reset_world

K = 10


def _random_agents(rng, layout):
    kind = host_tables()["kind"][layout]
    cells = np.argwhere((kind == 1) | (kind == 3))
    # bias positions toward the queue block so queue norms are exercised
    pick = rng.choice(len(cells), size=K, replace=False)
    pos = cells[pick].astype(np.int32)
    service = host_tables()["service"][layout]
    pos[:4] = service + np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
    pos[:4] = np.where(kind[pos[:4, 0], pos[:4, 1]][:, None] == 1, pos[:4], cells[pick[:4]])
    if len({tuple(p) for p in pos}) < K:
        pos = cells[pick].astype(np.int32)
    return dict(
        pos=jnp.asarray(pos),
        active=jnp.asarray(rng.random(K) < 0.85),
        group=jnp.asarray(rng.integers(0, 3, K), dtype=jnp.int32),
        moves=jnp.asarray(rng.random((K, 3)) < 0.5),
        visited_q=jnp.asarray(rng.random(K) < 0.3),
    )


@jax.jit
def _both(lt_all, layout, norm, t, pos, active, action, group, moves, visited_q):
    lt = lt_all.at(layout)
    full = sanctions(norm, permissible(lt, t, pos, active, action, group, moves, visited_q))
    fast = episode_sanctions(lt, t, pos, active, action, group, moves, visited_q, norm)
    pa_full = permissible_per_action(lt, t, pos, active, group, moves, visited_q)[jnp.clip(norm, 0, 49)]
    state = reset_world(jax.random.PRNGKey(0), make_params(0, 0), WorldConfig()).replace(t=t)
    state = state.replace(
        agents=state.agents.replace(pos=pos, active=active, group=group, moves=moves, visited_q=visited_q)
    )
    view = episode_norm(lt, norm, t, pos, active, group, moves, visited_q)
    shared = action_sanctions(view, action)  # the planner's mask read at the actions
    return full, fast, pa_full, view.permitted, shared


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    layout=st.integers(0, len(ALL_LAYOUTS) - 1),
    norm=st.integers(-1, 49),
    t=st.integers(0, 200),
)
def test_episode_norm_paths_equal_full_mask(seed, layout, norm, t):
    rng = np.random.default_rng(seed)
    ag = _random_agents(rng, layout)
    action = jnp.asarray(rng.integers(0, 5, K), dtype=jnp.int32)
    full, fast, pa_full, pa_fast, shared = _both(
        world_tables(),
        layout,
        jnp.int32(norm),
        jnp.int32(t),
        ag["pos"],
        ag["active"],
        action,
        ag["group"],
        ag["moves"],
        ag["visited_q"],
    )
    assert np.array_equal(np.asarray(full), np.asarray(fast))
    assert np.array_equal(np.asarray(full), np.asarray(shared))
    # Norm -1 reads norm 0's row, as the selection of one row of the full mask does.
    assert np.array_equal(np.asarray(pa_full), np.asarray(pa_fast))


def test_static_permit_table_equals_the_predicates_on_every_layout():
    """`static_permits()` (built in numpy) holds exactly `permissible`'s rows of the
    static norms, with an agent of each group on every cell taking each action."""
    from normjax import constants as C
    from normjax.norms import predicates as P
    from normjax.norms.rules import DYNAMIC_RULE, RULE_NONE, static_permits

    n = C.N_CELLS
    cells = jnp.stack(jnp.unravel_index(jnp.arange(n), (C.H, C.W)), axis=1).astype(jnp.int32)

    @jax.jit
    def rows(lt):
        def one(g, a):
            return P.permissible(
                lt,
                jnp.int32(0),
                cells,
                jnp.ones((n,), bool),
                jnp.full((n,), a, jnp.int32),
                jnp.full((n,), g, jnp.int32),
                jnp.zeros((n, 3), bool),
                jnp.zeros((n,), bool),
            )

        return jax.vmap(lambda g: jax.vmap(lambda a: one(g, a))(jnp.arange(C.N_ACTIONS)))(jnp.arange(C.N_GROUPS))

    table = np.asarray(static_permits())
    static = DYNAMIC_RULE[:, 0] == RULE_NONE
    assert static.sum() == 20  # access 0-11, circulation 12-13, group doors and seats 42-47
    for lid in range(len(ALL_LAYOUTS)):
        want = np.array(rows(world_tables().at(lid))).transpose(2, 0, 3, 1)  # [50, 3, 165, 5]
        got = (table[lid][..., None] >> np.arange(C.N_ACTIONS, dtype=np.uint8)) & 1
        assert np.array_equal(got[static].astype(bool), want[static]), ALL_LAYOUTS[lid]
        assert got[~static].all()  # dynamic-only norms: no static restriction
        assert not got[static].all()  # the static norms do forbid something


def test_path_position_equals_path_comparison():
    """`path_position` (the queue rule's index of a target on the episode's
    path) equals `_path_index` (argmax over every path cell) for all layouts,
    paths and cells, and for a path that repeats a cell (the first index)."""
    from normjax.layouts.geometry import flat_index
    from normjax.norms.predicates import _path_index
    from normjax.norms.rules import path_position

    tables = world_tables()
    cells = jnp.stack(jnp.unravel_index(jnp.arange(C.N_CELLS), (C.H, C.W)), axis=1)
    flat = jnp.arange(C.N_CELLS)
    for lid in range(tables.kind.shape[0]):
        lt = tables.at(lid)
        valid = jnp.arange(lt.queue_paths.shape[1])[None, :] < lt.queue_len[:, None]
        want, _ = _path_index(lt.queue_paths, valid, cells)  # [16, 165]
        got = jax.vmap(lambda path, n: path_position(flat_index(path), n, flat))(lt.queue_paths, lt.queue_len)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert (np.asarray(got) >= 0).any(axis=-1).all()  # every path has cells
    path = jnp.array([[3, 4], [3, 5], [3, 4], [0, 0]])
    got = path_position(flat_index(path), 3, flat)
    want, _ = _path_index(path[None], (jnp.arange(4) < 3)[None], cells)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want[0]))
    assert int(got[3 * C.W + 4]) == 0 and int(got[0]) == -1  # first index; padding is off the path


def test_vmapped_episode_sanctions_equal_full_mask_for_mixed_norms():
    """Under vmap the parts that only some norms read (first free chairs, the
    queue state) are packed for the environments under those norms
    (`episode_context`); a batch mixing every norm still gives each
    environment the full mask's sanctions, and so does `episode_norm`'s."""
    rng = np.random.default_rng(7)
    norms = np.arange(-1, 50, dtype=np.int32)
    layouts = rng.integers(0, len(ALL_LAYOUTS), len(norms)).astype(np.int32)
    agents = [_random_agents(rng, int(layout)) for layout in layouts]
    batch = {f: jnp.stack([a[f] for a in agents]) for f in agents[0]}
    actions = jnp.asarray(rng.integers(0, 5, (len(norms), K)), dtype=jnp.int32)
    t = jnp.asarray(rng.integers(0, 200, len(norms)), dtype=jnp.int32)
    lt_all = world_tables()

    def one(layout, norm, t, pos, active, action, group, moves, visited_q):
        lt = lt_all.at(layout)
        full = sanctions(norm, permissible(lt, t, pos, active, action, group, moves, visited_q))
        fast = episode_sanctions(lt, t, pos, active, action, group, moves, visited_q, norm)
        shared = action_sanctions(episode_norm(lt, norm, t, pos, active, group, moves, visited_q), action)
        return full, fast, shared

    full, fast, shared = jax.jit(jax.vmap(one))(
        jnp.asarray(layouts),
        jnp.asarray(norms),
        t,
        batch["pos"],
        batch["active"],
        actions,
        batch["group"],
        batch["moves"],
        batch["visited_q"],
    )
    assert np.asarray(full).any()  # some sanctions to compare
    assert np.array_equal(np.asarray(full), np.asarray(fast))
    assert np.array_equal(np.asarray(full), np.asarray(shared))
