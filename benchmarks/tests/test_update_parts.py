"""benchmarks/experiments/update_parts.py and cnn_conv_ab.py: what they compare is what they say."""

import json

import jax
import numpy as np
import pytest

import benchmarks.common as common
from benchmarks.experiments.cnn_conv_ab import FORMULATIONS, conv3x3_stacked
from normjax.agents.networks import conv3x3_same


def test_the_ab_baseline_is_the_same_convolution():
    """cnn_conv_ab.py times two formulations of one function: equal to float rounding."""
    assert FORMULATIONS["concatenated"] is conv3x3_same
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(k[0], (2, 4, 11, 15, 16))
    kernel = jax.random.normal(k[1], (3, 3, 16, 32))
    bias = jax.random.normal(k[2], (32,))
    a, b = np.asarray(conv3x3_stacked(x, kernel, bias)), np.asarray(conv3x3_same(x, kernel, bias))
    assert np.linalg.norm(a - b) / np.linalg.norm(a) < 1e-6


@pytest.mark.benchmark
def test_update_parts_splits_a_small_cnn_population(tmp_path, monkeypatch):
    from benchmarks.experiments.update_parts import main

    monkeypatch.setattr(common, "EXPERIMENT_RESULTS", tmp_path)
    main(["--arch", "cnn", "--runs", "2", "--updates", "1", "--rounds", "1", "--profile"])
    r = json.loads((tmp_path / "update_parts_cnn.json").read_text())
    layers = r["layers"]
    assert r["params_per_run"] == sum(v["params"] for v in layers.values()) == 1_400_997
    # conv2: 2 x 11 x 15 x (3 x 3 x 16 x 32) FLOPs per observation; the large layer 2 x 5,370 x 256.
    assert layers["conv2"]["forward_flops_per_obs"] == 2 * 165 * 9 * 16 * 32
    assert layers["l0"]["forward_flops_per_obs"] == 2 * 5370 * 256
    assert set(r["median_cpu_s_per_population_update"]) == {"update", "update_sgd", "optimiser_only"}
    assert r["share_of_update"]["update"] == 1.0
    cost = r["xla_cost_per_population_update"]
    assert cost["optimiser_only"]["flops"] < cost["update_sgd"]["flops"] < cost["update"]["flops"]
    ops = r["profile_update"]["operations"]
    assert ops and all(0 < o["share"] <= 1 for o in ops)
