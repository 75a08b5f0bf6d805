"""Library draws at chosen indices (normjax/ground/draws_at.py) and the refill
that uses them: exactly the values of drawing for every slot."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.env import env_step, phase_params
from normjax.ground.draws_at import bits_at, randint_at
from normjax.layouts.tables import world_tables
from normjax.world.state import WorldConfig, make_params
from normjax.world.step import reset_world
from normjax.world.turnover import enter, refill, turnover
from tests.support.world_helpers import RESET

KEYS = st.integers(0, 2**32 - 1)
# Jitted once (a program per index length, and per n for the library's draw).
BITS_AT = jax.jit(bits_at)
LIB_BITS = jax.jit(lambda key, idx, n: jax.random.bits(key, (n,), jnp.uint32)[idx], static_argnums=2)


def _indices(data, n):
    return data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n), label="index")


@settings(max_examples=150, deadline=None)
@given(KEYS, st.integers(1, 12), st.data())
def test_bits_at_equals_library_bits(seed, n, data):
    idx = jnp.asarray(_indices(data, n))
    key = jax.random.PRNGKey(seed)
    want = LIB_BITS(key, idx, n)
    assert np.array_equal(BITS_AT(key, idx), want)


@settings(max_examples=120, deadline=None)  # eager: each example dispatches ~30 ops
@given(KEYS, st.integers(1, 12), st.integers(-200, 200), st.integers(-200, 400), st.booleans(), st.data())
def test_randint_at_equals_library_randint(seed, n, lo, hi, typed, data):
    """Any bounds, including empty ranges (maxval <= minval gives minval) and
    spans that are not powers of two; raw and typed keys."""
    idx = jnp.asarray(_indices(data, n))
    key = jax.random.key(seed) if typed else jax.random.PRNGKey(seed)
    want = jax.random.randint(key, (n,), lo, hi)[idx]
    got = randint_at(key, idx, lo, hi)
    assert got.dtype == jnp.int32 and np.array_equal(got, want)


def test_randint_at_under_jit_and_vmap_with_traced_bounds():
    keys = jax.random.split(jax.random.PRNGKey(5), 64)
    lo = jnp.arange(64) % 7 - 3
    hi = lo + jnp.arange(64) % 23
    idx = jnp.asarray([9, 0, 4])
    got = jax.jit(jax.vmap(lambda k, a, b: randint_at(k, idx, a, b)))(keys, lo, hi)
    want = jax.vmap(lambda k, a, b: jax.random.randint(k, (10,), a, b)[idx])(keys, lo, hi)
    assert np.array_equal(got, want)


def _refill(key, state, slots, p, max_slots):
    """The step's refill at t = 4 on the episode's (traced) layout."""
    return refill(key, state, slots, world_tables().at(p.layout), p, jnp.int32(4), max_slots=max_slots)


# One program each for the layout and norm traced (eager calls compiled every op per layout).
REFILL = jax.jit(_refill, static_argnums=4)


@settings(max_examples=60, deadline=None)
@given(
    KEYS,
    st.integers(0, len(world_tables().kind) - 1),
    st.integers(0, 49),
    st.lists(st.integers(0, 9), max_size=C.N_DOORS, unique=True),
)
def test_refill_of_at_most_n_doors_slots_equals_drawing_for_all(seed, layout, norm, chosen):
    """The step's refill draws tasks and delays only for the first N_DOORS
    emptied slots; with that many or fewer, every field equals the refill that
    draws for all K slots."""
    p = make_params(layout, norm, turnover_delay=(1, 9))
    state = RESET(jax.random.PRNGKey(seed // 2), p, WorldConfig())
    slots = jnp.zeros(10, bool).at[jnp.asarray(chosen, jnp.int32)].set(True)
    key = jax.random.PRNGKey(seed)
    full = REFILL(key, state, slots, p, None)
    few = REFILL(key, state, slots, p, C.N_DOORS)
    same = jax.tree.map(lambda a, b: bool(np.array_equal(a, b)), full, few)
    assert all(jax.tree.leaves(same)), same.agents


def test_vmapped_turnover_with_none_to_three_exits_equals_refilling_all():
    """Under vmap the step's turnover draws for the first emptied slot only in
    environments that empty one, and for the second and third only in those
    that empty two or three (two `run_where` packings): a batch mixing 0-3
    exits (the newcomer's among them, replaced) gives every environment the
    state of refilling all emptied slots with draws for all K, then entering."""
    p = make_params(3, 23, turnover_delay=(1, 9), replace_newcomer=True)
    lt = world_tables().at(3)
    exits = [[], [4], [], [0, 7], [2, 5, 9], [], [1], [3, 8], [], [0], [6, 1, 2], []]
    states, keys, masks = [], [], []
    for b, chosen in enumerate(exits):
        states.append(RESET(jax.random.PRNGKey(100 + b), p, WorldConfig()))
        keys.append(jax.random.PRNGKey(b))
        masks.append(jnp.zeros(10, bool).at[jnp.asarray(chosen, jnp.int32)].set(True))
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)
    batched = jax.jit(jax.vmap(lambda k, s, m: turnover(k, s, m, lt, p)))(stack(keys), stack(states), stack(masks))

    @jax.jit
    def refill_all_then_enter(key, state, mask):
        want = refill(key, state, mask, lt, p, state.t + 1)  # draws for all K slots
        want, entered = enter(want, lt, state.t + 1)
        return want.replace(t=state.t + 1), entered

    for b, (key, state, mask) in enumerate(zip(keys, states, masks)):
        want, entered = refill_all_then_enter(key, state, mask)
        got = jax.tree.map(lambda x: x[b], batched)
        same = jax.tree.map(lambda a, w: bool(np.array_equal(a, w)), (got[0], got[1]), (want, entered))
        assert all(jax.tree.leaves(same)), (b, exits[b], same)
        if exits[b]:
            assert (np.asarray(got[0].agents.uid)[exits[b]] != np.asarray(state.agents.uid)[exits[b]]).all()


@pytest.mark.parametrize("layout", range(len(world_tables().kind)))
def test_each_door_has_one_standable_neighbour(layout):
    """Why at most N_DOORS agents exit per step: an exit is a move onto a door
    cell, agents stand only on floor and chairs, and a door's only such
    neighbour is its inward cell (one agent per cell)."""
    lt = world_tables().at(layout)
    kind = np.asarray(lt.kind)
    for door, inward in zip(np.asarray(lt.doors), np.asarray(lt.door_inward)):
        standable = []
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            r, c = door[0] + dr, door[1] + dc
            if 0 <= r < C.H and 0 <= c < C.W and kind[r, c] in (C.FLOOR, C.CHAIR):
                standable.append((r, c))
        assert standable == [tuple(inward)]


def test_exits_per_step_stay_within_n_doors_in_rollouts():
    b, t = 50, 100  # every layout, every norm
    ps = [phase_params("train", i % 10, i % 50) for i in range(b)]
    p = jax.tree.map(lambda *x: jnp.stack(x), *ps)
    s = jax.jit(jax.vmap(reset_world))(jax.random.split(jax.random.PRNGKey(11), b), p)

    @jax.jit
    def run(s, key):
        def body(s, k):
            kc, kw, ka = jnp.moveaxis(jax.vmap(lambda x: jax.random.split(x, 3))(jax.random.split(k, b)), 1, 0)
            a = jax.vmap(lambda x: jax.random.randint(x, (), 0, C.N_ACTIONS))(ka)
            _, s, info = jax.vmap(env_step)(kc, kw, s, a, p)
            return s, info.exited.sum(-1)

        return jax.lax.scan(body, s, jax.random.split(key, t))[1]

    exits = np.asarray(run(s, jax.random.PRNGKey(12)))
    assert exits.sum() > 0 and exits.max() <= C.N_DOORS
