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
