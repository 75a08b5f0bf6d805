"""The true per-entry bounds of the flat observation (docs/world.md §10).

Every adapter declares its observation space from these arrays, so a space holds
every observation the world can produce.  The observation values themselves are
not clipped or rescaled (trained results stay bit-identical); the bounds follow
from the features' definitions:

* map planes, distance, flags, timer, budget, group codes, action mask: [0, 1];
* offsets between cells (goal and other agents, rows / 11, columns / 15): [-1, 1]
  (both cells lie on the 11 x 15 grid);
* the newcomer's "change of its cell over the last step" (vector entries 4, 5,
  unscaled): [-2, 2].  A free move changes one coordinate by 1; a mover that loses
  a contest is placed on a free neighbour of its *target* (docs/world.md §4.2 step
  3), up to two cells from where it started (e.g. (0, 2) straight on, (1, 1) to a
  side); a pushed stationary agent moves one cell; entry and exit change nothing.

`tests/wrappers/test_conformance.py` samples observations of every capacity (including
scenes where every agent moves at random, so pushes are frequent) and checks them
against these bounds, and that the last-move entries do reach 2.
"""

from __future__ import annotations

import functools

import numpy as np

from normjax import constants as C
from normjax.world.observation import N_OTHER, N_VEC, obs_size

# Entries of the 13-vector (docs/world.md §10.2) that are cell offsets / differences.
GOAL_OFFSET = (0, 1)
LAST_MOVE = (4, 5)
MAX_LAST_MOVE = 2.0


@functools.cache
def _bounds(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    if capacity not in C.CAPACITIES:
        raise ValueError(f"capacity must be one of {C.CAPACITIES}, got {capacity!r}")
    n_planes = 3 * C.H * C.W
    low = np.zeros(obs_size(capacity), np.float32)
    high = np.ones(obs_size(capacity), np.float32)
    vec = slice(n_planes, n_planes + N_VEC)
    low[vec][list(GOAL_OFFSET)] = -1.0
    low[vec][list(LAST_MOVE)] = -MAX_LAST_MOVE
    high[vec][list(LAST_MOVE)] = MAX_LAST_MOVE
    # Other-agent slots: entries 0-3 are cell differences (docs/world.md §10.3).
    others = low[n_planes + N_VEC : n_planes + N_VEC + N_OTHER * (capacity - 1)].reshape(-1, N_OTHER)
    others[:, :4] = -1.0
    low.flags.writeable = high.flags.writeable = False
    return low, high


def observation_bounds(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, high), float32 [obs_size(capacity)], read-only: the flat observation's bounds."""
    return _bounds(int(capacity))


def observation_box(capacity: int):
    """The Gymnasium `Box` of the flat observation (needs gymnasium)."""
    from gymnasium import spaces

    low, high = observation_bounds(capacity)
    return spaces.Box(low.copy(), high.copy(), dtype=np.float32)


__all__ = ["GOAL_OFFSET", "LAST_MOVE", "MAX_LAST_MOVE", "observation_box", "observation_bounds"]
