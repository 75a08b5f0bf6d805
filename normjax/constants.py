"""Fixed constants of the NormGym world (docs/world.md sections 1-3).

Everything here is plain Python / numpy so it can be used both at layout-parse
time (host) and inside jitted code (as static values).
"""

import numpy as np

# The package version: the one definition (normjax.__version__, the results' stamp, and
# pyproject.toml's dynamic version read it).
VERSION = "0.1.0"

# Grid size (docs/world.md §1): every layout is 11 rows x 15 columns, positions are (row, col).
H = 11
W = 15
N_CELLS = H * W

# Cell kinds (docs/world.md §1). The integer codes are part of the observation encoding.
WALL = 0
FLOOR = 1
DOOR = 2
CHAIR = 3
COUNTER = 4
OBSTACLE = 5
N_KINDS = 6
KIND_NAMES = ("wall", "floor", "door", "chair", "counter", "obstacle")

# Map legend (docs/world.md §1). q and r are floor cells carrying the Q / R overlay.
LEGEND = {
    "#": WALL,
    ".": FLOOR,
    "A": DOOR,
    "B": DOOR,
    "C": DOOR,
    "h": CHAIR,
    "K": COUNTER,
    "o": OBSTACLE,
    "q": FLOOR,
    "r": FLOOR,
}

# Doors: index 0, 1, 2 = dA (left wall), dB (bottom wall), dC (right wall).
DOOR_NAMES = ("A", "B", "C")
N_DOORS = 3

# Actions (docs/world.md §3), the paper's order.
UP, DOWN, LEFT, RIGHT, WAIT = 0, 1, 2, 3, 4
N_ACTIONS = 5
ACTION_NAMES = ("UP", "DOWN", "LEFT", "RIGHT", "WAIT")
# (d_row, d_col) per action.
ACTION_DELTAS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], dtype=np.int32)

# Social groups (docs/world.md §2).
GROUP_NAMES = ("orange", "green", "blue")
N_GROUPS = 3

# Distractor habits of norm-aware background agents (docs/world.md §8.5); the
# code is the index in HABIT_NAMES.  0 = none (the default).
HABIT_NONE, HABIT_SAME_EXIT_DOOR, HABIT_MOVE1_WAIT1 = 0, 1, 2
HABIT_NAMES = ("none", "same_exit_door", "move1_wait1")
# Test scenarios only (normjax.protocol.scenarios): a scripted holder WAITs in place until released.
HABIT_HOLD = 3

# Seating regions (docs/world.md §1, paper 9.1 notation); -1 = no region.
TL, BL, BR = 0, 1, 2
REGION_NAMES = ("TL", "BL", "BR")

# Queue paths (docs/world.md §7, norms 23-38): the longest closed shape has 7 cells.
N_QUEUE_PATHS = 16
MAX_QUEUE_LEN = 7

# Shortest-path tables mark "no path" with this value (fits uint8 storage:
# no path on the 165-cell grid is longer than 254 moves).
UNREACHABLE = 255

# Agent capacities allowed (docs/world.md §2).
CAPACITIES = (6, 8, 10)

# Roles of a slot: who decides its actions (docs/world.md §2, §8).
ROLE_NEWCOMER, ROLE_AWARE, ROLE_BLIND = 0, 1, 2

# Episode horizons (docs/world.md §9): interaction and training phases, test episodes.
INTERACTION_STEPS = 200
TEST_STEPS = 100
