"""Table cells with intervals, and paired comparisons of two rows, from `Result`s.

A cell is the mean of one metric over a result's episodes of one condition
(seen / unseen) and one group: a family, ``overall``, or (``by="norm"``) one
norm.  Family and overall cells resample norms (overall: within families);
a one-norm cell resamples the level below the norm: its seeds or
participants where there are several, else its episodes (`cell_clusters`).
Every cell draws from its own generator, seeded by the table seed and the
cell's place (condition, group, metric), not by the row: a row's intervals do
not change when other rows are added or when it is relabelled.
"""

from __future__ import annotations

import zlib

import numpy as np

from normjax.cli_names import FAMILIES
from normjax.results import stats
from normjax.results.records import CONDITIONS, PERCENT, SECONDARY, SUCCESS, Result

GROUPS = FAMILIES + ("overall",)


def cell_rng(seed: int, *name) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32("|".join(map(str, name)).encode())])


def _scale(metric: str) -> float:
    return 100.0 if metric in PERCENT else 1.0


def cell_clusters(result: Result, sel: np.ndarray, by: str) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(cluster of each selected episode, its stratum or None, what a cluster is).

    A family or overall cell holding one norm only is resampled like a one-norm cell."""
    norms = result.column("norm")[sel]
    if by != "norm" and len(set(norms.tolist())) > 1:
        return norms, result.column("family")[sel], "norms"
    units = result.column("unit")[sel]
    if len(set(units.tolist())) > 1:
        return units, None, "seeds" if result.kind == "dqn" else "participants"
    episodes = np.char.add(result.column("condition")[sel], result.column("episode")[sel].astype(int).astype(str))
    return episodes, None, "episodes"


def result_cells(
    result: Result, by: str = "family", metrics=SUCCESS + SECONDARY, seed: int = 0, n_resamples: int = stats.RESAMPLES
) -> list[dict]:
    """Every cell of `result`: {label, condition, group, metric, mean, low, high, episodes, clusters, unit, method}."""
    cond_col, fam_col, norm_col = (result.column(k) for k in ("condition", "family", "norm"))
    groups = list(dict.fromkeys(norm_col.tolist())) if by == "norm" else GROUPS
    out = []
    for cond in CONDITIONS:
        for group in groups:
            if by == "norm":
                sel = (cond_col == cond) & (norm_col == group)
            else:
                sel = (cond_col == cond) & ((fam_col == group) | (group == "overall"))
            if not sel.any():
                continue
            clusters, strata, unit = cell_clusters(result, sel, by)
            for metric in metrics:
                values = result.column(metric)[sel]
                rng = cell_rng(seed, cond, group, metric)
                c = stats.cell_interval(values, clusters, strata, rng, n_resamples, proportion=metric in PERCENT)
                k = _scale(metric)
                out.append(
                    dict(
                        label=result.label,
                        condition=cond,
                        group=group,
                        metric=metric,
                        mean=k * c["mean"],
                        low=k * c["low"],
                        high=k * c["high"],
                        episodes=c["episodes"],
                        clusters=c["clusters"],
                        unit=unit,
                        method=c["method"],
                    )
                )
    return out


def _per_episode(result: Result, metric: str) -> dict:
    """{(norm, condition, episode): (family, mean over the result's units)}."""
    acc: dict = {}
    for r in result.records:
        v = r[metric]
        if v is None:
            continue
        key = (r["norm"], r["condition"], r["episode"])
        fam, total, n = acc.get(key, (r["family"], 0.0, 0))
        acc[key] = (fam, total + float(v), n + 1)
    return {k: (fam, total / n) for k, (fam, total, n) in acc.items()}


def compare(a: Result, b: Result, metrics=SUCCESS, seed: int = 0, n_resamples: int = stats.RESAMPLES) -> list[dict]:
    """a - b on their common episodes, per condition, family and overall (`stats.paired_difference`)."""
    out = []
    for metric in metrics:
        ea, eb = _per_episode(a, metric), _per_episode(b, metric)
        keys = sorted(set(ea) & set(eb))
        if not keys:
            raise ValueError(f"--compare {a.label!r} {b.label!r}: no test episode in common")
        norm = np.asarray([k[0] for k in keys])
        cond = np.asarray([k[1] for k in keys])
        fam = np.asarray([ea[k][0] for k in keys])
        va = np.asarray([ea[k][1] for k in keys])
        vb = np.asarray([eb[k][1] for k in keys])
        for c in CONDITIONS:
            for group in GROUPS:
                sel = (cond == c) & ((fam == group) | (group == "overall"))
                if not sel.any():
                    continue
                rng = cell_rng(seed, c, group, metric)
                d = stats.paired_difference(
                    va[sel], vb[sel], norm[sel], fam[sel], rng, n_resamples, proportion=metric in PERCENT
                )
                k = _scale(metric)
                out.append(
                    dict(
                        a=a.label,
                        b=b.label,
                        condition=c,
                        group=group,
                        metric=metric,
                        diff=k * d["diff"],
                        low=k * d["low"],
                        high=k * d["high"],
                        p=d["p"],
                        episodes=d["episodes"],
                        clusters=d["clusters"],
                    )
                )
    return out


def add_holm(rows: list[dict]) -> list[dict]:
    """`p_holm` on each comparison row: Holm over the comparisons of the same cell (condition, group, metric)."""
    cells: dict = {}
    for i, r in enumerate(rows):
        cells.setdefault((r["condition"], r["group"], r["metric"]), []).append(i)
    for idx in cells.values():
        adjusted = stats.holm([rows[i]["p"] for i in idx])
        for i, p in zip(idx, adjusted):
            rows[i]["p_holm"] = float(p)
    return rows


__all__ = ["GROUPS", "add_holm", "cell_clusters", "cell_rng", "compare", "result_cells"]
