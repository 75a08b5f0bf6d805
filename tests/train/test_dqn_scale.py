"""Sharding over forced CPU devices (slow tier: a subprocess with four XLA devices trains twice).

Exact resume of a killed run is in test_dqn_run.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest

from tests.support.processes import xla_flags

ROOT = Path(__file__).resolve().parents[2]


SHARD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import normjax.train.run as run
    from normjax.train.config import load_config
    assert jax.device_count() == 4, jax.devices()
    cfg = load_config("configs/test_tiny.json", [
        "norms=forbidden_zone_q,clockwise_circulation,bend_right_1,zone_r_capacity_1"])
    out = sys.argv[1]
    sharded = run.train_population(cfg, out + "/sharded", progress=False, final_test=False, log=print)
    leaf = jax.tree.leaves(sharded["carry"][0][0].q_params)[0]
    n_shards = len(leaf.sharding.device_set)
    run.population_mesh = lambda n: None  # the same population on one device
    single = run.train_population(cfg, out + "/single", progress=False, final_test=False, log=print)
    same = all(np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(jax.tree.leaves(sharded["carry"]), jax.tree.leaves(single["carry"])))
    close = all(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
                for a, b in zip(jax.tree.leaves(sharded["carry"]), jax.tree.leaves(single["carry"])))
    print(json.dumps({"n_shards": n_shards, "same": same, "close": close}))
    """
)


@pytest.mark.distributed
def test_sharded_population_equals_single_device(tmp_path):
    env = dict(
        os.environ,
        XLA_FLAGS=xla_flags(4),
        PYTHONPATH=str(ROOT),
        JAX_PLATFORMS="cpu",
        JAX_COMPILATION_CACHE_DIR=str(jax.config.jax_compilation_cache_dir or ROOT / ".jax_cache"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", SHARD_SCRIPT, str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n_shards"] == 4
    assert result["close"], result
