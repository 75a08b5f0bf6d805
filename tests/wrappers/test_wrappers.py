"""Pure-JAX wrappers: auto-reset, episode statistics, observation formats.

One wrapper stack (`DictObservation(LogWrapper(AutoResetWrapper(env)))`) is compiled
once, unbatched and as `jit(vmap(step))`, and shared by every test of this file.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import normjax
from normjax import constants as C
from normjax.env import phase_params
from normjax.layouts.tables import layout_id
from normjax.norms import norm_id
from normjax.world.observation import obs_size
from normjax.wrappers import (
    OBS_KEYS,
    AutoResetWrapper,
    DictObservation,
    FlattenObservation,
    LogState,
    LogWrapper,
    flatten_observation,
    reset_key,
    seed_key,
    step_info,
    unflatten_observation,
    world_state,
)

ENV = normjax.make("NormGym-cafe-none-test-v0")
STACK = DictObservation(LogWrapper(AutoResetWrapper(ENV)))
RESET = jax.jit(STACK.reset)
STEP = jax.jit(STACK.step)
OBSERVE = jax.jit(STACK.observation)
VSTEP = jax.jit(jax.vmap(STACK.step))  # keys, states, actions and params all batched

CAFE = layout_id("cafe")
DOOR_C = 2
EXIT_MOVE = {0: C.LEFT, 1: C.DOWN, 2: C.RIGHT}  # from a door's inward cell onto the door


def test_attributes_are_forwarded():
    assert STACK.capacity == 10 and STACK.num_actions == 5 and STACK.obs_size == 585
    assert STACK.unwrapped is ENV
    assert "AutoResetWrapper(NormGymEnv(" in repr(STACK)
    obs, state = RESET(jax.random.PRNGKey(0), ENV.default_params)
    assert isinstance(state, LogState) and int(world_state(state).t) == 0
    # The structured observation of a wrapped state is the newcomer's.
    np.testing.assert_array_equal(STACK.observation(state).flat(), flatten_observation(obs))


class _Recorded:
    """A stand-in env replaying one recorded observation (tests the plumbing only)."""

    capacity = 10

    def __init__(self, obs):
        self.obs = obs

    def reset(self, key, params=None):
        return self.obs, 0

    def step(self, key, state, action, params=None):
        return self.obs, state + 1, 0.0, False, False, {"final_obs": self.obs}


def test_dict_and_flat_observations_round_trip():
    parts, state = RESET(jax.random.PRNGKey(3), ENV.default_params)
    ob = OBSERVE(state)
    obs = ob.flat()
    assert set(parts) == set(OBS_KEYS)  # (jit returns dict keys sorted)
    assert parts["planes"].shape == (3, 11, 15) and parts["others"].shape == (9, 8)
    np.testing.assert_array_equal(parts["planes"], ob.planes)
    np.testing.assert_array_equal(parts["vector"], ob.vector[:13])
    np.testing.assert_array_equal(parts["others"].reshape(-1), ob.vector[13:-5])
    np.testing.assert_array_equal(parts["action_mask"], ob.action_mask)
    assert parts["action_mask"].dtype == bool
    np.testing.assert_array_equal(flatten_observation(parts), obs)
    # Batched (leading axes) and other capacities.
    batch = jnp.stack([obs, obs * 0])
    assert unflatten_observation(batch)["others"].shape == (2, 9, 8)
    np.testing.assert_array_equal(flatten_observation(unflatten_observation(batch)), batch)
    assert unflatten_observation(jnp.zeros(obs_size(6)))["others"].shape == (5, 8)
    with pytest.raises(ValueError, match="553, 569, 585"):
        unflatten_observation(jnp.zeros(100))
    # The wrappers transform the observation and the info's final_obs alike;
    # FlattenObservation undoes DictObservation and leaves a flat env unchanged.
    key = jax.random.PRNGKey(0)
    as_dict = DictObservation(_Recorded(obs))
    d_obs, _, _, _, _, d_info = as_dict.step(key, 0, 0)
    assert set(d_obs) == set(d_info["final_obs"]) == set(OBS_KEYS)
    for wrapped in (FlattenObservation(as_dict), FlattenObservation(_Recorded(obs))):
        np.testing.assert_array_equal(wrapped.reset(key)[0], obs)
        f_obs, _, _, _, _, f_info = wrapped.step(key, 0, 0)
        np.testing.assert_array_equal(f_obs, obs)
        np.testing.assert_array_equal(f_info["final_obs"], obs)


def _starts(norm: str, exit_by_c: bool):
    """Keys whose newcomer enters by door C (and, if asked, has to leave by it)."""
    params = phase_params("test", CAFE, norm_id(norm))
    for seed in range(400):
        obs, state = RESET(jax.random.PRNGKey(seed), params)
        ag = world_state(state).agents
        if int(ag.entry_door[0]) == DOOR_C and (not exit_by_c or int(ag.exit_door[0]) == DOOR_C):
            yield seed, params


def _play(seed, params, actions):
    """Run a scripted newcomer; returns the per-step outputs of the wrapper stack."""
    obs, state = RESET(jax.random.PRNGKey(seed), params)
    out = []
    for t, action in enumerate(actions):
        obs, state, reward, term, trunc, info = STEP(jax.random.PRNGKey(1000 + t), state, action, params)
        out.append((obs, state, float(reward), bool(term), bool(trunc), info))
    return out


def _play_unhindered(norm, exit_by_c, actions):
    """The first start by door C where no bystander blocks the scripted newcomer.

    A background agent entering by door C may stand on the newcomer's way back;
    such starts are passed over (the world's own StepInfo says so), not counted.
    """
    for seed, params in _starts(norm, exit_by_c):
        out = _play(seed, params, actions)
        if not any(bool(step_info(o[5]).collided[0] | step_info(o[5]).displaced[0]) for o in out):
            return params, out
    raise AssertionError(f"no unhindered start by door C for {norm}")


def _returned(info):
    return {k: info[f"returned_episode_{k}"].item() for k in ("return", "length", "sanctions", "goals", "collisions")}


def test_stats_of_a_hand_checked_goal_episode():
    """Zone R (cafe rows 2-3, cols 11-12) lies next to door C's inward cell (3, 13).

    Newcomer entering by C with an "any R cell" goal (zone-R norms) and exit door C:
    LEFT into R (step 1), three forced service WAITs (steps 2-4, goal 1 at the end of
    step 4: +10), RIGHT back to (3, 13) (step 5), RIGHT onto door C (step 6: goal 2,
    +10, terminated).  Six active steps at 0.1: return 20 - 0.6 = 19.4, no sanction
    (R is empty when entered: only the newcomer has acted).
    """
    script = [C.LEFT, C.WAIT, C.WAIT, C.WAIT, C.RIGHT, C.RIGHT]
    params, out = _play_unhindered("zone_r_capacity_2", True, script)
    terms = [o[3] for o in out]
    assert terms == [False] * 5 + [True] and not any(o[4] for o in out)
    goals = [int(step_info(o[5]).goals_completed[0]) for o in out]
    assert goals == [0, 0, 0, 1, 0, 1]
    running = [o[5]["episode_length"].item() for o in out]
    assert running == [1, 2, 3, 4, 5, 6]
    assert [bool(o[5]["returned_episode"]) for o in out] == terms
    last = out[-1]
    got = _returned(last[5])
    assert got["return"] == pytest.approx(19.4, abs=1e-5)
    assert (got["length"], got["sanctions"], got["goals"], got["collisions"]) == (6, 0, 2, 0)
    # Auto-reset: the returned observation and state belong to the new episode ...
    new_state = last[1]
    assert int(world_state(new_state).t) == 0
    assert new_state.episode.length.item() == 0 and new_state.returned.goals.item() == 2
    _, fresh = RESET(reset_key(jax.random.PRNGKey(1005)), params)
    np.testing.assert_allclose(flatten_observation(last[0]), STACK.observation(fresh, params).flat(), atol=1e-6)
    # ... and the info keeps the observation the finished episode ended on.
    final = flatten_observation(last[5]["final_obs"])
    assert final[3 * 11 * 15 + 7] == 1.0  # "task completed" of the newcomer vector
    assert not np.array_equal(final, flatten_observation(last[0]))


def test_stats_of_a_hand_checked_sanction_episode():
    """Under right_door_forbidden a newcomer that entered by C and leaves by C again
    is sanctioned once: WAIT, RIGHT -> return -0.1 - 0.1 - 20 = -20.2, length 2."""
    params, out = _play_unhindered("right_door_forbidden", False, [C.WAIT, EXIT_MOVE[DOOR_C], C.WAIT])
    assert [o[3] for o in out] == [False, True, False]
    got = _returned(out[1][5])
    assert got["return"] == pytest.approx(-20.2, abs=1e-5)
    assert (got["length"], got["sanctions"], got["goals"], got["collisions"]) == (2, 1, 0, 0)
    # The next episode starts from zero; the finished one stays in `returned_*`.
    third = out[2][5]
    assert not bool(third["returned_episode"])
    assert third["episode_length"].item() == 1 and third["episode_sanctions"].item() == 0
    assert _returned(third) == got


def test_seed_keys():
    np.testing.assert_array_equal(seed_key(5), jax.random.PRNGKey(5))
    np.testing.assert_array_equal(seed_key(2**32 - 1), jax.random.PRNGKey(2**32 - 1))
    big = [seed_key(s) for s in (5, 2**32 + 5, 2**64 + 5, 2**70)]
    assert len({tuple(np.asarray(k).tolist()) for k in big}) == 4  # high bits are kept
    with pytest.raises(ValueError, match="non-negative"):
        seed_key(-1)


def _batched_params(n):
    """A batch mixing layouts, norms and phases; short horizons force auto-resets."""
    rows = [
        ("cafe", "clockwise_circulation", "test", 4),
        ("bank", None, "train", 3),
        ("library", "zone_r_capacity_1", "interaction", 5),
    ]
    ps = [phase_params(ph, layout_id(lay), norm_id(nm), max_steps=h) for lay, nm, ph, h in rows[:n]]
    return jax.tree.map(lambda *x: jnp.stack(x), *ps)


def test_jit_vmap_step_equals_unbatched_steps():
    n, steps = 3, 9
    params = _batched_params(n)
    keys = jax.random.split(jax.random.PRNGKey(7), n)
    starts = [RESET(keys[i], jax.tree.map(lambda x: x[i], params)) for i in range(n)]
    obs, state = jax.tree.map(lambda *x: jnp.stack(x), *starts)
    singles = list(starts)
    seen_done = np.zeros(n, bool)
    running = np.zeros((n, 5))  # return, length, sanctions, goals, collisions since reset
    for t in range(steps):
        step_keys = jax.random.split(jax.random.PRNGKey(100 + t), n)
        actions = jax.random.randint(jax.random.PRNGKey(200 + t), (n,), 0, C.N_ACTIONS)
        b = VSTEP(step_keys, state, actions, params)
        state = b[1]
        for i in range(n):
            p_i = jax.tree.map(lambda x: x[i], params)
            u = STEP(step_keys[i], singles[i][1], actions[i], p_i)
            singles[i] = (u[0], u[1])
            jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x)[i], y, rtol=1e-6), b, u)
            info = u[5]
            si = step_info(info)
            running[i] += [float(u[2]), 1, si.sanctioned[0], si.goals_completed[0], si.collided[0]]
            np.testing.assert_allclose(
                [info[f"episode_{k}"] for k in ("return", "length", "sanctions", "goals", "collisions")],
                running[i],
                rtol=1e-5,
                atol=1e-5,
            )
            if bool(u[3] | u[4]):
                seen_done[i] = True
                running[i] = 0
                assert int(world_state(u[1]).t) == 0
    assert seen_done.all()  # every member of the batch auto-reset at least once
