"""Shared test helpers: small grids, compiled functions reused across tests."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C

# An open room: wall border, a few obstacles, doors on three walls.
OPEN_ROOM = (
    "###############",
    "#.............#",
    "#...o.........#",
    "#.......oo....#",
    "#.............#",
    "A.....h.......C",
    "#..o..........#",
    "#.........o...#",
    "#....h........#",
    "#.............#",
    "#######B#######",
)


def kind_grid(rows) -> np.ndarray:
    """Cell-kind array [11, 15] from legend strings (q/r count as floor)."""
    assert len(rows) == C.H and all(len(r) == C.W for r in rows), "grid must be 11x15"
    return np.array([[C.LEGEND[ch] for ch in row] for row in rows], dtype=np.int8)


def standable_cells(kind: np.ndarray) -> np.ndarray:
    return np.argwhere((kind == C.FLOOR) | (kind == C.CHAIR)).astype(np.int32)


@functools.cache
def jitted(fn):
    """One jit per function for the whole test session."""
    return jax.jit(fn)


def key(seed: int):
    return jax.random.PRNGKey(seed)


def as_i32(x):
    return jnp.asarray(np.asarray(x), dtype=jnp.int32)
