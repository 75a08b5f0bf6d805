"""Every salt and key tag of normjax's random streams, in one registry.

Two streams drawn from the same seed or key with the same salt would draw the
same numbers; keeping them here (and `tests/world/test_salts.py` checking that they
differ) prevents that.  Values are fixed: changing one changes trajectories.

Hash salts, `normjax.ground.hashrand.hash_at` / `hash_uniform(seed, ..., salt)`:
"""

PLANNER_GOAL_NOISE = 1  # community/planner.py: noise on candidate goal cells' distances (ties)
PLANNER_PRIORITY = 2  # community/planner.py: the step's yielding priority among agents
PLANNER_MOVE_NOISE = 3  # community/planner.py: noise on the moves' costs (ties)
HABIT = 7  # world/habits.py: the distractor habit lottery

HASH_SALTS = {
    "planner_goal_noise": PLANNER_GOAL_NOISE,
    "planner_priority": PLANNER_PRIORITY,
    "planner_move_noise": PLANNER_MOVE_NOISE,
    "habit": HABIT,
}

# Key tags, `jax.random.fold_in(key, tag)`:
AUTO_RESET = 0x5E7  # wrappers/core.py: the auto-reset's key from the step's key
PROBE_EPISODES = 0x50524F42  # train/probes.py ("PROB"): probe episodes' starts; + 1: their actions

KEY_TAGS = {"auto_reset": AUTO_RESET, "probe_episodes": PROBE_EPISODES, "probe_actions": PROBE_EPISODES + 1}

__all__ = [
    "AUTO_RESET",
    "HABIT",
    "HASH_SALTS",
    "KEY_TAGS",
    "PLANNER_GOAL_NOISE",
    "PLANNER_MOVE_NOISE",
    "PLANNER_PRIORITY",
    "PROBE_EPISODES",
]
