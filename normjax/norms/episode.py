"""The episode's norm applied to one pre-step state, computed once per step.

`episode_norm(...)` evaluates the episode's norm for every agent and each of
the five actions (docs/world.md §7).  The scripted planner needs exactly this
mask to plan (docs/world.md §8), and the world step's public sanctions are the
same mask read at the joint action: both judge transitions against the
positions before the step.  `normjax.env.env_step` computes it once and hands
it to both, instead of each stage evaluating the norm on its own.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.norms.predicates import Context, context, single_queue_view
from normjax.norms.rules import episode_permits


class EpisodeNorm(NamedTuple):
    """The episode's norm on the state before a step."""

    tables: object  # LayoutTables holding only the episode's queue path (`single_queue_view`)
    ctx: Context  # action-independent facts of the state (queues, R, first free chairs, ...)
    permitted: jax.Array  # bool [K, 5]: action a of agent i is permissible (every WAIT is)
    norm_id: jax.Array  # int32, -1 = no norm (then nothing is sanctioned)


def episode_norm(lt, norm_id, t, pos, active, group, moves, visited_q) -> EpisodeNorm:
    """The episode norm's per-action permissibility for all K agents.

    Entry [i, a] is what the norm says of agent i taking action a, judged as
    its effective action (docs/world.md §3): a blocked move is a permissible
    WAIT.  Only the episode's norm is evaluated: its static part read from a
    table, plus its one dynamic condition (`normjax.norms.rules`).
    """
    lt1 = single_queue_view(lt, norm_id)
    ctx = context(lt1, pos, active, group, visited_q)
    permitted = episode_permits(lt1, ctx, norm_id, t, pos, active, group, moves)
    return EpisodeNorm(lt1, ctx, permitted, jnp.asarray(norm_id, jnp.int32))


def action_sanctions(view: EpisodeNorm, actions):
    """Public sanctions [K] of the joint `actions` (raw or effective): the mask
    read at each agent's action; equal to `episode_sanctions` on the same state."""
    taken = jnp.take_along_axis(view.permitted, actions.astype(jnp.int32)[:, None], axis=1)[:, 0]
    return (view.norm_id >= 0) & ~taken


__all__ = ["EpisodeNorm", "action_sanctions", "episode_norm"]
