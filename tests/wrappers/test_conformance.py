"""Ecosystem conformance: Gymnasium's, PettingZoo's and gymnax's own tools on normjax, unchanged.

Default tier: what compiles nothing (action checks, declared spaces, the gymnax
face's metadata, pickling an env that was never reset).  Slow tier: everything that
steps an environment, on the programs tests/wrappers/test_gymnasium.py and
tests/wrappers/test_pettingzoo.py compile too (capacity 10, the same 3-env batch), so a run
after the default tier loads them from the persistent compilation cache; the
observation-bounds property (one jitted, vmapped rollout per capacity); and the
async vector env (subprocesses, `distributed`).  The docs' code blocks run in
tests/test_docs_blocks.py (a file of its own, so xdist runs it on another worker).
"""

import multiprocessing
import pickle
import subprocess
import sys
import warnings

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import FlattenObservation, NormalizeObservation, RecordEpisodeStatistics
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import normjax
from normjax import constants as C
from normjax.env import phase_params
from normjax.layouts import LAYOUTS
from normjax.layouts.tables import layout_id
from normjax.norms import norm_id
from normjax.wrappers import bounds
from normjax.wrappers.actions import as_valid_action, check_action, check_actions
from normjax.wrappers.gymnasium import HORIZON, NormGymGymnasiumEnv, NormGymVectorEnv
from normjax.wrappers.pettingzoo import compiled_parallel, parallel_env
from normjax.wrappers.pettingzoo import env as aec_env
from tests.wrappers.test_gymnasium import BATCHED, ID, N

try:  # in the [test] extra; a bare checkout without it skips only the gymnax tests
    import gymnax
    from gymnax.wrappers.purerl import LogWrapper as GymnaxLogWrapper

    from normjax.wrappers.gymnax import GymnaxEnv
    from normjax.wrappers.gymnax import make as gymnax_make
except ImportError:
    gymnax = None
needs_gymnax = pytest.mark.skipif(gymnax is None, reason="gymnax is not installed (pip install -e '.[gymnax]')")

slow = pytest.mark.slow


# ---------------------------------------------------------------- default tier


def test_one_action_check_for_every_adapter():
    for good in (2, np.int64(2), np.int8(2), np.array(2), jnp.int32(2), jnp.array(2, jnp.int32)):
        assert check_action(good) == 2
    for bad in (2.0, np.float32(2), True, "2", np.array([2]), jnp.array(2.0), None):
        with pytest.raises(TypeError, match=r"0\.\.4"):
            check_action(bad)
    for bad in (5, -1, np.int64(7), jnp.int32(-3)):
        with pytest.raises(ValueError, match=rf"0\.\.4.*got {int(bad)}"):
            check_action(bad)
    np.testing.assert_array_equal(check_actions([0, np.int32(4), jnp.int32(1)], 3), [0, 4, 1])
    np.testing.assert_array_equal(check_actions(jnp.arange(3), 3), [0, 1, 2])
    with pytest.raises(TypeError, match="shape"):
        check_actions(np.zeros(2, int), 3)
    with pytest.raises(TypeError, match="dtype float"):
        check_actions(np.zeros(3), 3)
    with pytest.raises(ValueError, match="got 9 at index 1"):
        check_actions(np.array([0, 9, 1]), 3)
    # Inside jit: integer dtypes only (a trace-time error), out-of-range actions are WAIT.
    np.testing.assert_array_equal(jax.jit(as_valid_action)(jnp.array([7, -1, 2])), [C.WAIT, C.WAIT, 2])
    with pytest.raises(TypeError, match="integer dtype"):
        jax.jit(as_valid_action)(2.0)


def test_declared_bounds_per_feature():
    for k in C.CAPACITIES:
        low, high = bounds.observation_bounds(k)
        assert low.shape == high.shape == (normjax.obs_size(k),) and low.dtype == np.float32
        vec = 3 * C.H * C.W
        assert (low[:vec] == 0).all() and (high[:vec] == 1).all()  # map planes
        np.testing.assert_array_equal(low[vec : vec + 13], [-1, -1, 0, 0, -2, -2, 0, 0, 0, 0, 0, 0, 0])
        np.testing.assert_array_equal(high[vec : vec + 13], [1, 1, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1])
        others = low[vec + 13 : -5].reshape(k - 1, 8)
        assert (others[:, :4] == -1).all() and (others[:, 4:] == 0).all()
        assert (high[vec + 13 :] == 1).all()
    env = NormGymGymnasiumEnv(ID)
    np.testing.assert_array_equal(env.observation_space.low, bounds.observation_bounds(10)[0])
    assert parallel_env(capacity=6).observation_space("agent_0") == env.observation_space.__class__(
        *bounds.observation_bounds(6), dtype=np.float32
    )
    with pytest.raises(ValueError, match="one of"):
        bounds.observation_bounds(7)


def test_spec_horizon_and_max_episode_steps():
    assert gymnasium.spec(ID).max_episode_steps == 100
    assert gymnasium.spec("NormGym-cafe-none-train-v0").max_episode_steps == 200
    for phase, steps in HORIZON.items():
        assert int(phase_params(phase, 0, -1).max_steps) == steps
    env = gymnasium.make(ID, max_episode_steps=50)
    assert env.spec.max_episode_steps == 50
    assert int(NormGymGymnasiumEnv(ID, max_episode_steps=50).params.max_steps) == 50
    venv = gymnasium.make_vec(ID, num_envs=2, max_episode_steps=50)  # a TypeError before
    assert int(venv.params.max_steps) == 50 and venv.autoreset_mode == AutoresetMode.NEXT_STEP
    assert int(parallel_env(ID, max_cycles=7).max_cycles) == 7
    with pytest.raises(ValueError, match="positive"):
        NormGymGymnasiumEnv(ID, max_episode_steps=0)
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        NormGymVectorEnv(ID, num_envs=2, autoreset_mode="sometimes")


def test_pickle_before_reset_rebuilds_the_jitted_functions():
    for env in (gymnasium.make(ID), NormGymVectorEnv(ID, num_envs=2), parallel_env(ID)):
        back = pickle.loads(pickle.dumps(env))
        assert back.unwrapped.env == env.unwrapped.env
        assert back.unwrapped._reset_fn is env.unwrapped._reset_fn  # the per-process cache


@needs_gymnax
def test_gymnax_face_metadata():
    env, params = gymnax_make(ID)
    assert isinstance(env, GymnaxEnv) and env.name == ID and env.num_actions == 5
    assert isinstance(env.action_space(params), gymnax.environments.spaces.Discrete)
    box = env.observation_space(params)
    assert box.shape == (585,) and float(box.high[499]) == 2.0
    face, p2 = normjax.make(ID, return_params=True)  # gymnax's idiom: the same face, not the bare env
    assert isinstance(face, GymnaxEnv) and face.name == ID and face.unwrapped == env.unwrapped
    assert face.action_space(p2).n == 5 and face.observation_space(p2).shape == (585,)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), params, p2))
    native = normjax.make(ID)
    assert native == env.unwrapped and isinstance(native, normjax.NormGymEnv)
    with pytest.raises(TypeError, match="AutoResetWrapper"):
        GymnaxEnv(normjax.wrappers.AutoResetWrapper(native))


def test_return_params_builds_the_gymnax_face_without_gymnax(monkeypatch):
    """Building (and stepping) the face is normjax's JAX code; only its spaces need gymnax."""
    monkeypatch.setitem(sys.modules, "gymnax.environments.spaces", None)  # as if not installed
    env, params = normjax.make(ID, capacity=6, return_params=True)
    assert type(env).__name__ == "GymnaxEnv" and env.unwrapped == normjax.make(ID, capacity=6)
    assert int(params.max_steps) == 100
    with pytest.raises(ImportError, match=r'pip install -e "\.\[gymnax\]"'):
        env.action_space(params)


# ---------------------------------------------------------------- slow tier: Gymnasium


@pytest.fixture(scope="module")
def single():
    return gymnasium.make(ID)


@slow
def test_check_env_sample_mask_and_pickle_round_trip(single):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(single.unwrapped)
    assert not [str(w.message) for w in caught if "WARN:" in str(w.message)]
    obs, info = single.reset(seed=1)
    assert info["action_mask"].dtype == np.int8
    for _ in range(6):
        action = single.action_space.sample(mask=info["action_mask"])
        assert info["action_mask"][action] == 1
        obs, _, _, _, info = single.step(action)
    copy = pickle.loads(pickle.dumps(single))
    for action in (4, 1, 2, 3):
        a, b = single.step(action), copy.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]


@slow
def test_vector_wrappers_through_episode_ends():
    """RecordEpisodeStatistics + FlattenObservation + NormalizeObservation (NEXT_STEP)."""
    venv = NormGymVectorEnv(ID, num_envs=N, params=BATCHED)  # horizons 5, 3, 4
    env = NormalizeObservation(FlattenObservation(RecordEpisodeStatistics(venv)))
    obs, info = env.reset(seed=3)
    ended, lengths = np.zeros(N, int), np.zeros(N, int)
    for _ in range(14):
        obs, reward, term, trunc, info = env.step(np.full(N, C.WAIT))
        assert np.isfinite(obs).all() and obs.shape == (N, 585)
        if "episode" in info:
            rows = info["_episode"]
            np.testing.assert_array_equal(rows, info["_normjax_episode"])
            np.testing.assert_allclose(info["episode"]["r"][rows], info["normjax_episode"]["r"][rows], atol=1e-5)
            np.testing.assert_array_equal(info["episode"]["l"][rows], info["normjax_episode"]["l"][rows])
            ended += rows
            lengths[rows] = info["episode"]["l"][rows]
    assert (ended >= 2).all()  # every env through at least two episode ends
    assert lengths.tolist() == [5, 3, 4]


@slow
def test_disabled_mode_restarts_only_masked_envs():
    venv = NormGymVectorEnv(ID, num_envs=N, params=BATCHED, autoreset_mode="disabled")
    venv.reset(seed=0)
    for _ in range(3):
        obs, _, term, trunc, _ = venv.step([4, 4, 4])
    assert (term | trunc).tolist() == [False, True, False]  # horizons 5, 3, 4
    with pytest.raises(gymnasium.error.ResetNeeded, match=r"\[1\]"):
        venv.step([4, 4, 4])
    t_before = np.asarray(venv.state.t)
    obs2, info = venv.reset(options={"reset_mask": np.array([False, True, False])})
    np.testing.assert_array_equal(obs2[[0, 2]], obs[[0, 2]])
    assert np.asarray(venv.state.t).tolist() == [t_before[0], 0, t_before[2]]
    assert info["_action_mask"].tolist() == [False, True, False]
    venv.step([4, 4, 4])


@pytest.mark.distributed
def test_async_make_vec_default_context_errors_clearly_and_forkserver_runs():
    """Subprocesses; the default context (fork on Linux before Python 3.14) must not hang."""
    code = (
        "import gymnasium, normjax.wrappers.gymnasium\n"
        "import sys\n"
        "kw = {} if sys.argv[1] == 'default' else {'vector_kwargs': {'context': sys.argv[1]}}\n"
        "try:\n"
        "    v = gymnasium.make_vec('NormGym-cafe-none-train-v0', num_envs=2, vectorization_mode='async', capacity=6, **kw)\n"
        "    o, _ = v.reset(seed=0); v.close()\n"
        "    print('RAN', o.shape)\n"
        "except Exception as e:\n"
        "    print('ERROR', type(e).__name__, e)\n"
    )
    for context in ("default", "forkserver"):
        out = subprocess.run([sys.executable, "-c", code, context], capture_output=True, text=True, timeout=400)
        text = out.stdout + out.stderr
        if context == "forkserver" or multiprocessing.get_start_method() != "fork":
            assert "RAN (2, 553)" in out.stdout, text[-3000:]
        else:  # the caller gets the clear error itself, raised before any worker starts
            assert "ERROR RuntimeError" in out.stdout and "forkserver" in out.stdout, text[-3000:]


def test_async_vector_env_with_fork_fails_in_the_parent_before_any_worker():
    """Without it the workers stop with the error and the caller sees a ConnectionResetError."""
    before = multiprocessing.active_children()
    with pytest.raises(RuntimeError, match="'fork' multiprocessing context") as err:
        gymnasium.make_vec(ID, num_envs=2, vectorization_mode="async", vector_kwargs={"context": "fork"})
    assert 'vector_kwargs={"context": "forkserver"}' in str(err.value) and "__main__" in str(err.value)
    assert multiprocessing.active_children() == before  # no worker was started
    NormGymGymnasiumEnv(ID)  # outside AsyncVectorEnv nothing is refused


# ---------------------------------------------------------------- slow tier: PettingZoo


@pytest.fixture(scope="module")
def pz_env():
    def make():
        return parallel_env("NormGym-cafe-clockwise_circulation-train-v0", controlled=(0, 3), capacity=10)

    return make


@slow
def test_pettingzoo_parallel_and_aec_suites(pz_env):
    env = pz_env()
    parallel_api_test(env, num_cycles=30)
    parallel_seed_test(pz_env, num_cycles=30)
    api_test(aec_env("NormGym-cafe-clockwise_circulation-train-v0", controlled=(0, 3)), num_cycles=30)
    seed_test(lambda: aec_env("NormGym-cafe-clockwise_circulation-train-v0", controlled=(0, 3)), num_cycles=30)
    env.reset(seed=0)
    state = env.state()
    assert state.shape == (10 * 585,) and state in env.state_space
    obs, *_ = env.step({a: C.WAIT for a in env.agents})
    np.testing.assert_array_equal(env.state().reshape(10, 585)[3], obs["agent_3"])
    copy = pickle.loads(pickle.dumps(env))
    actions = {a: C.DOWN for a in env.agents}
    assert data_equivalence(env.step(actions), copy.step(actions))


# ---------------------------------------------------------------- slow tier: gymnax


@slow
@needs_gymnax
def test_gymnax_log_wrapper_under_jit_vmap():
    env, params = normjax.make(ID, capacity=6, return_params=True)  # gymnax's idiom (issue 57)
    assert isinstance(env, GymnaxEnv) and env.unwrapped == gymnax_make(ID, capacity=6)[0].unwrapped
    params = params.replace(max_steps=jnp.int32(4))
    logged = GymnaxLogWrapper(env)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    obs, state = jax.vmap(logged.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(logged.step, in_axes=(0, 0, 0, None)))
    done_seen, running = np.zeros(3, bool), np.zeros(3, np.float32)
    for t in range(5):
        keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t)
        obs, state, reward, term, trunc, info = step(keys, state, jnp.array([4, 7, -1]), params)
        assert obs.shape == (3, 553) and bool(env.observation_space(params).contains(obs))
        running += np.asarray(reward)
        ended = np.asarray(info["returned_episode"])
        np.testing.assert_array_equal(np.asarray(info["returned_episode_returns"])[ended], running[ended])
        running[ended] = 0.0
        done_seen |= ended
        final = np.asarray(info["final_observation"])
        assert final.shape == (3, 553)
    assert done_seen.all()  # horizon 4: every env ended and was reset inside the step
    assert np.asarray(info["returned_episode_lengths"]).tolist() == [4, 4, 4]


# ---------------------------------------------------------------- slow tier: the bounds property

ROLL_ENVS, ROLL_STEPS = 16, 128


def _rollout_params(k):
    rows = []
    for i in range(ROLL_ENVS):
        p = phase_params(
            "train", layout_id(LAYOUTS[i % len(LAYOUTS)]), norm_id(None if i % 2 else "clockwise_circulation")
        )
        rows.append(p.replace(min_agents=jnp.int32(k)))  # every slot in use: crowded
    return jax.tree.map(lambda *x: jnp.stack(x), *rows)


@slow
@pytest.mark.parametrize("k", C.CAPACITIES)
def test_observations_stay_inside_the_declared_bounds(k):
    """>= 10k observations per capacity from every slot's view, on all ten layouts, every
    slot in use; in half the envs every agent moves at random (pushes are frequent),
    in the other half only the newcomer does (the Gymnasium agent's scenes)."""
    reset, step = compiled_parallel(k)
    control = np.zeros((ROLL_ENVS, k), bool)
    control[:, 0] = True
    control[::2] = True

    def one(key, params, control):
        k_reset, k_run = jax.random.split(key)
        state, _ = reset(k_reset, params)

        def body(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.random.randint(k_act, (k,), 0, C.N_ACTIONS)
            state, obs, _, _ = step(k_step, state, actions, control, params)
            return state, obs

        return jax.lax.scan(body, state, jax.random.split(k_run, ROLL_STEPS))[1]

    keys = jax.random.split(jax.random.PRNGKey(k), ROLL_ENVS)
    obs = np.asarray(jax.jit(jax.vmap(one))(keys, _rollout_params(k), jnp.asarray(control)))
    flat = obs.reshape(-1, obs.shape[-1])
    assert flat.shape[0] >= 10_000
    low, high = bounds.observation_bounds(k)
    outside = np.argwhere((flat < low) | (flat > high))
    assert outside.size == 0, f"entries outside the bounds (row, entry): {outside[:10].tolist()}"
    box = NormGymGymnasiumEnv(env=normjax.make(capacity=k)).observation_space
    assert all(o in box for o in flat[::97])
    last_move = flat[:, 3 * C.H * C.W + np.array(bounds.LAST_MOVE)]
    assert np.abs(last_move).max() == bounds.MAX_LAST_MOVE  # reached: Box(-1, 1) would not hold
    newcomer = obs[1::2, :, 0].reshape(-1, obs.shape[-1])  # the Gymnasium agent's own view
    assert ((newcomer >= low) & (newcomer <= high)).all()


@slow
def test_enable_compilation_cache_stores_programs(tmp_path):
    code = (
        "import jax, jax.numpy as jnp, normjax\n"
        f"print(normjax.enable_compilation_cache({str(tmp_path / 'c')!r}))\n"
        "jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(3)).block_until_ready()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(tmp_path / "c") and any((tmp_path / "c").iterdir())
