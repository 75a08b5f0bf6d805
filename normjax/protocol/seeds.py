"""Seeds, groups and the episode list of the test protocol (docs/world.md §9).

* `base_seed(norm_id, seed=0) = 1000 * (norm_id + 1) + 100_000 * seed`; the
  protocol's canonical run is `seed=0`.  Interaction uses s, seen tests use
  s+1..s+3, unseen tests s+4..s+6 (`episode_seeds`).
* The newcomer takes each social group once per condition, in an order drawn
  from s: `rng = numpy.random.default_rng(s)`; the seen order is
  `rng.permutation(3)`, the unseen order the next `rng.permutation(3)`
  (`group_orders`).  The key of a test episode is `jax.random.PRNGKey(seed)`.
"""

from __future__ import annotations

import numpy as np

from normjax import constants as C
from normjax.layouts import LAYOUTS
from normjax.norms import N_NORMS, NORMS

CONDITIONS = ("seen", "unseen")
EPISODES_PER_CONDITION = 3
TEST_STEPS = C.TEST_STEPS


def base_seed(norm_id: int, seed: int = 0) -> int:
    """Norm-specific base seed s: interaction s, tests s+1..s+6."""
    return 1000 * (int(norm_id) + 1) + 100_000 * int(seed)


def episode_seeds(norm_id: int, seed: int = 0) -> dict[str, list[int]]:
    s = base_seed(norm_id, seed)
    return {"seen": [s + 1, s + 2, s + 3], "unseen": [s + 4, s + 5, s + 6]}


def group_orders(norm_id: int, seed: int = 0) -> dict[str, list[int]]:
    """Newcomer group per test episode: a permutation of (0, 1, 2) per condition."""
    rng = np.random.default_rng(base_seed(norm_id, seed))
    return {"seen": [int(g) for g in rng.permutation(3)], "unseen": [int(g) for g in rng.permutation(3)]}


def test_episodes(norm_ids=None, seed: int = 0) -> list[dict]:
    """The protocol's episode list: per norm, 3 seen then 3 unseen episodes."""
    norm_ids = range(N_NORMS) if norm_ids is None else norm_ids
    out = []
    for n in norm_ids:
        n = int(n)
        seeds, groups = episode_seeds(n, seed), group_orders(n, seed)
        for cond in CONDITIONS:
            layout = "cafe" if cond == "seen" else NORMS[n].unseen_layout
            for e in range(EPISODES_PER_CONDITION):
                out.append(
                    dict(
                        norm_id=n,
                        norm=NORMS[n].name,
                        family=NORMS[n].family,
                        condition=cond,
                        layout=layout,
                        layout_id=LAYOUTS.index(layout),
                        episode=e,
                        seed=seeds[cond][e],
                        group=groups[cond][e],
                    )
                )
    return out


__all__ = [
    "CONDITIONS",
    "EPISODES_PER_CONDITION",
    "TEST_STEPS",
    "base_seed",
    "episode_seeds",
    "group_orders",
    "test_episodes",
]
