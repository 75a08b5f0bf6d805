"""normjax.results.stats: interval coverage and the paired test's size, by simulation (numpy only, seconds).

Synthetic tables in the benchmark's shape: 50 norms in four families of 12, 11, 16
and 11, three episodes per norm (one condition).  Each norm's success rate is drawn
from a Beta distribution around its family's true rate with concentration 2 (strong
norm-level clustering: the episodes of a norm share it); episodes are Bernoulli
draws of that rate.  The batch functions (`table_intervals`, `paired_differences`)
run the same code as the per-cell ones, many tables at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from normjax.results.stats import (
    cell_interval,
    degenerate_interval,
    holm,
    paired_difference,
    paired_differences,
    sign_flip_p,
    table_intervals,
)

FAMILY = np.repeat([0, 1, 2, 3], [12, 11, 16, 11])
EPISODES = 3
NORM = np.repeat(np.arange(50), EPISODES)
STRATUM = np.repeat(FAMILY, EPISODES)
MIXED = (0.3, 0.1, 0.5, 0.2)


def _norm_rates(rng, family_rates, tables, concentration=2.0):
    m = np.broadcast_to(np.asarray(family_rates, float)[FAMILY], (tables, 50))
    return rng.beta(m * concentration, (1.0 - m) * concentration)


def _episodes(rng, rates):
    """[tables, 50 norms] rates -> [tables, 150 episodes] outcomes."""
    return (rng.random((len(rates), 50, EPISODES)) < rates[:, :, None]).astype(float).reshape(len(rates), -1)


def _coverage(family_rates, seed, tables=1000, resamples=500, clusters=NORM):
    rng = np.random.default_rng(seed)
    truth = float(np.mean(np.asarray(family_rates)[FAMILY]))  # the overall rate, families at their sizes
    y = _episodes(rng, _norm_rates(rng, family_rates, tables))
    r = table_intervals(y, clusters, STRATUM, rng, n_resamples=resamples)
    return float(np.mean((r["low"] <= truth) & (truth <= r["high"])))


def test_overall_interval_covers_the_truth_in_93_to_97_percent():
    """1,000 simulated tables, 500 resamples each."""
    assert 0.93 <= _coverage(MIXED, 20261207) <= 0.97


def test_a_rare_success_rate_is_covered_nearly_as_often():
    """The paper's DQN-MLP level (8% joint success) in every family: skewed, the hardest case for a
    bootstrap.  1,000 tables; measured 93.0-94.2% over seeds 5-8 (docs/results.md): a little under 95%."""
    assert 0.92 <= _coverage((0.08, 0.08, 0.08, 0.08), 5) <= 0.97


def test_episode_level_interval_would_undercover():
    """The same tables with every episode its own cluster (the independence a binomial interval
    assumes): well below 95% (86% over 1,000 tables), which is why the bootstrap resamples norms.
    400 tables, 200 resamples."""
    assert _coverage(MIXED, 7, tables=400, resamples=200, clusters=np.arange(150)) < 0.91


def test_paired_test_rejects_a_true_null_in_4_to_6_percent():
    """2,000 simulated pairs of rows with the same distribution (each row its own per-norm rate
    around a shared norm difficulty), 500 sign flips each; rejection at p <= 0.05."""
    rng = np.random.default_rng(11)
    q = _norm_rates(rng, MIXED, 2000)
    own = lambda: rng.beta(q * 5 + 1e-3, (1 - q) * 5 + 1e-3)
    a, b = _episodes(rng, own()), _episodes(rng, own())
    p = paired_differences(a, b, NORM, STRATUM, rng, n_resamples=500)["p"]
    assert 0.04 <= np.mean(p <= 0.05) <= 0.06


def test_paired_test_finds_a_real_difference():
    rng = np.random.default_rng(3)
    q = _norm_rates(rng, (0.3, 0.3, 0.3, 0.3), 1)
    a, b = _episodes(rng, np.clip(q + 0.25, 0, 1))[0], _episodes(rng, q)[0]
    d = paired_difference(a, b, NORM, STRATUM, rng)
    assert d["p"] < 0.01 and d["low"] > 0 and d["low"] <= d["diff"] <= d["high"] and d["clusters"] == 50


def test_one_cell_is_the_batch_of_one():
    rng_rates = np.random.default_rng(9)
    y = _episodes(rng_rates, _norm_rates(rng_rates, MIXED, 1))
    c = cell_interval(y[0], NORM, STRATUM, np.random.default_rng(4), 300)
    b = table_intervals(y, NORM, STRATUM, np.random.default_rng(4), 300)
    assert (c["mean"], c["low"], c["high"]) == (b["mean"][0], b["low"][0], b["high"][0])


def test_same_seed_same_interval_and_a_hand_checked_mean():
    y = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1.0])
    norms = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    a = cell_interval(y, norms, None, np.random.default_rng(5))
    b = cell_interval(y, norms, None, np.random.default_rng(5))
    assert a == b and a["mean"] == pytest.approx(6 / 9) and a["clusters"] == 3 and a["episodes"] == 9
    assert a["low"] < a["mean"] < a["high"]


def test_undefined_values_are_left_out():
    y = np.array([2.0, np.nan, 4.0, np.nan, np.nan])
    c = cell_interval(y, np.array([0, 0, 1, 1, 2]), None, np.random.default_rng(0), proportion=False)
    assert c["mean"] == 3.0 and c["episodes"] == 2 and c["clusters"] == 2


def test_all_equal_clusters_get_the_exact_binomial_interval():
    c = cell_interval(np.ones(150), NORM, STRATUM, np.random.default_rng(0))
    assert c["mean"] == 1.0 and c["high"] == 1.0 and c["low"] == pytest.approx(0.025 ** (1 / 50))
    low, high = degenerate_interval(0.0, 12)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 12))
    lengths = cell_interval(np.full(150, 7.0), NORM, STRATUM, proportion=False)  # not a rate: a point
    assert (lengths["low"], lengths["high"]) == (7.0, 7.0)


def test_sign_flip_p_on_hand_cases():
    assert sign_flip_p(np.zeros(5), 100, np.random.default_rng(0)) == 1.0
    # 12 norms all +1: only the all-plus and all-minus patterns (2 in 4096) reach the total
    assert sign_flip_p(np.ones(12), 4000, np.random.default_rng(0)) < 0.01
    # one norm: every pattern ties in |total|, so the mid-p is 1/2 (half the ties), never significant
    assert sign_flip_p(np.array([3.0]), 1000, np.random.default_rng(0)) == 0.5


def test_holm_by_hand():
    got = holm([0.01, 0.04, 0.03, np.nan])
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert got[:3] == pytest.approx([0.03, 0.06, 0.06]) and np.isnan(got[3])


def test_a_difference_equal_in_every_norm_gets_the_rows_intervals_combined():
    """Row a at 0% and row b at 100% in every norm: no bootstrap spread, yet not a certain -100."""
    d = paired_difference(np.zeros(150), np.ones(150), NORM, STRATUM, np.random.default_rng(0))
    bound = 0.025 ** (1 / 50)  # row b's lower bound, exact with the 50 norms as trials; row a's upper is 1 - bound
    assert d["diff"] == -1.0 and d["low"] == -1.0 and d["high"] == pytest.approx((1 - bound) - bound)
    assert d["p"] < 0.001


def test_one_norm_per_family_is_resampled_across_families():
    """A run on one norm per family (configs/cpu_default): lone strata are pooled, so the overall
    interval has spread instead of collapsing to the point."""
    y = np.array([1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0.0])
    c = cell_interval(y, np.repeat([0, 1, 2, 3], 3), np.repeat([0, 1, 2, 3], 3), np.random.default_rng(0))
    assert c["mean"] == pytest.approx(4 / 12) and c["low"] < c["mean"] < c["high"]


def test_equal_clusters_between_0_and_1_fall_back_to_the_episodes():
    """Two norms, each 1 of 3 episodes a success: no spread between norms, yet not a certain 33.3%."""
    c = cell_interval(np.array([1, 0, 0, 0, 1, 0.0]), np.repeat([0, 1], 3), None, np.random.default_rng(0))
    assert c["mean"] == pytest.approx(1 / 3) and c["low"] < c["mean"] < c["high"]
    assert c["method"] == "episode bootstrap (clusters all equal)"
