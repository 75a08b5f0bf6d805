"""benchmarks/stage_breakdown.py's one-step count, on a step whose traffic is known."""

import jax.numpy as jnp

from benchmarks.stage_breakdown import public_step_cost


def test_public_step_cost_is_per_env_and_sizes_the_state():
    batch, n = 16, 250
    state = {"x": jnp.zeros((batch, n), jnp.float32), "t": jnp.zeros((batch,), jnp.int32)}

    def step(s, a):  # reads x, t and the action once, writes x and t once
        return {"x": s["x"] + a.astype(jnp.float32), "t": s["t"] + 1}

    row = public_step_cost(step, state, jnp.ones((batch,), jnp.int32), batch)
    assert row["state_kb_per_env"] == (4 * n + 4) / 1e3
    # XLA's count: 1,004 bytes of state in, 4 of action in, 1,004 out, per env.
    assert row["kb_accessed_per_env_step"] == round((2 * (4 * n + 4) + 4) / 1e3, 2)
    assert row["flops_per_env_step"] > 0
