"""Norm Judgment records that a cue-counter cannot pass: balanced per norm and per cue.

    judgment_pool(ep) -> [(ep, step, slot, violates, cue)]
    balanced_by_norm(pool, n, rng) -> (picked, report)

A transition's *cue* is what a shortcut could read from the prompt without
knowing the norm: the judged agent's red crosses among the steps the prompt
lists (none / an earlier step / the previous step, `state.cross_level`),
whether it is the newcomer (the frame's gold star), and what kind of cell the
move enters (a door, a chair, zone R, or another cell: `state.target_kind`;
without it "a move onto a door or a chair violates" passes the access and
allocation families, whose violations happen there).  Records are drawn in
pairs, one violation and one compliant move with the same norm and the same
cue, so that within every norm the violation share is exactly 1/2 and the cue
has the same distribution in both classes: a rule that reads only the cue
("violates if the agent has a red cross", "... in the last step", "the
newcomer violates", "a move onto a door violates") scores balanced accuracy
1/2 per norm and per file.

Pairs are spread as evenly as the episodes allow, first over the norms, then
within a norm over the cues; a norm or cue short of pairs leaves its share to
the others (the report says what each norm got).
"""

from __future__ import annotations

from normjax.finetune import records as R
from normjax.finetune.state import CROSS_LEVELS, TARGET_KINDS, cross_level, target_kind
from normjax.norms import NORMS

CUES = tuple(
    (level, newcomer, kind) for level in range(3) for newcomer in (False, True) for kind in range(len(TARGET_KINDS))
)
CUE_NAMES = tuple(
    f"{CROSS_LEVELS[level]}{'_newcomer' if newcomer else ''}_{TARGET_KINDS[kind]}" for level, newcomer, kind in CUES
)


def judgment_pool(ep) -> list[tuple]:
    """(episode, step, slot, violates, cue index) of every judgeable transition of `ep`."""
    out = []
    for i, k, v in R.judgment_candidates(ep):
        cue = CUES.index((cross_level(ep, i, k), k == 0, target_kind(ep.data["target"][i, k])))
        out.append((ep, i, k, v, cue))
    return out


def even_fill(total: int, caps: list[int]) -> list[int]:
    """`total` units over bins with capacities `caps`, as evenly as the capacities allow
    (a bin that fills up leaves its share to the others)."""
    alloc = [0] * len(caps)
    remaining = min(total, sum(caps))
    while remaining > 0:
        open_bins = [j for j in range(len(caps)) if alloc[j] < caps[j]]
        share = max(1, remaining // len(open_bins))
        for j in open_bins:
            add = min(share, caps[j] - alloc[j], remaining)
            alloc[j] += add
            remaining -= add
            if remaining == 0:
                break
    return alloc


def _cells(pool: list[tuple]) -> dict:
    """norm id -> cue -> violates -> [items]"""
    cells: dict = {}
    for item in pool:
        ep, _, _, v, cue = item
        by_cue = cells.setdefault(ep.norm_id, [[[], []] for _ in CUES])
        by_cue[cue][int(v)].append(item)
    return cells


def pair_capacity(pool: list[tuple], norms: list[int]) -> dict[int, int]:
    """norm id -> how many (violation, compliant) pairs with equal cues the pool holds."""
    cells = _cells(pool)
    return {m: sum(min(len(c[0]), len(c[1])) for c in cells.get(m, [])) for m in norms}


def balanced_by_norm(pool: list[tuple], n: int, norms: list[int], rng) -> tuple[list[tuple], dict]:
    """n // 2 pairs (and, for odd n, one more compliant move), spread evenly over `norms` and cues."""
    cells = _cells(pool)
    caps = pair_capacity(pool, norms)
    per_norm = dict(zip(norms, even_fill(n // 2, [caps[m] for m in norms])))
    picked = []
    for m in norms:
        if not per_norm[m]:
            continue
        cues = cells[m]
        per_cue = even_fill(per_norm[m], [min(len(c[0]), len(c[1])) for c in cues])
        for c, x in zip(cues, per_cue):
            for items in c:
                picked += [items[j] for j in rng.choice(len(items), size=x, replace=False)]
    if n % 2 and picked:
        taken = {id(p) for p in picked}
        spare = [p for p in pool if not p[3] and id(p) not in taken and p[0].norm_id in norms]
        if spare:
            picked.append(spare[int(rng.integers(len(spare)))])
    picked.sort(key=lambda p: (p[0].seed, p[1], p[2]))
    return picked, report(picked, norms)


def _shares(items: list[tuple]) -> dict | None:
    """The share of each cue among `items`."""
    if not items:
        return None
    return {name: round(sum(p[4] == j for p in items) / len(items), 3) for j, name in enumerate(CUE_NAMES)}


def report(picked: list[tuple], norms: list[int]) -> dict:
    """Per norm: records, violation share, and the cue shares within each class."""
    out = {}
    for m in norms:
        mine = [p for p in picked if p[0].norm_id == m]
        viol = [p for p in mine if p[3]]
        out[NORMS[m].name] = dict(
            records=len(mine),
            violation_share=round(len(viol) / len(mine), 3) if mine else None,
            cues_violations=_shares(viol),
            cues_compliant=_shares([p for p in mine if not p[3]]),
        )
    return out


__all__ = ["CUES", "CUE_NAMES", "balanced_by_norm", "even_fill", "judgment_pool", "pair_capacity", "report"]
