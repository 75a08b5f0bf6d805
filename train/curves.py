"""Curve summaries of DQN runs: 20k-transition return bins, medians and IQRs across norms.

Pure Python/numpy on the JSON-lines logs, so they can be tested on hand-built
rows.  Groups never pool reward conditions (or architectures, or capacities):
every summary is keyed by the run group of `group_key`.

* `bin_returns`: per run, the mean return of the training episodes that ended
  in each bin of `width` transitions (sum of returns / number of episodes of
  the metric rows whose end step falls in the bin: a row covers one compiled
  block, and blocks divide the validation points, e.g. 10k transitions in the
  paper configs, so with 20k bins every block lies inside one bin); then, per
  (group, family, bin), the median and the interquartile range across runs.
* `quantile_curves`: median and IQR across runs of any per-row value per step.
* `validation_curves`: mean validation task / joint success across runs, per
  (group, layout, step).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

RETURN_BIN = 20_000  # transitions per training-return bin (the paper's figures)


def group_key(row: dict) -> str:
    """The label of a run group: architecture, reward condition and capacity where recorded."""
    parts = [row[k] for k in ("arch", "reward_condition") if k in row]
    if row.get("capacity") is not None:
        parts.append(f"K={row['capacity']}")
    if row.get("source"):
        parts.insert(0, str(row["source"]))
    return " ".join(str(p) for p in parts)


def quartiles(values) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile), linear interpolation (numpy's default)."""
    q25, q50, q75 = np.percentile(np.asarray(values, float), [25, 50, 75])
    return float(q25), float(q50), float(q75)


def bin_returns(rows, width: int = RETURN_BIN) -> dict:
    """{(group, family): [(bin_end, q25, median, q75, n_runs), ...]} from metrics rows.

    Bin b holds the steps in (b * width, (b + 1) * width]; its end is (b + 1) * width, or the
    group's last logged step when the runs stop inside the bin (a partial last bin).
    Runs without a finished episode in a bin do not enter that bin's quantiles.
    """
    if int(width) < 1:
        raise ValueError(f"bin width={width!r} is invalid; allowed: a positive number of transitions")
    sums = defaultdict(lambda: [0.0, 0])  # (group, family, run, bin) -> [return sum, episodes]
    last = defaultdict(int)  # (group, family) -> last step logged
    for r in rows:
        b = (int(r["step"]) - 1) // width
        key = (group_key(r), r["family"])
        last[key] = max(last[key], int(r["step"]))
        if not r.get("episodes"):
            continue
        acc = sums[(group_key(r), r["family"], r["run"], b)]
        acc[0] += float(r["episode_return"]) * int(r["episodes"])
        acc[1] += int(r["episodes"])
    per_bin = defaultdict(lambda: defaultdict(list))
    for (group, family, _, b), (total, n) in sums.items():
        per_bin[(group, family)][b].append(total / n)
    return {
        k: [(min((b + 1) * width, last[k]), *quartiles(v), len(v)) for b, v in sorted(bins.items())]
        for k, bins in sorted(per_bin.items())
    }


def quantile_curves(rows, field: str) -> dict:
    """{group: [(step, q25, median, q75, n_runs), ...]} of `field` across runs (None skipped)."""
    pts = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get(field) is not None:
            pts[group_key(r)][int(r["step"])].append(float(r[field]))
    return {g: [(s, *quartiles(v), len(v)) for s, v in sorted(by_step.items())] for g, by_step in sorted(pts.items())}


def validation_curves(rows) -> dict:
    """{(group, layout): [(step, mean task, mean joint, n_runs), ...]}.

    Rows written before validation had layouts count as the cafe.
    """
    pts = defaultdict(lambda: defaultdict(list))
    for r in rows:
        pts[(group_key(r), r.get("layout", "cafe"))][int(r["step"])].append((r["task"], r["joint"]))
    return {
        k: [
            (s, float(np.mean([t for t, _ in v])), float(np.mean([j for _, j in v])), len(v))
            for s, v in sorted(by_step.items())
        ]
        for k, by_step in sorted(pts.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1]))
    }
