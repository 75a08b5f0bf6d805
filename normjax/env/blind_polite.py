"""`blind_polite`: a norm-blind newcomer that never walks into anyone (docs/world.md §9.5,
issue 51).

`blind_any` treats other agents as non-obstacles.  A careful person who does not
know the norm does not walk into people either: every step `blind_polite` blocks
the cells other agents stand on and the cells they announce they will move to
this step, measures the distance to its current goal on the rules' move graph
(`blind_any.goal_graph`: floor and chairs walkable, a door only as its exit,
free choices skip cells others stand on) with the blocked cells removed, and
takes one of the unblocked moves one closer to the goal, uniformly at random.
A goal cell that is blocked stays a route end, so the newcomer walks up to it
and waits beside it; with no unblocked closer move it WAITs.

The announced moves are what `normjax llm-eval` shows an agent as intents: the
scripted community's planned moves of this step, reduced to effective moves
(`normjax.ground.moves.effective_actions`); a scripted holder of a test scenario
announces the WAIT it is held to.  A state policy receives only its
own key, so they are planned with a key split from it: the same planner and the
same state, but its random tie-breaks and yielding priorities (§8.3, §8.4) are
drawn afresh, and where they decide a move the announcement may differ from the
move made.  Nothing here reads the norm except through other agents' plans,
which is what anyone watching them sees.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from normjax import constants as C
from normjax.env.blind_any import _FAR, _STEPS, distance_to, goal_graph
from normjax.env.step import community_actions
from normjax.ground.moves import DELTAS, effective_actions
from normjax.layouts.tables import world_tables
from normjax.world.state import WorldParams, WorldState


def blocked_cells(key, state: WorldState, params: WorldParams):
    """bool [H, W]: cells another agent stands on or announces it moves to this step."""
    lt = world_tables().at(params.layout)
    ag = state.agents
    others = ag.active & (jnp.arange(ag.active.shape[0]) != 0)
    # Scripted holders (test scenarios) announce the WAIT they are held to.
    planned = jnp.where(ag.habit == C.HABIT_HOLD, C.WAIT, community_actions(key, state, params))
    planned = effective_actions(lt.kind, ag.pos, planned)
    dest = jnp.clip(ag.pos + DELTAS[planned], 0, jnp.asarray([C.H - 1, C.W - 1]))
    grid = jnp.zeros((C.H, C.W), bool)
    return grid.at[ag.pos[:, 0], ag.pos[:, 1]].max(others).at[dest[:, 0], dest[:, 1]].max(others)


def polite_moves(blocked, state: WorldState, params: WorldParams):
    """(ok bool [4] over UP, DOWN, LEFT, RIGHT: unblocked moves one closer to the goal
    on the graph without the blocked cells; d int32 [H, W], that graph's distances)."""
    targets, passable = goal_graph(state, params)
    d = distance_to(targets, passable & ~blocked)
    x = state.agents.pos[0]
    y = x[None, :] + _STEPS
    inside = (y[:, 0] >= 0) & (y[:, 0] < C.H) & (y[:, 1] >= 0) & (y[:, 1] < C.W)
    yc = jnp.clip(y, 0, jnp.asarray([C.H - 1, C.W - 1]))
    enter = inside & (targets | passable)[yc[:, 0], yc[:, 1]] & ~blocked[yc[:, 0], yc[:, 1]]
    here = jnp.where(targets[x[0], x[1]], 0, d[x[0], x[1]])
    ok = enter & (d[yc[:, 0], yc[:, 1]] == here - 1) & (here < _FAR)
    return ok, d


def blind_polite_policy(key, state: WorldState, params: WorldParams):
    """One step of a random shortest route that avoids other agents, else WAIT."""
    k_plan, k_tie = jax.random.split(key)
    ok, _ = polite_moves(blocked_cells(k_plan, state, params), state, params)
    move = jax.random.categorical(k_tie, jnp.where(ok, 0.0, -jnp.inf))
    return jnp.where(ok.any(), move, C.WAIT).astype(jnp.int32)


__all__ = ["blind_polite_policy", "blocked_cells", "polite_moves"]
