"""`NormGymEnv.reset` / `step` are jitted: the same results as the composed step,
one compile per setting of `packing`, and a Python loop reuses the program."""

import jax
import jax.numpy as jnp
import numpy as np

import normjax
from normjax.env import environment as env_module
from normjax.env.step import env_step
from normjax.world.observation import observe
from normjax.world.state import with_packing
from tests.helpers import jitted
from tests.world_helpers import RESET

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
