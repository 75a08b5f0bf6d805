"""Intervals and paired tests for Table 1 cells: a cluster bootstrap over norms (numpy only).

A Table 1 cell is a mean over episodes, but the episodes of one norm are not
independent draws: they share the newcomer's interaction-phase belief (or its
trained network) and the norm's community.  The unit that is (approximately)
exchangeable is the norm, so the bootstrap resamples norms with replacement,
within each family (the family composition is fixed by the benchmark's
design), and keeps every episode of a drawn norm.  Seeds or participants
nested in a norm ride along with it: resampling only the top level of a nested
design carries the lower levels' variation too (resampling both levels would
count it twice; Davison & Hinkley 1997, section 3.8).

* `cell_interval`: point estimate and a 95% percentile interval of a cell;
  when every cluster has the same mean the bootstrap has nothing to resample,
  and the interval is the exact binomial one with the number of clusters as
  the sample size (`degenerate_interval`).
* `paired_difference`: the difference of two rows on the same episodes, a
  paired bootstrap interval (both rows resampled by the same norms) and a
  sign-flip permutation p-value over norms.
* `holm`: Holm's step-down adjustment of several p-values.

Every function takes an explicit `numpy.random.Generator`; the same seed gives
the same intervals.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

RESAMPLES = 2000  # bootstrap resamples and sign flips per cell (Monte Carlo error of a 95% bound ~0.5 points)
LEVEL = 0.95


def cluster_totals(values, clusters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cluster ids, per-cluster sum, per-cluster count) of `values`, ignoring NaN (a metric undefined there)."""
    values = np.asarray(values, float)
    ids, inv = np.unique(np.asarray(clusters), return_inverse=True)
    ok = ~np.isnan(values)
    sums = np.bincount(inv[ok], values[ok], minlength=len(ids))
    counts = np.bincount(inv[ok], minlength=len(ids)).astype(float)
    return ids, sums, counts


def resample_weights(strata, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """[n_resamples, n_clusters] counts: how often each cluster is drawn, within its stratum."""
    strata = np.asarray(strata)
    w = np.zeros((n_resamples, len(strata)))
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        n = len(idx)
        draws = max(n - 1, 1)
        w[:, idx] = rng.multinomial(draws, np.full(n, 1.0 / n), size=n_resamples) * (n / draws)
    return w


def degenerate_interval(value: float, n_clusters: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper-Pearson interval for `n_clusters` clusters that all scored `value` (0 or 1).

    Each cluster counts as one Bernoulli trial: the most the data can claim if
    a norm's episodes were perfectly correlated.  A value strictly inside (0, 1)
    (e.g. every norm at task 0.5) gets the point (nothing to resample).
    """
    a = (1.0 - level) / 2.0
    if value >= 1.0:
        return float(a ** (1.0 / n_clusters)), 1.0
    if value <= 0.0:
        return 0.0, float(1.0 - a ** (1.0 / n_clusters))
    return value, value


def cell_interval(
    values,
    clusters,
    strata=None,
    rng: np.random.Generator | None = None,
    n_resamples: int = RESAMPLES,
    level: float = LEVEL,
    proportion: bool = True,
) -> dict:
    """Mean of `values` (one per episode; NaN = undefined) with a cluster-bootstrap interval.

    `clusters`: the norm (or, for a one-norm cell, the seed) of each episode;
    `strata`: each cluster's stratum as a per-episode array (e.g. its family),
    or None for one stratum; `proportion`: values are success rates in [0, 1]
    (else, e.g. path lengths, clusters that all agree give a point).  Returns {"mean", "low", "high", "episodes",
    "clusters", "method"}; the mean is NaN when no value is defined.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    values = np.asarray(values, float)
    ids, sums, counts = cluster_totals(values, clusters)
    keep = counts > 0
    sums, counts = sums[keep], counts[keep]
    out = dict(episodes=int(counts.sum()), clusters=int(keep.sum()))
    if not keep.any():
        return dict(out, mean=float("nan"), low=float("nan"), high=float("nan"), method="none")
    mean = float(sums.sum() / counts.sum())
    if strata is None:
        cl_strata = np.zeros(len(sums), int)
    else:
        first = {c: s for c, s in zip(np.asarray(clusters).tolist(), np.asarray(strata).tolist())}
        cl_strata = np.asarray([first[c] for c in ids[keep].tolist()])
    per_cluster = sums / counts
    if np.ptp(per_cluster) == 0.0:
        low, high = degenerate_interval(mean, len(sums), level) if proportion else (mean, mean)
        return dict(out, mean=mean, low=low, high=high, method="exact, clusters as trials")
    w = resample_weights(cl_strata, n_resamples, rng)
    est = (w @ sums) / np.maximum(w @ counts, 1e-300)
    low, high = bca_bounds(est, mean, sums, counts, level)
    return dict(out, mean=mean, low=low, high=high, method="cluster bootstrap (BCa)")


def bca_bounds(est, theta: float, sums, counts, level: float) -> tuple[float, float]:
    """Bias-corrected and accelerated percentile bounds of the bootstrap estimates `est` of the
    ratio sum(sums) / sum(counts); the acceleration from the leave-one-cluster-out jackknife.

    A rate near 0 or 1 has a skewed sampling distribution; plain percentiles of
    a cluster bootstrap then miss on the far side more often than on the near one.
    """
    nd = NormalDist()
    share = (np.sum(est < theta) + 0.5 * np.sum(est == theta)) / len(est)
    z0 = nd.inv_cdf(min(max(share, 1e-6), 1 - 1e-6))
    jack = (sums.sum() - sums) / np.maximum(counts.sum() - counts, 1e-300)
    dev = jack.mean() - jack
    denom = 6.0 * np.sum(dev**2) ** 1.5
    acc = float(np.sum(dev**3) / denom) if denom > 0 else 0.0
    out = []
    for z in (nd.inv_cdf((1.0 - level) / 2.0), nd.inv_cdf((1.0 + level) / 2.0)):
        q = nd.cdf(z0 + (z0 + z) / (1.0 - acc * (z0 + z)))
        out.append(float(np.quantile(est, min(max(q, 0.0), 1.0))))
    return out[0], out[1]


def paired_difference(
    a,
    b,
    clusters,
    strata=None,
    rng: np.random.Generator | None = None,
    n_resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> dict:
    """Mean of a - b over matched episodes, its paired cluster-bootstrap interval and a sign-flip p-value.

    `a[i]` and `b[i]` are the two rows' outcomes of the same episode i.  Under
    the null hypothesis the two rows are exchangeable within each norm, so each
    norm's summed difference is as likely to have either sign; the p-value
    (two-sided) compares the observed total with those of `n_resamples` random
    sign patterns (`sign_flip_p`).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    d = np.asarray(a, float) - np.asarray(b, float)
    ids, sums, counts = cluster_totals(d, clusters)
    keep = counts > 0
    sums, counts = sums[keep], counts[keep]
    if not keep.any():
        nan = float("nan")
        return dict(diff=nan, low=nan, high=nan, p=nan, episodes=0, clusters=0)
    diff = float(sums.sum() / counts.sum())
    if strata is None:
        cl_strata = np.zeros(len(sums), int)
    else:
        first = {c: s for c, s in zip(np.asarray(clusters).tolist(), np.asarray(strata).tolist())}
        cl_strata = np.asarray([first[c] for c in ids[keep].tolist()])
    w = resample_weights(cl_strata, n_resamples, rng)
    est = (w @ sums) / (w @ counts)
    al = (1.0 - level) / 2.0
    low, high = np.quantile(est, [al, 1.0 - al])
    p = sign_flip_p(sums, n_resamples, rng)
    return dict(diff=diff, low=float(low), high=float(high), p=p, episodes=int(counts.sum()), clusters=int(len(sums)))


def sign_flip_p(cluster_sums, n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided Monte Carlo sign-flip mid-p-value of sum(cluster_sums).

    (patterns beyond the observed |total| + half of those tied with it) / (1 + n_resamples),
    the observed pattern counted as a tie.  Binary outcomes make the totals
    lattice-valued, so many patterns tie; counting ties in full (the classic
    p-value) rejects a true null well under 5% of the time (3.3% in the
    simulation of tests/test_results_stats.py), the mid-p close to 5% (4.9%).
    """
    s = np.asarray(cluster_sums, float)
    observed = abs(s.sum())
    if observed == 0.0:
        return 1.0
    signs = rng.integers(0, 2, size=(n_resamples, len(s))) * 2.0 - 1.0
    flipped = np.abs(signs @ s)
    tol = 1e-9 * max(1.0, observed)
    beyond = int(np.sum(flipped > observed + tol))
    ties = int(np.sum(np.abs(flipped - observed) <= tol)) + 1  # the observed pattern is one of them
    return (beyond + 0.5 * ties) / (1 + n_resamples)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), in the input's order; NaN stays NaN."""
    p = np.asarray(pvalues, float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not len(ok):
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


__all__ = [
    "LEVEL",
    "RESAMPLES",
    "cell_interval",
    "cluster_totals",
    "degenerate_interval",
    "holm",
    "paired_difference",
    "resample_weights",
    "sign_flip_p",
]
