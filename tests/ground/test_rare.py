"""`normjax.ground.rare.run_where`: per environment `fn` where needed and `idle`
elsewhere, unbatched (a cond), under vmap (packed in chunks) and unpacked."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax.ground.rare import chunk_size, run_where


def _double(x, scale):
    """Doubles positive entries (and scales them); the identity elsewhere."""
    return jnp.where(x > 0, 2 * x * scale, x), (x > 0).sum()


def _same(x, scale):
    return x, jnp.int32(0)


def _call(x, scale):
    return run_where(x.max() > 0, _double, _same, x, scale)


# One program per batch size: sizes at the chunk-size edges (chunks of 1, 2, 3
# and 5 environments; 40 runs up to 8 chunks), any share of needing ones.
BATCHES = (1, 7, 8, 9, 17, 40)
VCALL = jax.jit(jax.vmap(_call, in_axes=(0, None)))
VDOUBLE = jax.jit(jax.vmap(_double, in_axes=(0, None)))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BATCHES), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_vmap_equals_fn_for_any_share_of_needing_environments(batch, share, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 3)).astype(np.float32)
    idle_rows = rng.random(batch) >= share  # these rows need nothing
    x[idle_rows] = -np.abs(x[idle_rows])
    x = jnp.asarray(x)
    scale = jnp.float32(1.5)
    got = VCALL(x, scale)
    want = VDOUBLE(x, scale)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_unbatched_call_is_fn_or_idle():
    x = jnp.asarray([1.0, -2.0, 3.0])
    got = jax.jit(_call)(x, jnp.float32(2.0))
    np.testing.assert_array_equal(np.asarray(got[0]), [4.0, -2.0, 12.0])
    assert int(got[1]) == 2
    marked = jax.jit(lambda v, n: run_where(n, lambda a: a + 100.0, lambda a: a, v))
    np.testing.assert_array_equal(np.asarray(marked(x, jnp.bool_(True))), np.asarray(x) + 100.0)
    np.testing.assert_array_equal(np.asarray(marked(x, jnp.bool_(False))), np.asarray(x))


def test_fn_where_needed_idle_elsewhere():
    """Environments that need nothing get `idle`'s result, the others `fn`'s."""

    def marked(x):
        return x + 100.0

    def same(x):
        return x

    x = jnp.asarray([[1.0], [-1.0], [2.0], [-3.0]])
    out = jax.vmap(lambda v: run_where(v[0] > 0, marked, same, v))(x)
    np.testing.assert_array_equal(np.asarray(out)[:, 0], [101.0, -1.0, 102.0, -3.0])


def test_batched_needed_with_unbatched_inputs_and_nested_vmap():
    x = jnp.arange(12.0).reshape(3, 4) - 5.0  # [outer, inner]
    f = lambda v, s: run_where(v > 0, lambda a, b: a * b, lambda a, b: a, v, s)
    got = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None)))(x, jnp.float32(3.0))
    np.testing.assert_array_equal(np.asarray(got), np.where(np.asarray(x) > 0, 3 * np.asarray(x), np.asarray(x)))


@pytest.mark.parametrize("flag", [True, False])
def test_needed_the_same_for_the_whole_batch(flag):
    """An unbatched `needed` runs `fn` (or `idle`) for every environment at once."""
    g = jax.jit(jax.vmap(lambda v, f: run_where(f, lambda a: a + 1, lambda a: a, v), in_axes=(0, None)))
    np.testing.assert_array_equal(np.asarray(g(jnp.zeros(5), jnp.bool_(flag))), np.full(5, float(flag)))


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_bad_share_is_named(share):
    with pytest.raises(ValueError, match=f"share must be in \\(0, 1\\], got {share}"):
        run_where(jnp.bool_(True), lambda a: a, lambda a: a, jnp.zeros(2), share=share)


@pytest.mark.parametrize(
    "batch,share,size",
    [(1, 1 / 8, 1), (7, 1 / 8, 1), (8, 1 / 8, 1), (9, 1 / 8, 2), (4096, 1 / 8, 512), (4096, 1 / 4, 1024), (3, 1.0, 3)],
)
def test_chunk_size(batch, share, size):
    assert chunk_size(batch, share) == size


def test_packing_off_selects_without_the_chunk_loop():
    """With `packing=False` (for batches the compiler shards over devices)
    the result is the same, computed for all and selected: no chunk loop."""

    def step(x, packing=True):
        return jax.vmap(lambda v: run_where(v[0] > 0, lambda a: a + 100.0, lambda a: a, v, packing=packing))(x)

    def unpacked(x):
        return step(x, packing=False)

    x = jnp.asarray([[1.0], [-1.0]])
    for f in (step, unpacked):
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(x))[:, 0], [101.0, -1.0])
    assert "while" in jax.jit(step).lower(x).as_text()
    assert "while" not in jax.jit(unpacked).lower(x).as_text()
