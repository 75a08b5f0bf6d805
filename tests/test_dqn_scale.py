"""Checkpoint/resume exactness and sharding over forced CPU devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np

from train.config import load_config
from train.run import train_population

ROOT = Path(__file__).resolve().parents[1]


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def test_killed_run_resumes_to_identical_parameters_and_metrics(tmp_path):
    cfg = load_config(ROOT / "configs/test_tiny.json")
    a = train_population(cfg, tmp_path / "a", progress=False, final_test=False, log=lambda *_: None)
    stopped = train_population(cfg, tmp_path / "b", progress=False, final_test=False,
                               stop_after=400, log=lambda *_: None)
    assert stopped["stopped_at"] == 400
    b = train_population(cfg, tmp_path / "b", progress=False, final_test=False, log=lambda *_: None)
    for x, y in zip(_leaves(a["carry"]), _leaves(b["carry"])):
        assert np.array_equal(x, y)
    rows_a = (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()
    rows_b = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert rows_a == rows_b and len(rows_a) == 2 * 2  # 2 blocks x 2 runs
    assert (tmp_path / "b" / "validation.jsonl").read_text() == (tmp_path / "a" / "validation.jsonl").read_text()
    # The probe set is stored once and read back: same probes and probe curves after the resume.
    probes_a = (tmp_path / "a" / "probes.jsonl").read_text().splitlines()
    assert probes_a == (tmp_path / "b" / "probes.jsonl").read_text().splitlines() and len(probes_a) == 2 * 2
    with np.load(tmp_path / "a" / "probes.npz") as za, np.load(tmp_path / "b" / "probes.npz") as zb:
        assert sorted(za.files) == sorted(zb.files)
        assert all(np.array_equal(za[k], zb[k]) for k in za.files)


SHARD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import train.run as run
    from train.config import load_config
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


def test_sharded_population_equals_single_device(tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
               JAX_COMPILATION_CACHE_DIR=str(jax.config.jax_compilation_cache_dir or ROOT / ".jax_cache"))
    proc = subprocess.run([sys.executable, "-c", SHARD_SCRIPT, str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n_shards"] == 4
    assert result["close"], result
