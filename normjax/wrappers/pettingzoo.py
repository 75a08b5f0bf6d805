"""PettingZoo adapter: chosen slots are agents of the caller, the community fills the rest.

    env = parallel_env(layout="cafe", norm="clockwise_circulation", phase="train",
                       controlled=(0, 3))
    obs, infos = env.reset(seed=0)
    obs, rewards, terminations, truncations, infos = env.step({a: 4 for a in env.agents})

Each slot in `controlled` becomes the agent "agent_<slot>"; its action replaces the
scripted community's in `env_step(..., controlled=mask)`, the one place the
environment step is composed.  The other slots keep their scripted roles (docs/world.md
§8), so multi-agent learners meet the same community a newcomer does.

Semantics (PettingZoo's parallel API):

* observations: `observe(state, params, slot=i).flat()`, the DQN vector of
  docs/world.md §10 seen from slot i (the newcomer's `Box`, with the true bounds of
  `normjax.wrappers.bounds`); `state()` is the global observation: every slot's
  observation, [K * obs_size] in slot order (`state_space`);
* actions: checked by `normjax.wrappers.actions.check_action`; `infos[a]["action_mask"]`
  is the physical mask as int8;
* `max_cycles=n` sets the horizon (`params.max_steps`, default the phase's);
* an agent is terminated on the step its slot's agent exits, and leaves
  `env.agents`; its slot then returns to the scripted community (turnover refills
  background slots, and slot 0 when the phase replaces the newcomer);
* all remaining agents are truncated at the horizon (`max_cycles`), and when a test
  episode ends because the newcomer (slot 0) exited;
* one episode per id, but not one episode per agent: the world's episode is the
  Gymnasium adapter's (the horizon, or the test newcomer's exit), while a PettingZoo
  agent's episode ends earlier when its own slot's agent exits.  With
  `controlled=(0,)` in a train or interaction phase, agent_0 is terminated when the
  first newcomer exits, where `gymnasium.make` on the same id keeps stepping its
  replacements until the horizon (docs/wrappers.md, "One episode per id");
* controlled slots are always in use: `min_agents` is raised to the largest
  controlled slot + 1 (docs/world.md §2.1 draws m agents from min_agents..K), so an
  agent may be pending (not yet entered; its actions are forced WAITs) for the few
  steps of the staggered entry, never absent for a whole episode;
* a controlled slot keeps its world role: background slots can be pushed (§4),
  slot 0 cannot; slot 1 is norm-blind in the interaction phase.

Keys: as in `normjax.wrappers.gymnasium`: `reset(seed=s)` starts the chain
c = seed_key(s) (PRNGKey(s) for s < 2**32); every reset and step splits
(c, k) = split(c); a step splits k into the community and world keys exactly as
`NormGymEnv.step` does.

`env(...)` is the same world as a PettingZoo AEC env (`parallel_to_aec`).  Adapters
pickle (the jitted functions are rebuilt on unpickle) and refuse to run in a process
forked after JAX started (`normjax.wrappers.hostside`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax.wrappers._optional import require

pettingzoo = require("pettingzoo", "pettingzoo", "normjax.wrappers.pettingzoo")
gymnasium = require("gymnasium", "pettingzoo", "normjax.wrappers.pettingzoo")

from gymnasium import spaces  # noqa: E402 (after the check that names the missing extra)

from normjax import constants as C  # noqa: E402 (after the check that names the missing extra)
from normjax.env.environment import NormGymEnv  # noqa: E402 (after the check that names the missing extra)
from normjax.env.step import env_step  # noqa: E402 (after the check that names the missing extra)
from normjax.registration import make  # noqa: E402 (after the check that names the missing extra)
from normjax.world.observation import observe  # noqa: E402 (after the check that names the missing extra)
from normjax.world.step import terminated, truncated  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.actions import check_action  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.bounds import observation_bounds, observation_box  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.core import seed_key  # noqa: E402 (after the check that names the missing extra)
from normjax.wrappers.hostside import (  # noqa: E402 (after the check that names the missing extra)
    RENDER_FPS,
    PicklableJit,
    action_mask,
    refuse_forked_jax,
    resolve_params,
)
from normjax.wrappers.human import SINGLE_ENV_RENDER_MODES, RenderedEnv, check_render_mode  # noqa: E402 (after the check that names the missing extra)


@functools.cache
def compiled_parallel(capacity: int):
    """Jitted reset and joint step for capacity K, one pair per process and capacity.

    Observations and per-slot outcomes are computed for all K slots (the caller
    keeps the controlled rows), so shapes do not depend on which or how many slots
    are controlled and no choice of `controlled` triggers a new compilation.
    """
    env = NormGymEnv(capacity=capacity)
    slots = jnp.arange(capacity)

    def observe_all(state, params):
        return jax.vmap(lambda s: observe(state, params, slot=s).flat())(slots)

    def reset(key, params):
        _, state = env.reset(key, params)
        return state, observe_all(state, params)

    def step(key, state, actions, control, params):
        k_comm, k_world = jax.random.split(key)  # as NormGymEnv.step splits its key
        _, state, info = env_step(k_comm, k_world, state, actions, params, controlled=control)
        per_slot = {
            "reward": info.reward,
            "exited": info.exited,
            "sanctioned": info.sanctioned,
            "collided": info.collided,
            "goals_completed": info.goals_completed,
            "active": state.agents.active,
        }
        over = truncated(state, params) | terminated(state, params)
        return state, observe_all(state, params), per_slot, over

    return jax.jit(reset), jax.jit(step)


def _agent_name(slot: int) -> str:
    return f"agent_{slot}"


class NormGymParallelEnv(RenderedEnv, PicklableJit, pettingzoo.ParallelEnv):
    """A NormGym world with `controlled` slots driven by the caller (see module doc)."""

    metadata = {
        "name": "normgym_v0",
        "render_modes": list(SINGLE_ENV_RENDER_MODES),
        "render_fps": RENDER_FPS,
        "is_parallelizable": True,
    }
    _JITTED = ("_reset_fn", "_step_fn")

    def __init__(
        self,
        env: NormGymEnv,
        controlled=(0,),
        params=None,
        render_mode: str | None = None,
        cell_px: int = 32,
        max_cycles: int | None = None,
    ):
        refuse_forked_jax(type(self).__name__)
        slots = tuple(int(s) for s in controlled)
        if not slots or len(set(slots)) != len(slots) or not all(0 <= s < env.capacity for s in slots):
            raise ValueError(f"controlled must be distinct slots in 0..{env.capacity - 1}, got {controlled!r}")
        check_render_mode(render_mode, SINGLE_ENV_RENDER_MODES)
        self.env = env
        self.slots = tuple(sorted(slots))
        params = resolve_params(env, params, max_cycles)
        self.max_cycles = int(params.max_steps)
        self.params = params.replace(min_agents=jnp.maximum(params.min_agents, max(self.slots) + 1).astype(jnp.int32))
        self.render_mode = render_mode
        self.cell_px = int(cell_px)
        self.possible_agents = [_agent_name(s) for s in self.slots]
        self.agents = []
        self._slot_of = dict(zip(self.possible_agents, self.slots))
        box = observation_box(env.capacity)
        low, high = observation_bounds(env.capacity)
        self.state_space = spaces.Box(np.tile(low, env.capacity), np.tile(high, env.capacity), dtype=np.float32)
        # PettingZoo asks for the same space object on every call.
        self._obs_spaces = {a: box for a in self.possible_agents}
        self._act_spaces = {a: spaces.Discrete(C.N_ACTIONS) for a in self.possible_agents}
        self._build_jitted()
        self._chain = None
        self._state = None
        self._all_obs = None

    def _build_jitted(self):
        self._reset_fn, self._step_fn = compiled_parallel(self.env.capacity)

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    def state(self) -> np.ndarray:
        """The global observation: every slot's observation in slot order, [K * obs_size]."""
        if self._all_obs is None:
            raise RuntimeError("call reset() before state()")
        return self._all_obs.reshape(-1).copy()

    @property
    def world_state(self):
        """The current `WorldState` (None before the first reset)."""
        return self._state

    def _next_key(self):
        self._chain, key = jax.random.split(self._chain)
        return key

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._chain = seed_key(seed)
        elif self._chain is None:
            self._chain = seed_key(np.random.default_rng().integers(2**32))
        self._state, obs = self._reset_fn(self._next_key(), self.params)
        obs, active = jax.device_get((obs, self._state.agents.active))
        self._all_obs = np.array(obs)
        self.agents = list(self.possible_agents)
        observations = {a: np.array(obs[s]) for a, s in self._slot_of.items()}
        infos = {
            a: {"active": bool(active[s]), "action_mask": action_mask(observations[a])}
            for a, s in self._slot_of.items()
        }
        return observations, infos

    def step(self, actions: dict):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        live = list(self.agents)
        if not live:
            raise RuntimeError("every agent has left (terminated or truncated); call reset()")
        missing = [a for a in live if a not in actions]
        extra = [a for a in actions if a not in live]
        if missing or extra:
            raise ValueError(
                f"actions are needed for exactly the live agents {live}; missing {missing}, not live {extra}"
            )
        joint = np.full(self.env.capacity, C.WAIT, np.int32)
        control = np.zeros(self.env.capacity, bool)
        for a in live:
            joint[self._slot_of[a]] = check_action(actions[a], what=f"action of {a}")
            control[self._slot_of[a]] = True
        self._state, obs, per_agent, over = self._step_fn(
            self._next_key(), self._state, jnp.asarray(joint), jnp.asarray(control), self.params
        )
        obs, per_agent, over = jax.device_get((obs, per_agent, over))
        self._all_obs = np.array(obs)
        observations, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for a in live:
            i = self._slot_of[a]
            observations[a] = np.array(obs[i])
            rewards[a] = float(per_agent["reward"][i])
            terms[a] = bool(per_agent["exited"][i])
            truncs[a] = bool(over) and not terms[a]
            infos[a] = {
                key: per_agent[key][i].item() for key in ("sanctioned", "collided", "goals_completed", "active")
            }
            infos[a]["action_mask"] = action_mask(observations[a])
        self.agents = [a for a in live if not (terms[a] or truncs[a])]
        return observations, rewards, terms, truncs, infos


def parallel_env(
    env_id: str | None = None,
    *,
    controlled=(0,),
    params=None,
    render_mode: str | None = None,
    cell_px: int = 32,
    max_cycles: int | None = None,
    **fields,
) -> NormGymParallelEnv:
    """A `pettingzoo.ParallelEnv` of a NormGym world with `controlled` slots as agents.

    The world comes from an id and/or `NormGymEnv` fields (layout, norm, phase,
    capacity, reward_condition), exactly as `normjax.make` builds it.
    """
    env = make(env_id, **fields) if env_id is not None else make(**fields)
    return NormGymParallelEnv(
        env, controlled=controlled, params=params, render_mode=render_mode, cell_px=cell_px, max_cycles=max_cycles
    )


def env(env_id: str | None = None, **kwargs):
    """The same world as a PettingZoo AEC env (`parallel_to_aec(parallel_env(...))`)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(parallel_env(env_id, **kwargs))


__all__ = ["NormGymParallelEnv", "compiled_parallel", "env", "parallel_env"]
