"""Distractor habits as episode parameters (docs/world.md §8.5).

A distractor is an optional, unsanctioned habit of norm-aware background
agents (`normjax.constants.HABIT_NAMES`: `same_exit_door`, `move1_wait1`),
followed by the planner only where the norm permits it.  An episode names one
habit and the share of its norm-aware background agents that have it
(`WorldParams.habit`, `WorldParams.habit_share`); both are off by default.

Every background agent draws its habit when it is created (reset and turnover
refills, `normjax.world.turnover.refill`): a Bernoulli(share) lottery, only in
norm-aware slots, never in slot 0 (the newcomer).  The lottery hashes the raw
words of the refill's key (`hashrand.seed_from_key_data`) instead of drawing
from or splitting it, so every other random number of the episode is the
same whatever the distractor settings: with distractors off every trajectory
is unchanged, with them on only habits (and what agents do because of them)
differ.
"""

from __future__ import annotations

import jax.numpy as jnp

from normjax import salts
from normjax.constants import HABIT_NAMES, HABIT_NONE, ROLE_AWARE
from normjax.ground.hashrand import hash_at, seed_from_key_data

HABIT_SALT = salts.HABIT  # the habit lottery's own hash stream (normjax.salts)


def habit_id(name) -> int:
    """The habit code of a distractor name ('none', 'same_exit_door', 'move1_wait1')."""
    if name is None:
        return HABIT_NONE
    if not isinstance(name, str) or name not in HABIT_NAMES:
        raise ValueError(f"unknown distractor {name!r}; allowed: {', '.join(HABIT_NAMES)}")
    return HABIT_NAMES.index(name)


def check_share(share) -> float:
    """The share of norm-aware background agents with the habit: a number in [0, 1]."""
    try:
        value = float(share)
    except (TypeError, ValueError):
        raise ValueError(f"distractor_share must be a number in [0, 1], got {share!r}") from None
    if not 0.0 <= value <= 1.0:  # also rejects nan
        raise ValueError(f"distractor_share must be in [0, 1], got {share!r}")
    return value


def check_distractor(name, share) -> tuple[int, float]:
    """(habit code, share) of validated distractor settings; a share > 0 needs a habit."""
    hid, value = habit_id(name), check_share(share)
    if hid == HABIT_NONE and value > 0.0:
        raise ValueError(f"distractor_share={share!r} needs a distractor habit; allowed: {', '.join(HABIT_NAMES[1:])}")
    return hid, value


def habit_name(code) -> str | None:
    """The name of a distractor habit code; None for no habit (and scenario-only codes)."""
    code = int(code)
    return HABIT_NAMES[code] if HABIT_NONE < code < len(HABIT_NAMES) else None


def draw_habits(key, slots, role, params):
    """Habit codes [K] of the fresh agents of `slots` (bool [K]); 0 elsewhere.

    Eligible: norm-aware background slots (`role == ROLE_AWARE`, slot > 0).
    Each eligible agent has `params.habit` with probability `params.habit_share`.
    """
    k = slots.shape[0]
    idx = jnp.arange(k)
    u = hash_at(seed_from_key_data(key), idx, salt=HABIT_SALT)
    eligible = slots & (role == ROLE_AWARE) & (idx > 0)
    return jnp.where(eligible & (u < params.habit_share), params.habit, HABIT_NONE).astype(jnp.int32)


__all__ = ["HABIT_SALT", "check_distractor", "check_share", "draw_habits", "habit_id", "habit_name"]
