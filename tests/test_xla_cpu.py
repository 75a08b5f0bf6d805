"""The unrolled threefry lowering changes no random value (normjax/xla_cpu.py)."""

import subprocess
import sys

import numpy as np

CODE = """
import jax, numpy as np
{setup}
key = jax.random.PRNGKey(7)
f = jax.jit(lambda k: (jax.random.bits(k, (257,)), jax.random.uniform(jax.random.split(k, 5)[3], (3, 4)),
                       jax.random.permutation(k, 10)))
text = f.lower(key).compile().as_text()
np.save("{out}", np.concatenate([np.asarray(x, np.float64).ravel() for x in f(key)]))
print("while_loops", text.count("while("))
"""


def _run(tmp_path, name, setup, env=None):
    out = tmp_path / f"{name}.npy"
    res = subprocess.run([sys.executable, "-c", CODE.format(setup=setup, out=out)], capture_output=True,
                         text=True, env=env, check=True)
    return np.load(out), int(res.stdout.split()[-1])


def test_unrolled_threefry_gives_the_same_bits_with_fewer_loops(tmp_path):
    import os

    plain, loops_plain = _run(tmp_path, "plain", "")
    env = dict(os.environ)
    env.pop("NORMJAX_ROLLED_THREEFRY", None)
    ours, loops_ours = _run(tmp_path, "ours", "import normjax, normjax.xla_cpu as X; assert X.UNROLLED", env)
    np.testing.assert_array_equal(plain, ours)
    assert loops_ours < loops_plain
    env["NORMJAX_ROLLED_THREEFRY"] = "1"
    kept, loops_kept = _run(tmp_path, "kept", "import normjax, normjax.xla_cpu as X; assert not X.UNROLLED", env)
    np.testing.assert_array_equal(plain, kept)
    assert loops_kept == loops_plain


def test_computed_once_is_the_identity_and_ends_a_fusion():
    """Values (incl. NaN, infinities, -0.0, extreme ints, bools) pass unchanged,
    under jit and vmap; in the compiled program the random bits are hashed in
    their own fusion, not inside the consumer that reads each one K times."""
    import jax
    import jax.numpy as jnp

    from normjax.xla_cpu import computed_once

    floats = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.5, -3e38, 1e-45], np.float32)
    ints = np.array([np.iinfo(np.int32).min, -1, 0, 7, np.iinfo(np.int32).max], np.int32)
    for x in (floats, ints, ints.astype(np.uint32), np.array([True, False])):
        want = x[None].repeat(3, 0)
        got = np.asarray(jax.jit(jax.vmap(computed_once))(want))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
        if x.dtype == np.float32:
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

    def ranks(key, once):
        bits = jax.random.bits(key, (10,), jnp.uint32)
        bits = computed_once(bits) if once else bits
        return (bits[None, :] < bits[:, None]).sum(1)

    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    texts = {once: jax.jit(jax.vmap(lambda k: ranks(k, once))).lower(keys).compile().as_text() for once in (0, 1)}
    np.testing.assert_array_equal(jax.vmap(lambda k: ranks(k, 0))(keys), jax.vmap(lambda k: ranks(k, 1))(keys))

    def hashed_in_compare_fusion(text):
        # the fused computation holding the [K, K] compare: does it also hash (xor)?
        blocks = text.split("\n\n")
        return any(" compare(" in b and " xor(" in b for b in blocks)

    assert hashed_in_compare_fusion(texts[0]) and not hashed_in_compare_fusion(texts[1])
