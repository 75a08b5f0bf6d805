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


def resample_weights(strata, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """[n_resamples, n_clusters] weights: within each stratum of n clusters, n - 1 draws with
    replacement, each drawn cluster weighted n / (n - 1).

    Drawing n - 1 rather than n (McCarthy & Snowden 1985; Rao & Wu 1988) makes the
    bootstrap variance of a stratum mean the unbiased one; with n draws it is
    (n - 1) / n of it, 8% too small for a family of 12 norms, and the intervals
    too narrow.  Strata of one cluster are pooled into one stratum (a lone cluster
    redrawn from itself would carry no variance); one cluster alone is drawn once.
    """
    strata = np.asarray(strata)
    values, sizes = np.unique(strata, return_counts=True)
    lone = np.isin(strata, values[sizes == 1])
    groups = [np.flatnonzero(strata == s) for s in values[sizes > 1]] + ([np.flatnonzero(lone)] if lone.any() else [])
    w = np.zeros((n_resamples, len(strata)))
    for idx in groups:
        n = len(idx)
        draws = max(n - 1, 1)
        picks = rng.integers(0, n, size=(n_resamples, draws)) + n * np.arange(n_resamples)[:, None]
        w[:, idx] = np.bincount(picks.ravel(), minlength=n * n_resamples).reshape(n_resamples, n) * (n / draws)
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


CHUNK = 4_000_000  # resample weights held at once (tables x resamples x clusters), ~32 MB


def _cluster_index(clusters, strata) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cluster ids, each episode's cluster index, each cluster's stratum index)."""
    ids, inv = np.unique(np.asarray(clusters), return_inverse=True)
    if strata is None:
        return ids, inv, np.zeros(len(ids), int)
    st = np.asarray(strata)
    first = np.zeros(len(ids), int)
    first[inv[::-1]] = np.arange(len(inv))[::-1]  # each cluster's first episode
    return ids, inv, np.unique(st, return_inverse=True)[1][first]


def _batch_totals(values: np.ndarray, inv: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-table, per-cluster sums and counts of `values` [tables, episodes], NaN left out."""
    onehot = np.zeros((values.shape[1], n))
    onehot[np.arange(values.shape[1]), inv] = 1.0
    ok = ~np.isnan(values)
    return np.where(ok, values, 0.0) @ onehot, ok.astype(float) @ onehot


def _quantile_rows(sorted_est: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise linear-interpolated quantiles (numpy's default method) at per-row levels `q`."""
    pos = np.clip(q, 0.0, 1.0) * (sorted_est.shape[1] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, sorted_est.shape[1] - 1)
    rows = np.arange(len(q))
    return sorted_est[rows, lo] + (pos - lo) * (sorted_est[rows, hi] - sorted_est[rows, lo])


def _bca(est: np.ndarray, theta: np.ndarray, sums: np.ndarray, counts: np.ndarray, level: float):
    """Bias-corrected and accelerated percentile bounds, row-wise, of bootstrap estimates `est`
    [tables, resamples] of the ratios sum(sums) / sum(counts); the acceleration from the
    leave-one-cluster-out jackknife.

    A rate near 0 or 1 has a skewed sampling distribution; plain percentiles of a
    cluster bootstrap then miss on the far side more often than on the near one.
    """
    nd = NormalDist()
    share = (np.sum(est < theta[:, None], 1) + 0.5 * np.sum(est == theta[:, None], 1)) / est.shape[1]
    z0 = np.array([nd.inv_cdf(x) for x in np.clip(share, 1e-6, 1 - 1e-6)])
    jack = (sums.sum(1, keepdims=True) - sums) / np.maximum(counts.sum(1, keepdims=True) - counts, 1e-300)
    dev = jack.mean(1, keepdims=True) - jack
    denom = 6.0 * np.sum(dev**2, 1) ** 1.5
    acc = np.where(denom > 0, np.sum(dev**3, 1) / np.where(denom > 0, denom, 1.0), 0.0)
    srt = np.sort(est, 1)
    bounds = []
    for z in (nd.inv_cdf((1.0 - level) / 2.0), nd.inv_cdf((1.0 + level) / 2.0)):
        q = np.array([nd.cdf(x) for x in z0 + (z0 + z) / (1.0 - acc * (z0 + z))])
        bounds.append(_quantile_rows(srt, q))
    return bounds[0], bounds[1]


def _intervals(sums, counts, cl_strata, rng, n_resamples: int, level: float, proportion: bool) -> dict:
    """The estimate sum(sums) / sum(counts) of each table (row) and its 95% interval (module doc)."""
    mean = sums.sum(1) / counts.sum(1)
    low, high = np.empty_like(mean), np.empty_like(mean)
    method = np.full(len(mean), "cluster bootstrap (BCa)", dtype=object)
    flat = np.ptp(sums / counts, axis=1) == 0.0
    for t in np.flatnonzero(flat):  # every cluster agrees: nothing to resample
        low[t], high[t] = degenerate_interval(mean[t], sums.shape[1], level) if proportion else (mean[t], mean[t])
        method[t] = "exact, clusters as trials" if proportion else "every cluster equal"
    todo = np.flatnonzero(~flat)
    step = max(1, CHUNK // (n_resamples * sums.shape[1]))
    for i in range(0, len(todo), step):
        t = todo[i : i + step]
        w = resample_weights(cl_strata, n_resamples * len(t), rng).reshape(len(t), n_resamples, -1)
        est = np.einsum("tbn,tn->tb", w, sums[t]) / np.maximum(np.einsum("tbn,tn->tb", w, counts[t]), 1e-300)
        low[t], high[t] = _bca(est, mean[t], sums[t], counts[t], level)
    return dict(mean=mean, low=low, high=high, method=method)


def table_intervals(
    values,
    clusters,
    strata=None,
    rng: np.random.Generator | None = None,
    n_resamples: int = RESAMPLES,
    level: float = LEVEL,
    proportion: bool = True,
) -> dict:
    """`cell_interval` for many tables at once: `values` [tables, episodes] sharing one cluster
    structure, every cluster holding a defined value in every table.  Returns arrays (one entry
    per table) under `cell_interval`'s keys mean, low, high, method."""
    rng = np.random.default_rng(0) if rng is None else rng
    values = np.atleast_2d(np.asarray(values, float))
    ids, inv, cl_strata = _cluster_index(clusters, strata)
    sums, counts = _batch_totals(values, inv, len(ids))
    if (counts == 0).any():
        raise ValueError("table_intervals: a cluster without any defined value; use cell_interval per table")
    return _intervals(sums, counts, cl_strata, rng, n_resamples, level, proportion)


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
    `strata`: each episode's stratum (e.g. its family; a cluster lies in one),
    or None for one stratum; `proportion`: values are success rates in [0, 1]
    (else, e.g. path lengths, clusters that all agree give a point).  Returns
    {"mean", "low", "high", "episodes", "clusters", "method"}; the mean is NaN
    when no value is defined.  Clusters without a defined value are left out.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    values = np.asarray(values, float)
    ok = ~np.isnan(values)
    out = dict(episodes=int(ok.sum()), clusters=len(set(np.asarray(clusters)[ok].tolist())))
    if not ok.any():
        nan = float("nan")
        return dict(out, mean=nan, low=nan, high=nan, method="none")
    st = None if strata is None else np.asarray(strata)[ok]
    r = table_intervals(values[ok][None], np.asarray(clusters)[ok], st, rng, n_resamples, level, proportion)
    if proportion and r["low"][0] == r["high"][0] and np.ptp(values[ok]) > 0:
        # every cluster has the same rate strictly between 0 and 1 (e.g. two norms at 1/3): the
        # clusters show no spread, the episodes do; resample those rather than claim a point
        r = table_intervals(values[ok][None], np.arange(int(ok.sum())), None, rng, n_resamples, level, proportion)
        r["method"] = np.asarray(["episode bootstrap (clusters all equal)"], dtype=object)
    return dict(out, **{k: (v[0] if k == "method" else float(v[0])) for k, v in r.items()})


def paired_differences(
    a,
    b,
    clusters,
    strata=None,
    rng: np.random.Generator | None = None,
    n_resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> dict:
    """`paired_difference` for many pairs of rows at once: `a`, `b` [tables, episodes] sharing one
    cluster structure, no NaN.  Returns arrays diff, low, high, p (one entry per table)."""
    rng = np.random.default_rng(0) if rng is None else rng
    d = np.atleast_2d(np.asarray(a, float) - np.asarray(b, float))
    ids, inv, cl_strata = _cluster_index(clusters, strata)
    sums, counts = _batch_totals(d, inv, len(ids))
    r = _intervals(sums, counts, cl_strata, rng, n_resamples, level, proportion=False)
    return dict(diff=r["mean"], low=r["low"], high=r["high"], p=sign_flip_p(sums, n_resamples, rng))


def paired_difference(
    a,
    b,
    clusters,
    strata=None,
    rng: np.random.Generator | None = None,
    n_resamples: int = RESAMPLES,
    level: float = LEVEL,
    proportion: bool = True,
) -> dict:
    """Mean of a - b over matched episodes, its paired cluster-bootstrap interval and a sign-flip p-value.

    `a[i]` and `b[i]` are the two rows' outcomes of the same episode i (NaN: left
    out).  Under the null hypothesis the two rows are exchangeable within each
    norm, so each norm's summed difference is as likely to have either sign; the
    p-value (two-sided) compares the observed total with those of `n_resamples`
    random sign patterns (`sign_flip_p`).  Where every norm's difference is the
    same (e.g. one row at 0% and the other at 100% in every norm) the bootstrap
    has nothing to resample; the interval is then the widest difference the two
    rows' own intervals allow, [low_a - high_b, high_a - low_b].
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = ~(np.isnan(a) | np.isnan(b))
    clusters = np.asarray(clusters)[ok]
    out = dict(episodes=int(ok.sum()), clusters=len(set(clusters.tolist())))
    if not ok.any():
        nan = float("nan")
        return dict(out, diff=nan, low=nan, high=nan, p=nan)
    st = None if strata is None else np.asarray(strata)[ok]
    rng = np.random.default_rng(0) if rng is None else rng
    r = {
        k: float(v[0])
        for k, v in paired_differences(a[ok][None], b[ok][None], clusters, st, rng, n_resamples, level).items()
    }
    if r["low"] == r["high"]:
        ca, cb = (cell_interval(x[ok], clusters, st, rng, n_resamples, level, proportion) for x in (a, b))
        r.update(low=ca["low"] - cb["high"], high=ca["high"] - cb["low"])
    return dict(out, **r)


def sign_flip_p(cluster_sums, n_resamples: int, rng: np.random.Generator) -> np.ndarray | float:
    """Two-sided Monte Carlo sign-flip mid-p-value of each row's total of `cluster_sums` [tables, clusters]
    (a 1-D input gives a float).

    (patterns beyond the observed |total| + half of those tied with it) / (1 + n_resamples),
    the observed pattern counted as a tie.  Binary outcomes make the totals
    lattice-valued, so many patterns tie; counting ties in full (the classic
    p-value) rejects a true null well under 5% of the time (3.1% of 2,000 simulated
    null pairs like tests/results/test_stats.py's), the mid-p close to 5% (4.5-4.7%).
    A total of exactly zero gets p = 1.
    """
    s = np.asarray(cluster_sums, float)
    one = s.ndim == 1
    s = np.atleast_2d(s)
    observed = np.abs(s.sum(1))
    tol = 1e-9 * np.maximum(1.0, observed)
    p = np.ones(len(s))
    todo = np.flatnonzero(observed > 0)
    step = max(1, CHUNK // (n_resamples * s.shape[1]))
    for i in range(0, len(todo), step):
        t = todo[i : i + step]
        size = len(t) * n_resamples * s.shape[1]  # one random bit per sign: bytes are the cheapest draw
        bits = np.unpackbits(np.frombuffer(rng.bytes(-(-size // 8)), np.uint8))[:size]
        signs = bits.reshape(len(t), n_resamples, s.shape[1]) * 2.0 - 1.0
        flipped = np.abs(np.einsum("trn,tn->tr", signs, s[t]))
        beyond = np.sum(flipped > (observed[t] + tol[t])[:, None], 1)
        ties = np.sum(np.abs(flipped - observed[t][:, None]) <= tol[t][:, None], 1) + 1
        p[t] = (beyond + 0.5 * ties) / (1 + n_resamples)
    return float(p[0]) if one else p


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
    "degenerate_interval",
    "holm",
    "paired_difference",
    "paired_differences",
    "resample_weights",
    "sign_flip_p",
    "table_intervals",
]
