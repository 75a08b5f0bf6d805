"""The sort-free argsort and permutation equal the library calls they replace."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax.ground.ranking import argmin_small, argsort_small, permutation_small, stable_rank

# Jitted once (a program per input length): the eager calls dispatched op by op.
ARGSORT = jax.jit(argsort_small)
ARGMIN = jax.jit(argmin_small)
RANK = jax.jit(stable_rank)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=12))
def test_argsort_small_is_stable_argsort_with_ties(values):
    v = np.asarray(values, np.int32)
    np.testing.assert_array_equal(np.asarray(ARGSORT(v)), np.argsort(v, kind="stable"))


# No subnormals: XLA on CPU flushes them to zero, so numpy would order 1e-39 and 0.0 apart
# where every jitted comparison sees a tie (the step's uniform draws are never subnormal).
@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 7), st.data())
def test_argmin_small_is_argmin_first_minimum(rows, n, data):
    """The planner's action choice: argmin over a short last axis, ties to the
    first minimum, for rows of integers (many ties) and floats (INF entries)."""
    ints = np.asarray(
        data.draw(st.lists(st.integers(-2, 2), min_size=rows * n, max_size=rows * n)), np.float32
    ).reshape(rows, n)
    floats = np.asarray(
        data.draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e6]) | st.floats(0, 4, width=32, allow_subnormal=False),
                min_size=rows * n,
                max_size=rows * n,
            )
        ),
        np.float32,
    ).reshape(rows, n)
    for v in (ints, floats):
        np.testing.assert_array_equal(np.asarray(ARGMIN(v)), np.argmin(v, axis=-1))
        np.testing.assert_array_equal(np.asarray(ARGMIN(v)), np.asarray(jnp.argmin(v, axis=-1)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 2.0, width=32, allow_subnormal=False), min_size=1, max_size=10))
def test_argsort_small_floats(values):
    v = np.asarray(values, np.float32)
    np.testing.assert_array_equal(np.asarray(ARGSORT(v)), np.argsort(v, kind="stable"))
    np.testing.assert_array_equal(np.asarray(ARGSORT(v)), np.asarray(jnp.argsort(jnp.asarray(v))))
    rank = np.asarray(RANK(v))
    np.testing.assert_array_equal(np.sort(rank), np.arange(len(v)))  # a permutation


def test_permutation_small_equals_jax_random_permutation_under_vmap():
    keys = jax.random.split(jax.random.PRNGKey(0), 4096)
    for n in (1, 2, 6, 10, 37):
        want = jax.vmap(lambda k: jax.random.permutation(k, n))(keys)
        got = jax.jit(jax.vmap(lambda k: permutation_small(k, n)))(keys)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_argsort_small_under_vmap_with_padding_values():
    keys = jax.random.split(jax.random.PRNGKey(1), 2048)
    u = jax.vmap(lambda k: jnp.where(jax.random.bernoulli(k, 0.5, (10,)), jax.random.uniform(k, (10,)), 2.0))(keys)
    np.testing.assert_array_equal(np.asarray(jax.vmap(argsort_small)(u)), np.asarray(jax.vmap(jnp.argsort)(u)))


def test_permutation_small_rejects_sizes_needing_more_rounds():
    with pytest.raises(ValueError, match="1..1023"):
        permutation_small(jax.random.PRNGKey(0), 5000)
