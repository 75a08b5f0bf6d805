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

from normjax.ground.rare import run_where
from normjax.norms.predicates import Context, context, first_free_chairs, queue_context, single_queue_view
from normjax.norms.registry import QUEUE_IDS
from normjax.norms.rules import episode_permits, judged_targets, queue_order
from normjax.norms.table import norm_row
from normjax.xla_cpu import computed_once


class EpisodeNorm(NamedTuple):
    """The episode's norm on the state before a step."""

    tables: object  # LayoutTables holding only the episode's queue path (`single_queue_view`)
    ctx: Context  # action-independent facts of the state (queues, R, ...); first_free
    # only under a seats-in-order norm, the queue fields only under a queue norm
    # (-1 / empty under the others, which never read them)
    permitted: jax.Array  # bool [K, 5]: action a of agent i is permissible (every WAIT is)
    norm_id: jax.Array  # int32, -1 = no norm (then nothing is sanctioned)


def episode_norm(lt, norm_id, t, pos, active, group, moves, visited_q, packing: bool = True) -> EpisodeNorm:
    """The episode norm's per-action permissibility for all K agents.

    Entry [i, a] is what the norm says of agent i taking action a, judged as
    its effective action (docs/world.md §3): a blocked move is a permissible
    WAIT.  Only the episode's norm is evaluated: its static part read from a
    table, plus its one dynamic condition (`normjax.norms.rules`).  `packing`:
    `normjax.ground.rare.run_where`'s (static).
    """
    lt1 = single_queue_view(lt, norm_id)
    ctx, queue_ok = episode_context(lt1, norm_id, pos, active, group, visited_q, packing=packing)
    permitted = episode_permits(lt1, ctx, norm_id, t, pos, active, group, moves, queue_ok)
    return EpisodeNorm(lt1, ctx, permitted, jnp.asarray(norm_id, jnp.int32))


def episode_sanctions(lt, t, pos, active, action, group, moves, visited_q, norm_id, packing: bool = True):
    """Sanctions [K] of the joint `action` under the episode's norm only (equal
    to `sanctions` of the full 50-norm mask at that norm, at a fraction of the
    cost; -1 = no norm): the norm judged for those actions alone."""
    lt1 = single_queue_view(lt, norm_id)
    ctx, queue_ok = episode_context(lt1, norm_id, pos, active, group, visited_q, action, packing)
    ok = episode_permits(lt1, ctx, norm_id, t, pos, active, group, moves, queue_ok, actions=action)[:, 0]
    # Stored once: the reward, the counters, the step's info and the next
    # state all read the sanctions, and XLA would fuse the whole judgement
    # into each of them (measured: the world step 13% slower).
    return computed_once((jnp.asarray(norm_id, jnp.int32) >= 0) & ~ok)


def episode_context(lt1, norm_id, pos, active, group, visited_q, actions=None, packing: bool = True):
    """`context` for the episode's norm on `lt1` (its `single_queue_view`) and
    the queue norms' order verdict `queue_order` [K, A] for the judged actions
    (all five, or `actions` [K]), with the parts that only some norms read
    computed only under those: the first free chairs under the two
    seats-in-order norms, the queue state and order under the 16 queue norms
    (-1 / empty / True under the others, which never read them).  Under vmap
    only the environments under such a norm compute them (`run_where`; the
    queue state and order in one pass); XLA drops `context`'s own versions as
    dead code."""
    ctx = context(lt1, pos, active, group, visited_q)
    seats = norm_row(norm_id, "seat_order") >= 0
    ctx = ctx._replace(first_free=run_where(seats, first_free_chairs, _no_chairs, lt1, pos, active, packing=packing))
    nid = jnp.asarray(norm_id)
    queues = (nid >= QUEUE_IDS[0]) & (nid <= QUEUE_IDS[-1])
    _, target = judged_targets(pos, actions)
    src, held, tail, queue_ok = run_where(
        queues, _queue, _no_queue, lt1, pos, active, target, share=3 / 8, packing=packing
    )
    return ctx._replace(queue_src=src, queue_held=held, queue_tail=tail), queue_ok


def _queue(lt, pos, active, target):
    """The queue state (`queue_context`) and the order verdict of the targets."""
    src, held, tail = queue_context(lt, pos, active)
    return src, held, tail, queue_order(lt, target, held, src, tail)


def _no_chairs(lt, pos, active):
    return jnp.full((2, 2), -1, jnp.int32)


def _no_queue(lt, pos, active, target):
    """`_queue`'s shapes for norms that have no queue (never read)."""
    paths, k = lt.queue_paths.shape[0], pos.shape[0]
    return (
        jnp.full((paths, k), -1, jnp.int32),
        jnp.zeros((paths, lt.queue_paths.shape[1], k), bool),
        jnp.zeros((paths, k), jnp.int32),
        jnp.ones(target.shape[:2], bool),
    )


def action_sanctions(view: EpisodeNorm, actions):
    """Public sanctions [K] of the joint `actions` (raw or effective): the mask
    read at each agent's action; equal to `episode_sanctions` on the same state."""
    taken = jnp.take_along_axis(view.permitted, actions.astype(jnp.int32)[:, None], axis=1)[:, 0]
    return (view.norm_id >= 0) & ~taken


__all__ = ["EpisodeNorm", "action_sanctions", "episode_context", "episode_norm", "episode_sanctions"]
