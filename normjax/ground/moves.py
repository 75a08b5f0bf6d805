"""Effective actions and move targets (docs/world.md §3).

A move into a wall, counter, obstacle or off the grid is a no-op and counts as
WAIT everywhere (norms, move history, collisions).  A move onto a door cell is
an exit.  These helpers are shared by the physics, the norms and the planner.
"""

import jax.numpy as jnp

from normjax import constants as C
from normjax.layouts.tables import CODE_KIND

DELTAS = jnp.asarray(C.ACTION_DELTAS)  # [5, 2]


def move_targets(pos, actions):
    """Cell each agent would enter: pos + delta(action), unclipped [..., 2]."""
    return pos + DELTAS[actions]


def in_grid(cells):
    """Whether each [..., 2] cell lies on the 11x15 grid."""
    r, c = cells[..., 0], cells[..., 1]
    return (r >= 0) & (r < C.H) & (c >= 0) & (c < C.W)


def cell_value(grid, cells, fill=False):
    """grid[r, c] for [..., 2] cells; `fill` for cells off the grid."""
    r = jnp.clip(cells[..., 0], 0, C.H - 1)
    c = jnp.clip(cells[..., 1], 0, C.W - 1)
    return jnp.where(in_grid(cells), grid[r, c], fill)


def effective_actions(kind, pos, actions):
    """docs/world.md §3 effective action of each agent: blocked moves become WAIT.

    kind: int [H, W] cell kinds of the layout; pos: int [K, 2]; actions: int [K].
    A move is kept when its target is walkable (floor, chair) or a door.
    """
    return keep_open(cell_value(kind, move_targets(pos, actions), fill=C.WALL), actions)


def keep_open(target_kind, actions):
    """`effective_actions` from the kinds of the actions' target cells."""
    k = target_kind
    open_cell = (k == C.FLOOR) | (k == C.CHAIR) | (k == C.DOOR)
    return jnp.where(open_cell, actions, C.WAIT).astype(jnp.int32)


def target_codes(code, pos):
    """`LayoutTables.code` (int8 [H, W]) at each agent's five action targets:
    int8 [K, 5], one gather for the kind and zone flags (0 off the grid)."""
    return cell_value(code, pos[:, None, :] + DELTAS[None, :, :], fill=0)


def kind_of(codes):
    """Cell kinds of packed cell codes."""
    return codes & CODE_KIND


def physical_mask(kind, pos):
    """[K, 5] bool: which of the five actions are not blocked (WAIT always is)."""
    acts = jnp.arange(C.N_ACTIONS)
    eff = effective_actions(kind, pos[:, None, :], acts[None, :])
    return eff == acts[None, :]
