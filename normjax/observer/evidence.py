"""What the observer sees, and the predicate inputs it derives from it (docs/observer.md).

The observer's information per step is public (docs/world.md §7.1, §12): every
agent's cell before and after the step, who walked out through a door and who
appeared at one, each agent's group (its colour), the global step index t, the
layout, and the public sanction flags.  From these it reconstructs, for every
active agent, the effective action the norms judged, and the two pieces of
per-agent history the predicates need (`moves`, the agent's own effective
moves on its last three turns; `visited_q`, whether it has stood in Q).  It
never reads the world's own copies of those histories, nor any hidden field
(goals, roles, habits, the norm id).

Two evidence sources (a static choice):

* ``"positions"`` (default): the effective action comes from the displacement
  ``next - pos``.  Collisions and pushes can hide it (docs/world.md §4), so a
  transition is used only where positions determine it:

  - walked out through a door: the move onto the adjacent door cell (exits are
    never contested);
  - a unit step onto a cell, when no other agent ends the step on the mover's
    old cell: that move.  A pushed bystander also makes a unit step, but its
    old cell is then always taken by the agent that pushed it;
  - a straight two-cell step: a mover that lost a contest for the cell in
    between and was pushed on; its move is that direction;
  - staying on its cell without a sanction: WAIT, or a move that bounced back.
    Both are permissible under the hypotheses that matter here (a bounced,
    unsanctioned move is simply not used), so the stay carries no evidence;
  - anything else (a diagonal displacement, a unit step onto a cell whose old
    cell someone took, a sanctioned stay) is not used.

  The move history is then only partly known: a stay next to an agent that
  ends the step on a neighbouring cell may have been a bounced move, and a
  unit step whose old cell was taken may have been a push.  Those bits are
  marked unknown; the likelihood brackets the rhythm norms (the only ones that
  read `moves`) over them (`normjax.observer.belief`).

* ``"actions"``: the effective action itself, which the world lists among an
  agent's public facts (`last_action`, docs/world.md §2.2) and trajectory
  exports record for every agent (`action`, docs/world.md §12).  Every active
  transition is evidence and every history bit is known.

`StepInfo` fields read: ``active`` and ``pos`` (cells before the step),
``next_pos`` (cells after it), ``exited`` (walked out through a door),
``sanctioned`` (public flags), and with ``"actions"`` also ``action``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from normjax import constants as C
from normjax.ground.moves import DELTAS, cell_value

SOURCES = ("positions", "actions")


def check_source(source: str) -> str:
    if source not in SOURCES:
        raise ValueError(f"unknown evidence source {source!r}; valid: {', '.join(SOURCES)}")
    return source


@struct.dataclass
class PublicHistory:
    """The per-agent predicate inputs the observer derives from public events ([K] each)."""

    present: jax.Array  # bool: on the grid after the last observed step
    moves: jax.Array  # bool [K, 3]: derived own effective move on turns t-1, t-2, t-3
    moves_known: jax.Array  # bool [K, 3]: that bit is certain
    visited_q: jax.Array  # bool: has stood in Q since it appeared


@struct.dataclass
class Transitions:
    """One step as the observer reads it ([K] each)."""

    action: jax.Array  # int32: the derived effective action (WAIT where not used)
    judged: jax.Array  # bool: the transition is evidence
    moved: jax.Array  # bool: derived move bit for the history
    moved_known: jax.Array  # bool: the move bit is certain


def _in_q(lt, pos):
    return cell_value(lt.zone_q, pos, fill=False)


def init_history(lt, pos, active) -> PublicHistory:
    """History at the start of an episode: every agent on the grid has just appeared.

    Agents placed at step 0 (reset, or a test scenario) have no moves yet and
    have visited Q only if they stand in it (docs/world.md §2.3).
    """
    active = active.astype(bool)
    k = active.shape[0]
    return PublicHistory(
        present=active,
        moves=jnp.zeros((k, 3), bool),
        moves_known=jnp.ones((k, 3), bool),
        visited_q=active & _in_q(lt, pos),
    )


def refresh(history: PublicHistory, lt, pos, active) -> PublicHistory:
    """Give agents that appeared since the last step (at a door) a fresh history."""
    fresh = active.astype(bool) & ~history.present
    f2 = fresh[:, None]
    return history.replace(
        present=history.present | fresh,
        moves=jnp.where(f2, False, history.moves),
        moves_known=jnp.where(f2, True, history.moves_known),
        visited_q=jnp.where(fresh, _in_q(lt, pos), history.visited_q),
    )


def _direction(d):
    """Action whose delta equals d [K, 2] (WAIT if none)."""
    hit = jnp.all(d[:, None, :] == DELTAS[None, :4, :], axis=-1)  # [K, 4]
    return jnp.where(hit.any(-1), jnp.argmax(hit, axis=-1), C.WAIT).astype(jnp.int32)


def _door_direction(lt, pos):
    """The move from each cell onto an adjacent door (WAIT if no door is adjacent)."""
    nxt = pos[:, None, :] + DELTAS[None, :4, :]  # [K, 4, 2]
    door = cell_value(lt.kind, nxt, fill=C.WALL) == C.DOOR
    return jnp.where(door.any(-1), jnp.argmax(door, axis=-1), C.WAIT).astype(jnp.int32)


def from_positions(lt, pos, active, next_pos, exited, sanctioned) -> Transitions:
    """Derive each agent's effective action from its displacement (see the module doc)."""
    k = pos.shape[0]
    active = active.astype(bool)
    gone = active & exited.astype(bool)
    stayed_on = active & ~gone  # on the grid after the step
    d = next_pos - pos
    manhattan = jnp.abs(d).sum(-1)
    straight = (d[:, 0] == 0) | (d[:, 1] == 0)
    other = ~jnp.eye(k, dtype=bool)
    # Another agent ends the step on my old cell / on a cell next to it.
    ends_on_mine = (other & stayed_on[None, :] & jnp.all(next_pos[None, :, :] == pos[:, None, :], -1)).any(1)
    gap = jnp.abs(next_pos[None, :, :] - pos[:, None, :]).sum(-1)  # [i, j]
    neighbour_ends = (other & stayed_on[None, :] & (gap == 1)).any(1)

    stay = stayed_on & (manhattan == 0)
    unit = stayed_on & (manhattan == 1)
    clean_step = unit & ~ends_on_mine
    pushed_on = stayed_on & (manhattan == 2) & straight  # a contest's loser, pushed past the cell
    diagonal = stayed_on & (manhattan == 2) & ~straight  # a contest's loser, direction unknown
    sanctioned = sanctioned.astype(bool)

    action = jnp.select(
        [gone, clean_step, pushed_on],
        [_door_direction(lt, pos), _direction(d), _direction(d // 2)],
        C.WAIT,
    ).astype(jnp.int32)
    judged = gone | clean_step | pushed_on
    # WAIT is never sanctioned: a sanctioned stay was a move that bounced back.
    moved = gone | clean_step | pushed_on | diagonal | (stay & sanctioned)
    quiet_stay = stay & ~sanctioned & ~neighbour_ends  # nobody could have bounced it back
    moved_known = ~active | moved | quiet_stay
    return Transitions(action=action, judged=judged, moved=moved, moved_known=moved_known)


def from_actions(active, action) -> Transitions:
    """Every active transition with its public effective action (docs/world.md §2.2)."""
    active = active.astype(bool)
    action = jnp.where(active, action, C.WAIT).astype(jnp.int32)
    return Transitions(
        action=action,
        judged=active,
        moved=active & (action != C.WAIT),
        moved_known=jnp.ones_like(active),
    )


def observe_step(lt, info, source: str = "positions") -> Transitions:
    """The observer's reading of one `StepInfo` (static `source`, see the module doc)."""
    check_source(source)
    if source == "actions":
        return from_actions(info.active, info.action)
    return from_positions(lt, info.pos, info.active, info.next_pos, info.exited, info.sanctioned)


def advance(history: PublicHistory, lt, info, tr: Transitions) -> PublicHistory:
    """History after the step: shift in the move bit, add Q visits, drop agents that left."""
    active = info.active.astype(bool)
    moves = jnp.concatenate([tr.moved[:, None], history.moves[:, :2]], axis=1)
    known = jnp.concatenate([tr.moved_known[:, None], history.moves_known[:, :2]], axis=1)
    seen_q = active & (_in_q(lt, info.pos) | (_in_q(lt, info.next_pos) & ~info.exited))
    return PublicHistory(
        present=active & ~info.exited,
        moves=jnp.where(active[:, None], moves, history.moves),
        moves_known=jnp.where(active[:, None], known, history.moves_known),
        visited_q=history.visited_q | seen_q,
    )


__all__ = [
    "SOURCES",
    "PublicHistory",
    "Transitions",
    "advance",
    "check_source",
    "from_actions",
    "from_positions",
    "init_history",
    "observe_step",
    "refresh",
]
