"""Observations of the newcomer (slot 0): symbolic state and the DQN input.

The DQN observation follows docs/world.md §10 (paper A14): three 11x15 map planes, a
13-vector about the newcomer, K-1 other-agent slots of 8 ordered by distance,
and the 5-entry physical action mask; flat size 3*11*15 + 13 + 8(K-1) + 5
(553, 569, 585 for K = 6, 8, 10).  No norm label, no other agents' goals and
no norm-aware mask are included.

Plane 0 codes each cell as wall 0, floor 1, door 2, chair 3, counter 4,
obstacle 5, Q 6, R 7, divided by 7 (docs/world.md §10 leaves the coding open; Q and R are
given their own codes because several norms are about them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from normjax import constants as C
from normjax.constants import UNREACHABLE
from normjax.ground.moves import physical_mask
from normjax.ground.ranking import argsort_small
from normjax.layouts.tables import LayoutTables, world_tables
from normjax.world import tasks
from normjax.world.state import ANY_DOOR, GOAL_CELL, WorldParams, WorldState

N_VEC = 13
N_OTHER = 8
N_CODES = 8
DIST_SCALE = 100.0
# Sort ranks of other slots that are not on the grid (above any distance).
_WAITING, _UNUSED, _SELF = 10_000, 20_000, 1_000_000_000


def obs_size(capacity: int) -> int:
    """Flat DQN observation size for capacity K (553, 569, 585)."""
    return 3 * C.H * C.W + N_VEC + N_OTHER * (capacity - 1) + C.N_ACTIONS


@struct.dataclass
class Observation:
    planes: jax.Array  # float32 [3, 11, 15]
    vector: jax.Array  # float32 [13 + 8(K-1) + 5]: newcomer, others, mask
    action_mask: jax.Array  # bool [5]: physical mask (also the last 5 of vector)

    def flat(self):
        return jnp.concatenate([self.planes.reshape(-1), self.vector])


def task_ended(state: WorldState, slot=0):
    """Whether agent `slot`'s task has ended (it exited), as the observation shows it.

    Slot 0: the world's `newcomer_done` (kept after a test newcomer exits,
    cleared when a replacement newcomer takes the slot).  Another slot is
    refilled at its agent's exit, so its flag is: the slot's last agent has
    taken steps on the grid and left it, and the next agent has not entered.
    """
    ag = state.agents
    left = ~ag.active[slot] & (ag.steps[slot] > 0)
    return jnp.where(jnp.asarray(slot) == 0, state.newcomer_done, left)


def layout_plane(lt: LayoutTables):
    code = lt.kind.astype(jnp.float32)
    code = jnp.where(lt.zone_q, 6.0, code)
    code = jnp.where(lt.zone_r, 7.0, code)
    return code / (N_CODES - 1)


def observe(state: WorldState, params: WorldParams, slot: int = 0) -> Observation:
    """docs/world.md §10 observation of agent `slot` (the newcomer by default)."""
    lt = world_tables().at(params.layout)
    ag = state.agents
    k = ag.active.shape[0]
    me = jnp.arange(k) == slot
    pos = ag.pos[slot]
    scale = jnp.asarray([C.H, C.W], jnp.float32)

    others_on = ag.active & ~me
    plane_self = jnp.zeros((C.H, C.W)).at[pos[0], pos[1]].set(jnp.where(ag.active[slot], 1.0, 0.0))
    grp = (ag.group + 1).astype(jnp.float32) / 3.0
    rows = jnp.where(others_on, ag.pos[:, 0], C.H)  # off-grid rows are dropped
    plane_others = jnp.zeros((C.H, C.W)).at[rows, ag.pos[:, 1]].set(grp, mode="drop")
    planes = jnp.stack([layout_plane(lt), plane_self, plane_others]).astype(jnp.float32)

    leg, gk, gc, ed = ag.leg[slot], ag.goal_kind[slot], ag.goal_cell[slot], ag.exit_door[slot]
    target = tasks.goal_target(lt, leg[None], gk[None], gc[None], ed[None], pos[None])[0]
    dist = tasks.goal_distance(lt, leg[None], gk[None], gc[None], ed[None], pos[None])[0]
    unreachable = dist >= UNREACHABLE
    free_choice = jnp.where(leg == 0, gk != GOAL_CELL, ed == ANY_DOOR)
    vec = jnp.concatenate(
        [
            (target - pos) / scale,
            jnp.where(unreachable, 1.0, jnp.minimum(dist / DIST_SCALE, 1.0))[None],
            unreachable[None].astype(jnp.float32),
            (pos - ag.prev_pos[slot]).astype(jnp.float32),
            ag.active[slot][None].astype(jnp.float32),
            task_ended(state, slot)[None].astype(jnp.float32),
            leg[None].astype(jnp.float32),
            (ag.timer[slot] / params.service_steps)[None].astype(jnp.float32),
            free_choice[None].astype(jnp.float32),
            ag.sanctioned[slot][None].astype(jnp.float32),
            (1.0 - state.t / params.max_steps)[None].astype(jnp.float32),
        ]
    ).astype(jnp.float32)

    # Other agents: on the grid by Manhattan distance, then agents waiting to
    # enter, then unused slots (ties by slot index).
    d = jnp.abs(ag.pos - pos).sum(-1)
    rank = jnp.where(others_on, d, jnp.where(ag.in_use, _WAITING, _UNUSED))
    order = argsort_small(jnp.where(me, _SELF, rank * k + jnp.arange(k)))[: k - 1]
    on = others_on[order][:, None].astype(jnp.float32)
    used = (ag.in_use & ~me)[order][:, None].astype(jnp.float32)
    # Position, group and sanction exist only on the grid; "slot used" also
    # marks an agent waiting outside its door.
    slots = jnp.concatenate(
        [
            (ag.pos[order] - pos) / scale * on,
            (ag.prev_pos[order] - pos) / scale * on,
            grp[order][:, None] * on,
            on,
            ag.sanctioned[order][:, None].astype(jnp.float32) * on,
            used,
        ],
        axis=1,
    )
    mask = physical_mask(lt.kind, pos[None])[0]
    vector = jnp.concatenate([vec, slots.reshape(-1), mask.astype(jnp.float32)])
    return Observation(planes=planes, vector=vector, action_mask=mask)
