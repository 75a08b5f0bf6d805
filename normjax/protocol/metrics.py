"""Per-step and end-of-episode pieces of the protocol metrics (docs/world.md §9.4).

Both functions use only array methods and operators, so they run on jax arrays
inside the compiled protocol (`normjax.protocol.runner`) and on host numpy
arrays in the lockstep LLM runner (`normjax.runtime.runner`) with the same result.

* `collision_involvement(info)`: per slot, whether the agent took part in a
  collision on the step: charged as the mover (docs/world.md §4.1 rule 6),
  moved into (it stood still and a mover targeted its cell, rule 3), or pushed
  off its cell (rules 3-5).  It lives with the episode step that counts it
  (`normjax.env.episode`) and is re-exported here.
* `community_totals(state)`: count, total steps and total reward of the other
  agents of the episode (not slot 0), each counted from its entry to its exit
  or to the state's step: the agents that exited (the state's running sums)
  plus those still on the grid that have taken at least one step.
"""

from __future__ import annotations

from normjax.env.episode import collision_involvement


def community_totals(state):
    """(agents, steps, reward) of the episode's other agents up to `state`.

    Exited agents were booked into `state.community_*` at their exit step
    (`normjax.world.step`); agents still on the grid add their steps and
    accumulated reward so far.  An agent that entered at the end of the last
    step has taken no step yet and is not counted.
    """
    ag = state.agents
    on = ag.active[..., 1:] & (ag.steps[..., 1:] > 0)
    agents = state.community_finished + on.sum(-1)
    steps = state.community_steps + (ag.steps[..., 1:] * on).sum(-1)
    # float32 sums in slot order, one add at a time: numpy and XLA reduce a
    # whole axis in different orders, and the two runners must agree exactly.
    reward = state.community_return
    for i in range(1, ag.ret.shape[-1]):
        reward = reward + ag.ret[..., i] * on[..., i - 1]
    return agents, steps, reward


__all__ = ["collision_involvement", "community_totals"]
