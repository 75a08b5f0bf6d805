"""Movement, collisions and pushes (docs/world.md §3 and 4; paper 9.5).

`resolve_moves` turns the agents' effective actions into end-of-step cells.
Only co-location at the end of a step is a conflict: agents that swap cells
pass.  The resolution, for K <= 10 agents, works on pairwise [K, K] tables and
a flat occupancy grid of the 165 cells:

1. Exits: a move onto a door cell leaves the grid; doors never hold agents.
2. Contests: among movers that target the same cell one winner is drawn
   uniformly at random (random priorities).  Winners end on their targets.
3. Displacements: a stationary agent whose cell a winner takes, and every
   losing mover, is displaced to a free neighbouring cell of the contested
   cell, uniformly at random, processing the displaced agents in random order
   against an occupancy grid (rules 3 and 4).
4. Rule 5: with no free neighbour, an uninvolved scripted bystander on a
   neighbouring cell is pushed on to a free neighbour of its own cell and the
   displaced agent takes its place.  If that fails too, the displaced agent
   stays on / returns to its origin, and a bounded repair pass sends every
   agent that shares a cell with an agent on its own origin back to its own
   origin (at most K rounds; origins are distinct, so this always ends with
   no two agents in one cell).  A mover sent back this way had its target
   taken by someone who ends there, so rule 2 still holds.
5. Collision penalty flags (rule 6): movers that entered a contested or held
   cell by their own choice, or that did not end on their target.

The contests' random priorities and steps 3-4 run only where an agent is
displaced (about one environment-step in ten; known before any priority is
drawn: a contested target, or a mover heading for a stationary agent's cell):
under `vmap` those environments are packed and run together
(`normjax.ground.rare.run_where`), and within them rule 5's search for a push
only where a displaced agent has no free neighbour.

All randomness comes from the key (rule 7).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct
from jax.extend.random import threefry_2x32

from normjax import constants as C
from normjax.ground.moves import DELTAS, cell_value, in_grid
from normjax.ground.ranking import argsort_small, permutation_small
from normjax.ground.rare import run_where
from normjax.layouts.geometry import flat_index
from normjax.xla_cpu import computed_once

NO_AGENT = -1


@struct.dataclass
class MoveResult:
    pos: jax.Array  # int32 [K, 2]: end-of-step cell (unchanged for exiters)
    exited: jax.Array  # bool [K]: moved onto a door cell
    exit_door_cell: jax.Array  # int32 [K, 2]: the door cell (valid where exited)
    collided: jax.Array  # bool [K]: charged the collision penalty (rule 6)
    displaced: jax.Array  # bool [K]: pushed off its cell or off its target
    target: jax.Array  # int32 [K, 2]: intended cell pos + delta(action)


def _unflat(idx):
    return jnp.stack([idx // C.W, idx % C.W], axis=-1)


def _neighbours_flat(idx, standable):
    """The 4 neighbours of flat cell `idx` and whether one can stand there."""
    cells = _unflat(idx)[None, :] + DELTAS[:4]  # [4, 2]
    ok = in_grid(cells) & cell_value(standable, cells, fill=False)
    return jnp.where(ok, flat_index(cells), 0), ok


def resolve_moves(key, pos, active, actions, kind, pushable, packing: bool = True) -> MoveResult:
    """Resolve one step of movement for all K agents (docs/world.md §4 rules 1-7).

    Args:
      key: PRNG key of this resolution.
      pos: int32 [K, 2] cells at the start of the step.
      active: bool [K] agents on the grid.
      actions: int32 [K] *effective* actions (blocked moves already WAIT).
      kind: int [H, W] cell kinds of the layout.
      pushable: bool [K] scripted agents that rule 5 may push as bystanders.
      packing: static, `normjax.ground.rare.run_where`'s (the params' `WorldParams.packing`).
    """
    target = pos + DELTAS[actions]
    p, tgt = flat_index(pos), flat_index(target)
    tgt_kind = cell_value(kind, target, fill=C.WALL)

    moving = active & (actions != C.WAIT)
    exiting = moving & (tgt_kind == C.DOOR)
    mover = moving & ~exiting
    stationary = active & ~moving
    present = active & ~exiting

    # Contests and holds, as pairwise tables [i, j].
    same_tgt = mover[:, None] & mover[None, :] & (tgt[:, None] == tgt[None, :])
    n_contest = same_tgt.sum(axis=1)
    held = mover & (stationary[None, :] & (p[None, :] == tgt[:, None])).any(axis=1)
    # Someone is pending (a contest's loser, or a stationary agent whose cell
    # a winner takes) exactly where a target is contested (a contest has one
    # winner) or, with no contest (every mover wins), a mover targets a
    # stationary agent's cell.  Most environments have neither: under vmap
    # only those that do draw priorities and run the loops (`run_where`).
    some_pending = (n_contest >= 2).any() | held.any()
    fin, disp = run_where(
        some_pending,
        functools.partial(_contests, packing=packing),
        _no_contest,
        key,
        same_tgt,
        mover,
        stationary,
        tgt,
        p,
        present,
        kind,
        pushable,
        packing=packing,
    )

    # Stored once (read by the reward, the counters, the info and the state).
    collided = computed_once(mover & ((n_contest >= 2) | held | (fin != tgt)))
    displaced = present & disp & (fin != p)
    new_pos = jnp.where(present[:, None], _unflat(fin), pos)
    return MoveResult(
        pos=new_pos.astype(jnp.int32),
        exited=exiting,
        exit_door_cell=target.astype(jnp.int32),
        collided=collided,
        displaced=displaced,
        target=target.astype(jnp.int32),
    )


def _contests(key, same_tgt, mover, stationary, tgt, p, present, kind, pushable, *, packing: bool):
    """Rules 2-5 where someone is pending: random priorities decide the
    contests (the winners end on their targets), then the pending agents are
    placed (`_place_pending`).  Returns the end cells (flat) and who was
    displaced."""
    k = mover.shape[0]
    k_prio, k_order, k_place = jax.random.split(key, 3)
    prio = permutation_small(k_prio, k)  # == jax.random.permutation(k_prio, k)
    beaten = (same_tgt & (prio[None, :] < prio[:, None])).any(axis=1)
    winner = mover & ~beaten
    taken = (winner[:, None] & (tgt[:, None] == p[None, :])).any(axis=0)
    holder_out = stationary & taken
    loser = mover & ~winner
    pending = loser | holder_out
    anchor = jnp.where(loser, tgt, p)
    bystander = stationary & ~holder_out & pushable
    fin = jnp.where(winner, tgt, p)
    return _place_pending(k_order, k_place, pending, anchor, p, present, kind, fin, bystander, packing)


def _no_contest(key, same_tgt, mover, stationary, tgt, p, present, kind, pushable):
    """`_contests` where no one is pending: every mover wins and ends on its
    target, which no one else ends on, so there is nothing to place or repair."""
    return jnp.where(mover, tgt, p), jnp.zeros(mover.shape, bool)


def _push_target(kp, nb, is_b, occ, standable):
    """Rule 5 for one displaced agent: whether a bystander on one of its
    neighbours `nb` can be pushed on to a free neighbour of its own cell, the
    neighbour it stands on (index into `nb`) and the cell it is pushed to."""
    nb2, ok2 = jax.vmap(_neighbours_flat, in_axes=(0, None))(nb, standable)  # [4, 4]
    feasible = is_b[:, None] & ok2 & (occ[nb2] == NO_AGENT)
    pick = jnp.argmax(jnp.where(feasible, jax.random.uniform(kp, (4, 4)), -1.0))
    pn, pm = pick // 4, pick % 4
    return feasible.any(), pn.astype(jnp.int32), nb2[pn, pm].astype(jnp.int32)


def _no_push(kp, nb, is_b, occ, standable):
    """`_push_target` where no push is needed (its result is then not read)."""
    return jnp.bool_(False), jnp.int32(0), jnp.int32(0)


def _place_pending(k_order, k_place, pending, anchor, p, present, kind, fin, bystander, packing: bool = True):
    """Rules 3-5 and the repair pass: the end cells (flat) of all agents after
    the pending ones are placed in random order, and who was displaced."""
    k = pending.shape[0]
    idx = jnp.arange(k)
    order = argsort_small(jnp.where(pending, jax.random.uniform(k_order, (k,)), 2.0))
    n_pending = pending.sum()
    standable = (kind == C.FLOOR) | (kind == C.CHAIR)
    placed = present & ~pending
    occ = jnp.full((C.N_CELLS,), NO_AGENT, jnp.int32)  # agent on each flat cell
    occ = occ.at[jnp.where(placed, fin, C.N_CELLS)].set(idx, mode="drop")

    # A while_loop (not a K-step fori_loop): under vmap it runs as many rounds
    # as the busiest environment of its chunk needs, usually 1-3 instead of K.
    def place_one(carry):
        i, fin, occ, disp, bystander = carry
        j = order[i]
        # Round i's key is `jax.random.split(k_place, k)[i]`, computed only for
        # the rounds that run (threefry counter (0, i)), not for all K slots.
        kf, kp = jax.random.split(threefry_2x32(k_place, jnp.stack([jnp.uint32(0), i.astype(jnp.uint32)])))
        nb, ok = _neighbours_flat(anchor[j], standable)
        free = ok & (occ[nb] == NO_AGENT)
        choice = jnp.argmax(jnp.where(free, jax.random.uniform(kf, (4,)), -1.0))
        has_free = free.any()
        # Rule 5: push a neighbouring bystander on to a free neighbour of its cell.
        b = occ[nb]  # [4] agent on each neighbour
        is_b = ok & (b != NO_AGENT) & bystander[jnp.maximum(b, 0)]
        todo = pending[j]
        # Rule 5 is needed only without a free neighbour and with a bystander
        # beside: under vmap only those environments of the chunk search for a
        # push (its 16 second neighbours and random draws).
        need_push = todo & ~has_free & is_b.any()
        has_push, pn, push_cell = run_where(
            need_push, _push_target, _no_push, kp, nb, is_b, occ, standable, packing=packing
        )
        do_free = todo & has_free
        do_push = todo & ~has_free & has_push
        new_cell = jnp.where(do_free, nb[choice], jnp.where(do_push, nb[pn], p[j]))
        bys = jnp.maximum(b[pn], 0)
        # Move the bystander first (its old cell becomes the displaced agent's).
        fin = fin.at[bys].set(jnp.where(do_push, push_cell, fin[bys]))
        occ = occ.at[jnp.where(do_push, push_cell, C.N_CELLS)].set(bys, mode="drop")
        disp = disp.at[bys].set(disp[bys] | do_push)
        bystander = bystander.at[bys].set(bystander[bys] & ~do_push)
        fin = fin.at[j].set(jnp.where(todo, new_cell, fin[j]))
        occ = occ.at[jnp.where(todo, new_cell, C.N_CELLS)].set(j, mode="drop")
        disp = disp.at[j].set(disp[j] | do_free | do_push)
        return i + 1, fin, occ, disp, bystander

    disp0 = jnp.zeros((k,), bool)
    _, fin, occ, disp, _ = jax.lax.while_loop(
        lambda c: c[0] < n_pending, place_one, (jnp.int32(0), fin, occ, disp0, bystander)
    )

    def conflicts(fin):
        at_origin = fin == p
        share = present[:, None] & present[None, :] & (fin[:, None] == fin[None, :])
        share = share & (idx[:, None] != idx[None, :])
        return present & ~at_origin & (share & at_origin[None, :]).any(axis=1)

    def repair(carry):
        i, fin = carry
        return i + 1, jnp.where(conflicts(fin), p, fin)

    # At most K rounds (each sends at least one agent home for good).
    _, fin = jax.lax.while_loop(lambda c: (c[0] < k) & conflicts(c[1]).any(), repair, (jnp.int32(0), fin))
    return fin, disp
