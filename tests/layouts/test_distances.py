"""The host-side distance tables against a plain breadth-first search per target.

`distances_to_all` searches from all 165 targets at once, one vectorised round
per distance; the references here search from one target at a time with a
queue, as the rules in docs/world.md §8 read.
"""

import collections

import numpy as np
import pytest

from normjax import constants as C
from normjax.layouts.geometry import neighbour_index
from normjax.layouts.parse import ALL_LAYOUTS, load_layout
from normjax.layouts.routes import N_VARIANTS, V_CW, _corridors, _edge_mask, distance_to_targets
from normjax.layouts.tables import distance_table


def _reference(n_cells, target, may_step):
    """Moves from every cell to `target` (UNREACHABLE where none): a queue-based
    search backwards from the target; `may_step(x, a, y)` says whether the move a
    from x to its neighbour y may be taken."""
    nb = neighbour_index()
    dist = np.full(n_cells, C.UNREACHABLE, np.int64)
    dist[target] = 0
    queue = collections.deque([target])
    while queue:
        y = queue.popleft()
        for x in range(n_cells):
            for a in range(4):
                if nb[x, a] == y and dist[x] == C.UNREACHABLE and may_step(x, a, y):
                    dist[x] = dist[y] + 1
                    queue.append(x)
    return dist


@pytest.mark.parametrize("name", [ALL_LAYOUTS[0], ALL_LAYOUTS[5], ALL_LAYOUTS[-1]])
def test_distance_table_equals_a_search_per_target(name):
    lay = load_layout(name)
    through = lay.walkable.reshape(-1)
    enterable = (lay.walkable | (lay.kind == C.DOOR)).reshape(-1)
    table = distance_table(lay, lay.walkable.copy())
    assert table.dtype == np.int16
    for g in range(0, C.N_CELLS, 7):
        if enterable[g]:
            want = _reference(C.N_CELLS, g, lambda x, a, y: through[x])
        else:
            want = np.full(C.N_CELLS, C.UNREACHABLE)
            want[g] = 0
        np.testing.assert_array_equal(table[g], want, err_msg=f"{name}: target {g}")


@pytest.mark.parametrize("variant", [0, V_CW, N_VARIANTS - 1])
def test_route_table_equals_a_search_per_target(variant):
    lay = load_layout(ALL_LAYOUTS[0])
    edge = _edge_mask(lay, variant)
    corridor = _corridors(lay, variant)
    standable = ((lay.kind == C.FLOOR) | (lay.kind == C.CHAIR)).reshape(-1)
    enterable = standable | (lay.kind == C.DOOR).reshape(-1)
    table = distance_to_targets(lay, variant)
    assert table.dtype == np.uint8
    for g in range(0, C.N_CELLS, 5):
        if enterable[g]:
            want = _reference(
                C.N_CELLS, g, lambda x, a, y, g=g: edge[x, a] and standable[x] and (corridor[y] or y == g)
            )
        else:
            want = np.full(C.N_CELLS, C.UNREACHABLE)
        np.testing.assert_array_equal(table[g], want, err_msg=f"variant {variant}: target {g}")
