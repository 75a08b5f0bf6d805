"""Per-layout device tables (normjax/layouts/tables.py): the packed cell codes
and reads of the stacked tables for a traced layout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.ground.moves import kind_of, target_codes
from normjax.layouts.tables import CODE_KIND, CODE_ZONE_Q, CODE_ZONE_R, cell_codes, host_tables, world_tables


def test_cell_code_packs_kind_and_zones_of_every_layout():
    """`LayoutTables.code` decodes to the kind, R and Q grids on every cell of
    every layout, and reads as a wall with no zone off the grid."""
    t = host_tables()
    code = t["code"].astype(np.int16)
    np.testing.assert_array_equal(code & CODE_KIND, t["kind"])
    np.testing.assert_array_equal((code & CODE_ZONE_R) != 0, t["zone_r"])
    np.testing.assert_array_equal((code & CODE_ZONE_Q) != 0, t["zone_q"])
    corner = jnp.asarray([[0, 0], [C.H - 1, C.W - 1]])  # up/left and down/right leave the grid
    codes = np.asarray(target_codes(jnp.asarray(t["code"][0]), corner))
    assert codes[0, C.UP] == 0 and codes[0, C.LEFT] == 0 and codes[1, C.DOWN] == 0 and codes[1, C.RIGHT] == 0
    assert np.asarray(kind_of(target_codes(jnp.asarray(t["code"][0]), corner)))[0, C.WAIT] == t["kind"][0, 0, 0]
    with pytest.raises(ValueError, match="3 bits"):
        cell_codes(np.full((2, 2), 8), np.zeros((2, 2), bool), np.zeros((2, 2), bool))


def test_layout_tables_read_equals_indexing_the_slice():
    """`LayoutTables.read` (stacked-table lookups for a traced layout) returns
    what indexing the one-layout slice returns, traced, static and under vmap."""
    wt = world_tables()
    n = wt.kind.shape[0]
    layouts = jnp.arange(n)
    rows = jnp.arange(n) % 3
    cells = (jnp.arange(n) * 37) % C.N_CELLS

    def both(lid, row, cell):
        lt = wt.at(lid)
        return (
            lt.read("dist_to_set", row, cell),
            lt.dist_to_set[row, cell],
            lt.read("dest_cells", cell),
            lt.dest_cells[cell],
        )

    for out in (jax.jit(jax.vmap(both))(layouts, rows, cells), both(3, 1, 100)):
        np.testing.assert_array_equal(out[0], out[1])
        np.testing.assert_array_equal(out[2], out[3])
    lt = wt.at(4)
    assert lt.static_index == 4
    np.testing.assert_array_equal(lt.read("chairs", jnp.arange(5)), wt.chairs[4, :5])


def test_read_of_a_field_a_view_replaced_reads_the_view():
    """A view that replaces a table (one queue path instead of 16) is read as
    itself, not through the stacked tables."""
    from normjax.norms.predicates import queue_path_of, single_queue_view

    wt = world_tables()
    for norm in (23, 30, 38):
        got = jax.jit(lambda lid: single_queue_view(wt.at(lid), norm).read("queue_paths", 0))(jnp.int32(3))
        np.testing.assert_array_equal(got, wt.queue_paths[3, int(queue_path_of(norm))])
