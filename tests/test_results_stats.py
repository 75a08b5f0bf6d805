"""normjax.results.stats: interval coverage and the paired test's size, by simulation (numpy only, seconds).

Synthetic tables in the benchmark's shape: 50 norms in four families of 12, 11, 16
and 11, three episodes per norm and condition.  Each norm's success rate is drawn
from a Beta distribution around its family's true rate (norm-level clustering:
the episodes of a norm share it); episodes are Bernoulli draws of that rate.
"""

from __future__ import annotations

import numpy as np
import pytest

from normjax.results.stats import cell_interval, degenerate_interval, holm, paired_difference, sign_flip_p

FAMILY = np.repeat([0, 1, 2, 3], [12, 11, 16, 11])
EPISODES = 3
NORM = np.repeat(np.arange(50), EPISODES)
STRATUM = np.repeat(FAMILY, EPISODES)


def _norm_rates(rng, family_rates, concentration):
    m = np.asarray(family_rates)[FAMILY]
    return rng.beta(m * concentration, (1.0 - m) * concentration)


def _episodes(rng, rates):
    return (rng.random((50, EPISODES)) < rates[:, None]).astype(float).ravel()


def _coverage(family_rates, seed):
    """1,000 simulated tables, 400 resamples each; concentration 2 (strong norm-level clustering)."""
    rng = np.random.default_rng(seed)
    truth = float(np.mean(np.asarray(family_rates)[FAMILY]))  # the overall rate, families at their sizes
    hits = 0
    for _ in range(1000):
        y = _episodes(rng, _norm_rates(rng, family_rates, 2.0))
        c = cell_interval(y, NORM, STRATUM, rng, n_resamples=400)
        hits += c["low"] <= truth <= c["high"]
    return hits / 1000


def test_overall_interval_covers_the_truth_in_93_to_97_percent():
    assert 0.93 <= _coverage((0.3, 0.1, 0.5, 0.2), 20261207) <= 0.97


@pytest.mark.slow
def test_overall_interval_covers_a_rare_success_rate():
    """The paper's DQN-MLP level (8% joint success) in every family: skewed, the hardest case for a
    bootstrap.  Measured 92.1% (docs/results.md): a little under 95%, not far under."""
    assert 0.90 <= _coverage((0.08, 0.08, 0.08, 0.08), 5) <= 0.97


def test_episode_level_interval_would_undercover():
    """The same tables with every episode its own cluster (a binomial-style interval): far below 95%,
    which is why the bootstrap resamples norms.  100 tables, 500 resamples."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(100):
        y = _episodes(rng, _norm_rates(rng, (0.3, 0.1, 0.5, 0.2), 1.0))
        c = cell_interval(y, np.arange(len(y)), STRATUM, rng, n_resamples=500)
        hits += c["low"] <= 0.28 <= c["high"]
    assert hits / 100 < 0.90


def test_paired_test_rejects_a_true_null_in_4_to_6_percent():
    """1,000 simulated pairs of rows with the same distribution (each row its own per-norm rate around
    a shared norm difficulty), 400 sign flips each; rejection at p <= 0.05."""
    rng = np.random.default_rng(11)
    rejections = 0
    for _ in range(1000):
        q = _norm_rates(rng, (0.3, 0.1, 0.5, 0.2), 2.0)
        a = _episodes(rng, rng.beta(q * 5 + 1e-3, (1 - q) * 5 + 1e-3))
        b = _episodes(rng, rng.beta(q * 5 + 1e-3, (1 - q) * 5 + 1e-3))
        rejections += paired_difference(a, b, NORM, STRATUM, rng, n_resamples=400)["p"] <= 0.05
    assert 0.04 <= rejections / 1000 <= 0.06, rejections


def test_paired_test_finds_a_real_difference():
    rng = np.random.default_rng(3)
    q = _norm_rates(rng, (0.3, 0.3, 0.3, 0.3), 2.0)
    a = _episodes(rng, np.clip(q + 0.25, 0, 1))
    b = _episodes(rng, q)
    d = paired_difference(a, b, NORM, STRATUM, rng)
    assert d["p"] < 0.01 and d["low"] > 0 and d["low"] <= d["diff"] <= d["high"]


def test_same_seed_same_interval_and_a_hand_checked_mean():
    y = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1.0])
    norms = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    a = cell_interval(y, norms, None, np.random.default_rng(5))
    b = cell_interval(y, norms, None, np.random.default_rng(5))
    assert a == b and a["mean"] == pytest.approx(6 / 9) and a["clusters"] == 3 and a["episodes"] == 9


def test_undefined_values_are_left_out():
    y = np.array([2.0, np.nan, 4.0, np.nan])
    c = cell_interval(y, np.array([0, 0, 1, 1]), None, np.random.default_rng(0))
    assert c["mean"] == 3.0 and c["episodes"] == 2


def test_all_equal_clusters_get_the_exact_binomial_interval():
    c = cell_interval(np.ones(150), NORM, STRATUM, np.random.default_rng(0))
    assert c["mean"] == 1.0 and c["high"] == 1.0 and c["low"] == pytest.approx(0.025 ** (1 / 50))
    low, high = degenerate_interval(0.0, 12)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 12))


def test_sign_flip_p_on_a_hand_case():
    assert sign_flip_p(np.zeros(5), 100, np.random.default_rng(0)) == 1.0
    # 12 norms all +1: only the all-plus and all-minus patterns (2 in 4096) reach it
    p = sign_flip_p(np.ones(12), 4000, np.random.default_rng(0))
    assert p < 0.01


def test_holm_by_hand():
    got = holm([0.01, 0.04, 0.03, np.nan])
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert got[:3] == pytest.approx([0.03, 0.06, 0.06]) and np.isnan(got[3])
