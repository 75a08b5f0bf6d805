"""The paper's human-study design: a pool of norms drawn across families, norms balanced over participants.

`draw_pool(candidates, n, seed)`: n norms of the candidates with the families in the
paper's proportions (its 25 norms: 6 access, 5 procedure, 8 coordination, 6 allocation;
Appendix 10.4), by largest remainder, at least one per family when n allows, capped by
what each family has (the rest goes to the families with room); the norms of a family
are drawn with a seeded permutation.  25 of all 50 gives exactly 6, 5, 8, 6.

`next_norms(counts, pool, n, seed)`: the next participant's n norms, from n different
families, least-played first: one at a time the norm with the fewest plays so far among
the families the participant does not have yet, ties broken by the family with the most
norms at the lowest count (so no family is left behind), then by a seeded order.  For
n < the number of families this keeps every pool norm's count within one of every other
after each participant (checked for n = 2, 3 over 200 seeded 25-norm pools): 50 participants
x 2 norms over 25 norms play every norm exactly 4 times.  With n = the number of families
each participant takes one norm of every family, so families of other sizes cannot be
balanced against each other; the norms within a family still are.
"""

from __future__ import annotations

import collections

import numpy as np

from normjax.norms import FAMILIES, FAMILY_OF

PAPER_POOL = {"access": 6, "procedure": 5, "coordination": 8, "allocation": 6}  # Appendix 10.4: 25 norms
_SALT_POOL, _SALT_ORDER = 0x9001, 0x9002  # separate streams of the study seed


def _family(n: int) -> int:
    return int(FAMILY_OF[n])


def pool_quota(candidates: list[int], n: int) -> dict[int, int]:
    """{family index: norms to draw} for a pool of n out of `candidates` (module docstring)."""
    have = collections.Counter(_family(x) for x in set(candidates))
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= sum(have.values()):
        raise ValueError(f"--pool must be an integer in 1..{sum(have.values())} (the candidate norms), got {n!r}")
    weight = {f: PAPER_POOL[FAMILIES[f]] for f in have}
    total = sum(weight.values())
    exact = {f: n * weight[f] / total for f in have}
    quota = {f: int(exact[f]) for f in have}
    for f in sorted(have, key=lambda f: (-(exact[f] - quota[f]), f))[: n - sum(quota.values())]:
        quota[f] += 1
    if n >= len(have):  # span every family present
        for f in have:
            if quota[f] == 0:
                quota[max(quota, key=lambda g: (quota[g], g))] -= 1
                quota[f] = 1
    spare = sum(max(0, quota[f] - have[f]) for f in have)
    quota = {f: min(quota[f], have[f]) for f in have}
    while spare:  # families with too few candidates: the rest to the others, most room first
        f = max((g for g in have if quota[g] < have[g]), key=lambda g: (have[g] - quota[g], -g))
        quota[f] += 1
        spare -= 1
    return quota


def draw_pool(candidates: list[int], n: int, seed: int) -> list[int]:
    """n norm ids of `candidates`, families in the paper's proportions (module docstring); sorted."""
    quota = pool_quota(candidates, n)
    rng = np.random.default_rng([_SALT_POOL, seed])
    out = []
    for f in sorted(quota):
        members = sorted(x for x in set(candidates) if _family(x) == f)
        out += [members[i] for i in rng.permutation(len(members))[: quota[f]]]
    return sorted(int(x) for x in out)


def check_balanced_assign(n, pool: list[int]) -> int:
    """`n` if every participant can get n norms of n different families of the pool; else ValueError."""
    fams = len({_family(x) for x in pool})
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= fams:
        raise ValueError(
            f"--assign must be an integer in 1..{fams} for this pool ({fams} famil{'y' if fams == 1 else 'ies'}: "
            f"each participant's norms come from different families), got {n!r}"
        )
    return n


def next_norms(counts: dict[int, int], pool: list[int], n: int, seed: int) -> list[int]:
    """The next participant's n norm ids given the plays so far, `counts` (module docstring)."""
    pool = sorted(set(pool))
    check_balanced_assign(n, pool)
    order = np.random.default_rng([_SALT_ORDER, seed]).permutation(len(pool))
    rank = {x: int(r) for x, r in zip(pool, order)}
    c = {x: int(counts.get(x, 0)) for x in pool}
    chosen: list[int] = []
    for _ in range(n):
        low = min(c.values())
        behind = collections.Counter(_family(x) for x in pool if c[x] == low)
        taken = {_family(x) for x in chosen}
        pick = min((x for x in pool if _family(x) not in taken), key=lambda x: (c[x], -behind[_family(x)], rank[x]))
        chosen.append(pick)
        c[pick] += 1
    return chosen


def schedule(participants: int, pool: list[int], n: int, seed: int) -> list[list[int]]:
    """The norms of the first `participants` participants when nobody's slot is freed."""
    counts: dict[int, int] = {}
    out = []
    for _ in range(participants):
        got = next_norms(counts, pool, n, seed)
        for x in got:
            counts[x] = counts.get(x, 0) + 1
        out.append(got)
    return out


__all__ = ["PAPER_POOL", "check_balanced_assign", "draw_pool", "next_norms", "pool_quota", "schedule"]
