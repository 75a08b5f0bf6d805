"""The unrolled threefry lowering (normjax/xla_cpu.py): opt-in, and no random value changes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# One fresh process (this session has configured normjax): the same jax.random
# program lowered plainly, after `import normjax` (and its env and protocol), by the
# `normjax` command's process, and after `configure(unrolled_threefry=False)`.
CODE = """
import json, sys
import jax, numpy as np

def lowered():
    key = jax.random.PRNGKey(7)
    # A fresh function each time: jit's caches hold programs compiled earlier.
    f = jax.jit(lambda k: (jax.random.bits(k, (257,)), jax.random.uniform(jax.random.split(k, 5)[3], (3, 4)),
                           jax.random.permutation(k, 10)))
    bits = np.concatenate([np.asarray(x, np.float64).ravel() for x in f(key)])
    return f.lower(key).as_text(), f.lower(key).compile().as_text().count("while("), bits.tolist()

out = {"plain": lowered()}
import normjax, normjax.env, normjax.protocol
from normjax.xla_cpu import configure, unrolled_threefry_applied
out["imported"] = lowered() + (unrolled_threefry_applied(),)
from normjax.cli import main
rc = main(["render", "--layout", "no_such_layout", "--no-cache"])  # fails on the name, before tracing
out["cli"] = lowered() + (unrolled_threefry_applied(), rc)
configure(unrolled_threefry=False)
out["undone"] = lowered() + (unrolled_threefry_applied(),)
json.dump(out, sys.stdout)
"""


def _stages(**env):
    full = {k: v for k, v in os.environ.items() if k != "NORMJAX_ROLLED_THREEFRY"} | env
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=full, check=True)
    return json.loads(res.stdout)


def test_import_changes_nothing_and_the_cli_gets_the_unrolled_lowering():
    out = _stages()
    text, loops, bits = out["plain"]
    # `import normjax`: jax's lowering (the lowered program's text) unchanged.
    assert out["imported"][:3] == [text, loops, bits] and out["imported"][3] is False
    # The command's process: the same bits with fewer while loops.
    cli_text, cli_loops, cli_bits, applied, rc = out["cli"]
    assert rc == 2 and applied is True
    assert cli_loops < loops and cli_text != text
    np.testing.assert_array_equal(np.asarray(cli_bits), np.asarray(bits))
    # configure(unrolled_threefry=False) restores jax's own rule.
    assert out["undone"][:3] == [text, loops, bits] and out["undone"][3] is False


def test_rolled_threefry_env_keeps_the_default_in_the_cli():
    out = _stages(NORMJAX_ROLLED_THREEFRY="1")
    assert out["cli"][:3] == out["plain"] and out["cli"][3] is False


# The command's code generation, which the tests do not use (normjax/testing/pytest_plugin.py):
# at LLVM level 0 the identity reduction is executed, and XLA:CPU's flush-to-zero turns the
# denormal 1e-45 into 0; at XLA's default level it is removed. So it runs in a fresh process
# at XLA's default level.
@pytest.mark.slow
def test_computed_once_is_the_identity_and_ends_a_fusion():
    """Values (incl. NaN, infinities, -0.0, extreme ints, bools) pass unchanged,
    under jit and vmap; in the compiled program the random bits are hashed in
    their own fusion, not inside the consumer that reads each one K times."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = "from tests.test_xla_cpu import check_computed_once_at_the_default_level as f; f()"
    repo = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]


def check_computed_once_at_the_default_level():
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


@pytest.mark.benchmark  # two processes of benchmarks/trajectory_hash.py
def test_the_default_tiers_compile_level_gives_the_same_trajectories():
    """The default tier compiles at LLVM level 0 (normjax/testing/pytest_plugin.py), the `normjax` command at
    XLA's default: every state, step record and observation of full-step rollouts (traced
    layouts and norms, the single-layout path, the world step alone) hashes the same.  The
    single-layout path runs on cafe alone: the other layouts compile the same operations with
    other constants, and each costs two compiles (about 45 s on 2 cores)."""
    from normjax.testing.pytest_plugin import FAST_COMPILE_FLAG

    repo = Path(__file__).resolve().parents[1]
    hashes = {}
    for flags in ("", FAST_COMPILE_FLAG):
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        if flags:
            env["XLA_FLAGS"] = flags
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.trajectory_hash",
                "--envs",
                "24",
                "--steps",
                "60",
                "--static-layouts",
                "0",
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        hashes[flags] = [
            line for line in res.stdout.splitlines() if line.split(" ")[0] in ("traced", "static", "world")
        ]
    assert len(hashes[""]) == 3 and hashes[FAST_COMPILE_FLAG] == hashes[""]
