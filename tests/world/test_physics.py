"""docs/world.md §4 collision and push rules: properties on random inputs, constructed cases."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.world.physics import resolve_moves
from tests.support.helpers import OPEN_ROOM, kind_grid, standable_cells

K = 10
resolve = jax.jit(resolve_moves)
# One batched program for every vmap test (batch size fixed so it compiles once).
VRESOLVE = jax.jit(jax.vmap(resolve_moves, in_axes=(0, 0, 0, 0, None, 0)))
N_SCENES = 24  # chunks of 3 (rare.chunk_size): batches with many displaced scenes use several


def run(kind, pos, actions, active=None, pushable=None, seed=0):
    """Resolve a scene of k <= K agents; padded with inactive agents to K so
    every scene shares one compiled program, the result cut back to k."""
    k = len(pos)
    active = np.ones(k, bool) if active is None else np.asarray(active)
    pushable = np.ones(k, bool) if pushable is None else np.asarray(pushable)
    pad = K - k
    res = resolve(
        jax.random.PRNGKey(seed),
        jnp.asarray(np.concatenate([np.asarray(pos).reshape(-1, 2), np.ones((pad, 2))]), jnp.int32),
        jnp.asarray(np.concatenate([active, np.zeros(pad, bool)])),
        jnp.asarray(np.concatenate([np.asarray(actions), np.full(pad, C.WAIT)]), jnp.int32),
        jnp.asarray(kind),
        jnp.asarray(np.concatenate([pushable, np.ones(pad, bool)])),
    )
    return jax.tree.map(lambda x: np.asarray(x)[:k], res)


def effective(kind, pos, actions):
    from normjax.ground.moves import effective_actions

    return np.asarray(effective_actions(jnp.asarray(kind), jnp.asarray(pos), jnp.asarray(actions)))


@st.composite
def scenes(draw, crowded=False):
    kind = kind_grid(OPEN_ROOM)
    cells = standable_cells(kind)
    if crowded:  # pack agents into a small window so conflicts are frequent
        cells = cells[(cells[:, 0] >= 3) & (cells[:, 0] <= 6) & (cells[:, 1] >= 3) & (cells[:, 1] <= 7)]
    idx = draw(st.lists(st.integers(0, len(cells) - 1), min_size=K, max_size=K, unique=True))
    pos = cells[idx]
    actions = np.array(draw(st.lists(st.integers(0, 4), min_size=K, max_size=K)))
    active = np.array(draw(st.lists(st.booleans(), min_size=K, max_size=K)))
    pushable = np.array([False] + [True] * (K - 1))
    seed = draw(st.integers(0, 2**31 - 1))
    return kind, pos, effective(kind, pos, actions), active, pushable, seed


def check_rules_1_2_6(kind, pos, actions, active, res):
    present = active & ~res.exited
    fin = res.pos[present]
    # Rule 1: distinct cells, all standable (never a door, wall or obstacle).
    assert len({tuple(c) for c in fin}) == len(fin), "two agents share a cell"
    k_end = kind[fin[:, 0], fin[:, 1]] if len(fin) else np.array([])
    assert np.all((k_end == C.FLOOR) | (k_end == C.CHAIR)), "agent on a non-walkable cell"
    target = pos + C.ACTION_DELTAS[actions]
    moving = active & (actions != C.WAIT)
    tk = np.array([kind[r, c] if 0 <= r < C.H and 0 <= c < C.W else C.WALL for r, c in target])
    mover = moving & (tk != C.DOOR)
    stationary = active & ~moving
    assert np.array_equal(res.exited, moving & (tk == C.DOOR))
    for i in np.flatnonzero(mover):
        others_end = any(present[j] and j != i and tuple(res.pos[j]) == tuple(target[i]) for j in range(len(pos)))
        held = any(stationary[j] and tuple(pos[j]) == tuple(target[i]) for j in range(len(pos)))
        # Rule 2.
        if not others_end and not held:
            assert tuple(res.pos[i]) == tuple(target[i]), f"free mover {i} blocked"
        # Rule 6 for movers.
        contested = sum(mover[j] and tuple(target[j]) == tuple(target[i]) for j in range(len(pos))) >= 2
        expect = contested or held or tuple(res.pos[i]) != tuple(target[i])
        assert bool(res.collided[i]) == expect
    # Rule 6: agents that stood still (or were only pushed) are never charged.
    assert not np.any(res.collided & ~mover)


@pytest.mark.parametrize("crowded", [False, True], ids=["open_room", "crowd"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_rules_hold_on_random_scenes(crowded, data):
    kind, pos, actions, active, pushable, seed = data.draw(scenes(crowded=crowded))
    res = run(kind, pos, actions, active, pushable, seed)
    check_rules_1_2_6(kind, pos, actions, active, res)


@settings(max_examples=40, deadline=None)
@given(scenes(crowded=True))
def test_rule7_same_key_same_outcome(scene):
    kind, pos, actions, active, pushable, seed = scene
    a = run(kind, pos, actions, active, pushable, seed)
    b = run(kind, pos, actions, active, pushable, seed)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        assert np.array_equal(x, y)


KIND = kind_grid(OPEN_ROOM)
R, D, L, U, W_ = C.RIGHT, C.DOWN, C.LEFT, C.UP, C.WAIT


def test_swap_passes_without_collision():
    res = run(KIND, [[5, 3], [5, 4]], [R, L])
    assert res.pos.tolist() == [[5, 4], [5, 3]]
    assert not res.collided.any() and not res.displaced.any()


def test_follow_the_leader_chain():
    res = run(KIND, [[4, 2], [4, 3], [4, 4]], [R, R, R])
    assert res.pos.tolist() == [[4, 3], [4, 4], [4, 5]]
    assert not res.collided.any()


def test_rule3_mover_takes_held_cell_and_holder_is_displaced():
    wins = 0
    for seed in range(20):
        res = run(KIND, [[4, 10], [4, 11]], [R, W_], seed=seed)
        assert res.pos[0].tolist() == [4, 11]
        assert abs(res.pos[1] - np.array([4, 11])).sum() == 1  # a neighbour of its cell
        assert res.displaced[1] and not res.collided[1] and res.collided[0]
        wins += 1
    assert wins == 20


def test_rule3_several_movers_uniform_winner():
    # Two movers into a cell held by a stationary agent.
    counts = np.zeros(2)
    n = 300
    for seed in range(n):
        res = run(KIND, [[4, 10], [4, 12], [4, 11]], [R, L, W_], seed=seed)
        winner = [i for i in range(2) if res.pos[i].tolist() == [4, 11]]
        assert len(winner) == 1
        counts[winner[0]] += 1
        assert res.displaced[2] and res.collided[:2].all() and not res.collided[2]
        check_rules_1_2_6(KIND, np.array([[4, 10], [4, 12], [4, 11]]), np.array([R, L, W_]), np.ones(3, bool), res)
    assert 0.4 < counts[0] / n < 0.6, counts


def test_rule4_contested_empty_cell_uniform_and_loser_displaced():
    counts = np.zeros(2)
    n = 300
    cell = np.array([4, 11])
    for seed in range(n):
        res = run(KIND, [[4, 10], [4, 12]], [R, L], seed=seed)
        at = [i for i in range(2) if (res.pos[i] == cell).all()]
        assert len(at) == 1
        loser = 1 - at[0]
        assert abs(res.pos[loser] - cell).sum() == 1
        assert res.collided.all()
        counts[at[0]] += 1
    assert 0.4 < counts[0] / n < 0.6, counts


def test_displacement_target_is_uniform_over_free_neighbours():
    # Holder at (4,11) in open floor: free neighbours (3,11) (5,11) (4,12) and
    # the mover's vacated origin (4,10).
    seen = {}
    for seed in range(200):
        res = run(KIND, [[4, 10], [4, 11]], [R, W_], seed=seed)
        seen[tuple(res.pos[1])] = seen.get(tuple(res.pos[1]), 0) + 1
    assert set(seen) == {(3, 11), (5, 11), (4, 12), (4, 10)}
    assert min(seen.values()) > 25


POCKET = (
    "###############",
    "#.............#",
    "#.............#",
    "#.............#",
    "#####.##......#",
    "#.......#.....#",
    "#####.##......#",
    "#.............#",
    "#.............#",
    "#.............#",
    "###############",
)


def test_rule5_bystander_is_pushed_on():
    kind = kind_grid(POCKET)
    # Corridor row 5: cells (5,1)..(5,7); (4,5),(6,5) open above/below col 5 only.
    # Holder H at (5,3); mover M (5,2)->(5,3); N (5,1)->(5,2) refills M's origin;
    # bystander S at (5,4) can be pushed to (5,5).
    pos = [[5, 2], [5, 1], [5, 3], [5, 4]]
    acts = [R, R, W_, W_]
    res = run(kind, pos, acts, pushable=[True, True, True, True])
    assert res.pos.tolist() == [[5, 3], [5, 2], [5, 4], [5, 5]]
    assert res.displaced[2] and res.displaced[3]
    assert not res.collided[2] and not res.collided[3]


def test_rule5_newcomer_is_never_the_pushed_bystander():
    kind = kind_grid(POCKET)
    pos = [[5, 2], [5, 1], [5, 3], [5, 4]]
    acts = [R, R, W_, W_]
    res = run(kind, pos, acts, pushable=[True, True, True, False])
    # No bystander may be pushed: the fallback returns the movers.
    assert res.pos.tolist() == pos
    assert res.collided[0] and res.collided[1]
    check_rules_1_2_6(kind, np.array(pos), np.array(acts), np.ones(4, bool), res)


def test_rule5_fallback_when_nothing_can_move():
    kind = kind_grid(POCKET)
    # Bystander at (5,4) boxed in by another bystander at (5,5) whose cell has
    # free neighbours (4,5), (6,5): a push of the first is impossible, so the
    # fallback returns the conflicting movers to their origins.
    pos = [[5, 2], [5, 1], [5, 3], [5, 4], [5, 5], [4, 5], [6, 5], [5, 6]]
    acts = [R, R, W_, W_, W_, W_, W_, W_]
    res = run(kind, pos, acts)
    check_rules_1_2_6(kind, np.array(pos), np.array(acts), np.ones(8, bool), res)
    assert res.pos.tolist() == pos


def test_exit_through_door_and_door_never_held():
    # Agent next to door A moves left: exits; another moving into its cell passes.
    res = run(KIND, [[5, 1], [5, 2]], [L, L])
    assert res.exited.tolist() == [True, False]
    assert res.pos[1].tolist() == [5, 1]
    assert not res.collided.any()


def test_inactive_agents_are_ignored():
    res = run(KIND, [[4, 10], [4, 11]], [R, W_], active=[True, False])
    assert res.pos[0].tolist() == [4, 11]
    assert not res.collided.any() and not res.displaced.any()


@settings(max_examples=15, deadline=None)
@given(st.lists(scenes(crowded=True), min_size=N_SCENES, max_size=N_SCENES))
def test_vmap_equals_unbatched_resolution(batch):
    """Under vmap only the scenes with displaced agents run the placement loop
    (`normjax.ground.rare`); every scene's result equals its own resolution."""
    kind = jnp.asarray(batch[0][0])
    stack = lambda i, dt: jnp.asarray(np.stack([s[i] for s in batch]), dt)
    keys = jnp.stack([jax.random.PRNGKey(s[5]) for s in batch])
    got = VRESOLVE(keys, stack(1, jnp.int32), stack(3, bool), stack(2, jnp.int32), kind, stack(4, bool))
    for b, (_, pos, actions, active, pushable, seed) in enumerate(batch):
        single = run(batch[0][0], pos, actions, active, pushable, seed)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(single)):
            np.testing.assert_array_equal(np.asarray(g)[b], w)


def test_vmap_mixing_pushes_and_fallbacks_equals_unbatched():
    """Rule 5's push search runs, under vmap, only for the scenes whose
    displaced agent has no free neighbour (a nested `run_where` inside the
    placement loop): a batch mixing a push, a push refused to the newcomer, a
    boxed-in fallback and plain scenes gives each scene its own resolution."""
    kind = kind_grid(POCKET)
    pad = lambda xs, fill: list(xs) + [fill] * (8 - len(xs))
    push = ([[5, 2], [5, 1], [5, 3], [5, 4]], [R, R, W_, W_])
    boxed = ([[5, 2], [5, 1], [5, 3], [5, 4], [5, 5], [4, 5], [6, 5], [5, 6]], [R, R, W_, W_, W_, W_, W_, W_])
    plain = ([[5, 1], [5, 6]], [R, L])
    scenes = []  # (pos, actions, active, pushable)
    for pos, acts in (push, boxed, plain, push, plain, push):
        n = len(pos)
        scenes.append((pad(pos, [1, 1]), pad(acts, W_), pad([True] * n, False), pad([True] * n, True)))
    scenes.append(
        (pad(push[0], [1, 1]), pad(push[1], W_), pad([True] * 4, False), pad([True, True, True, False], True))
    )
    stack = lambda i, dt: jnp.asarray(np.stack([s[i] for s in scenes]), dt)
    keys = jnp.stack([jax.random.PRNGKey(b) for b in range(len(scenes))])
    got = jax.jit(jax.vmap(resolve_moves, in_axes=(0, 0, 0, 0, None, 0)))(
        keys, stack(0, jnp.int32), stack(2, bool), stack(1, jnp.int32), jnp.asarray(kind), stack(3, bool)
    )
    for b, (pos, acts, active, pushable) in enumerate(scenes):
        single = run(kind, pos, acts, active, pushable, seed=b)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(single)):
            np.testing.assert_array_equal(np.asarray(g)[b], w)
    pushed = np.asarray(got.pos)
    assert pushed[0, 3].tolist() == [5, 5] and pushed[3, 3].tolist() == [5, 5]  # S pushed on, batched
    assert pushed[6, :4].tolist() == push[0]  # the newcomer is never pushed: fallback
