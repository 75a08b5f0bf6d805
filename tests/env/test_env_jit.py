"""`NormGymEnv.reset` / `step` are jitted: the same results as the composed step,
one compile per setting of `packing`, and a Python loop reuses the program; how
`env.step` relates to the episode step (normjax.env.episode)."""

import jax
import jax.numpy as jnp
import numpy as np

import normjax
from normjax import constants as C
from normjax.env import environment as env_module
from normjax.env.episode import Newcomer, StepKeys, collision_involvement, episode_step, start_episode, step_keys
from normjax.env.step import COMMUNITY, env_step
from normjax.world.observation import observe
from normjax.world.state import with_packing
from tests.support.helpers import jitted
from tests.support.world_helpers import RESET

# The environment of test_planner's API test and test_gymnasium's single env:
# NormGymEnv's own jitted reset / step programs are shared across those files.
ENV = normjax.make(layout="cafe", norm="clockwise_circulation", phase="test")

# The composed reference, jitted (run eagerly, op by op, it took longer than compiling).
REF_RESET = RESET  # tests.world_helpers' reset program
REF_STEP = jitted(env_step)
REF_OBSERVE = jax.jit(observe)


def test_methods_equal_the_composed_step():
    params = ENV.default_params
    obs, state = ENV.reset(jax.random.PRNGKey(3), params)
    ref_state = REF_RESET(jax.random.PRNGKey(3), params, ENV.config)
    np.testing.assert_array_equal(obs, REF_OBSERVE(ref_state, params).flat())
    for t in range(3):
        key = jax.random.PRNGKey(10 + t)
        obs, state, reward, term, trunc, _ = ENV.step(key, state, t % 5, params)
        k_comm, k_world = jax.random.split(key)
        ref_obs, ref_state, info = REF_STEP(k_comm, k_world, ref_state, jnp.int32(t % 5), params)
        np.testing.assert_array_equal(obs, ref_obs.flat())
        assert float(reward) == float(info.reward[0])
        for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(ref_state)):
            np.testing.assert_array_equal(a, b)


def test_a_python_loop_compiles_once():
    obs, state = ENV.reset(jax.random.PRNGKey(0))
    before = env_module._step._cache_size()
    for t in range(3):
        obs, state, *_ = ENV.step(jax.random.PRNGKey(t), state, 4)
    assert env_module._step._cache_size() - before <= 1


def test_packing_setting_is_part_of_the_compiled_program():
    """Read when a caller's vmap batches the program: a program traced under
    one setting must not be reused under the other (either order)."""
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (2,) + jnp.shape(x)), ENV.default_params)
    _, states = jax.vmap(ENV.reset)(keys, params)
    actions = jnp.asarray([1, 2], jnp.int32)

    def batched(k, s, p):
        return jax.vmap(ENV.step)(k, s, actions, p)

    def unpacked(k, s, p):
        return batched(k, s, with_packing(p, False))

    lowered = {}  # a fresh outer jit each time: only ENV.step's own cache is shared
    for name, f in (("packed", batched), ("unpacked", unpacked), ("packed again", batched)):
        lowered[name] = jax.jit(f).lower(keys, states, params)
    loops = {name: low.as_text().count("stablehlo.while") for name, low in lowered.items()}
    # Unpacked, the chunk loops of the step's rare work are gone (other loops stay).
    assert loops["packed"] == loops["packed again"] > loops["unpacked"], loops
    out = {name: lowered[name].compile()(keys, states, params)[0] for name in ("packed", "unpacked")}
    np.testing.assert_array_equal(out["packed"], out["unpacked"])


# The episode step (normjax.env.episode) with the newcomer's action held in its memory:
# one compiled program for every call below.
HELD = Newcomer(act=lambda key, state, params, memory: memory, observe=lambda memory, state, info, params: memory)
EPISODE_STEP = jax.jit(episode_step, static_argnums=(3, 4))


def test_env_step_is_the_episode_step_with_a_two_way_key_split():
    """`env.step(key, s, a)` = `episode_step(StepKeys(k_comm, _, k_world), ...)` with
    `k_comm, k_world = split(key)`: not the protocol's `step_keys(key)` (documented in
    normjax/env/episode.py)."""
    params = ENV.default_params
    _, state = ENV.reset(jax.random.PRNGKey(5), params)
    for t in range(2):
        key = jax.random.PRNGKey(20 + t)
        _, new, reward, term, _, _ = ENV.step(key, state, t + 1, params)
        k_comm, k_world = jax.random.split(key)
        ep, info = EPISODE_STEP(
            StepKeys(k_comm, k_comm, k_world), start_episode(state, jnp.int32(t + 1)), params, HELD, COMMUNITY
        )
        assert float(reward) == float(info.reward[0]) and bool(term) == bool(ep.done)
        for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(ep.state)):
            np.testing.assert_array_equal(a, b)
        # The protocol's schedule for the same key: community, policy, world = split(key, 3).
        other, _ = EPISODE_STEP(step_keys(key), start_episode(state, jnp.int32(t + 1)), params, HELD, COMMUNITY)
        kc, _, kw = jax.random.split(key, 3)
        _, ref, _ = REF_STEP(kc, kw, state, jnp.int32(t + 1), params)
        for a, b in zip(jax.tree.leaves(other.state), jax.tree.leaves(ref)):
            np.testing.assert_array_equal(a, b)
        state = new


def test_episode_step_counts_and_freezes_once_done():
    params = ENV.default_params
    _, state = ENV.reset(jax.random.PRNGKey(6), params)
    key = jax.random.PRNGKey(7)
    wait = jnp.int32(C.WAIT)
    ep, info = EPISODE_STEP(step_keys(key), start_episode(state, wait), params, HELD, COMMUNITY)
    live = bool(info.active[0])
    assert int(ep.waits) == int(live and int(info.action[0]) == C.WAIT and not bool(info.forced_wait[0]))
    assert int(ep.collisions) == int(collision_involvement(info)[0])
    assert int(ep.state.t) == int(state.t) + 1
    # Done (the newcomer finished): the state, the memory and the counters are kept.
    done = ep._replace(done=jnp.bool_(True), waits=jnp.int32(3), collisions=jnp.int32(2))
    kept, _ = EPISODE_STEP(step_keys(jax.random.PRNGKey(8)), done, params, HELD, COMMUNITY)
    assert bool(kept.done) and int(kept.waits) == 3 and int(kept.collisions) == 2 and int(kept.memory) == C.WAIT
    for a, b in zip(jax.tree.leaves(kept.state), jax.tree.leaves(ep.state)):
        np.testing.assert_array_equal(a, b)
