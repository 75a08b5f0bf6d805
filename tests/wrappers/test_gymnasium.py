"""Gymnasium adapters: registration, check_env, and the vector env == the jitted env.

Compiled programs are shared through the module: the single env's reset/step
(`compiled_env(10)`), the vector env's programs for a batched-params batch of 3
(also used by the `make_vec` test), and the reference `jax.jit(NormGymEnv.step)`.
"""

import functools
import importlib
import subprocess
import sys
import warnings

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import normjax
from normjax.env import NormGymEnv, phase_params
from normjax.layouts.tables import layout_id
from normjax.norms import norm_id
from normjax.wrappers import reset_key
from normjax.wrappers.gymnasium import NormGymGymnasiumEnv, NormGymVectorEnv

ID = "NormGym-cafe-clockwise_circulation-test-v0"
REF_ENV = NormGymEnv(capacity=10)
REF_RESET = jax.jit(REF_ENV.reset)
REF_STEP = jax.jit(REF_ENV.step)
N = 3


def _batched_params():
    """Mixed layouts, norms and phases with short horizons, so episodes end in a test."""
    rows = [
        ("cafe", "clockwise_circulation", "test", 5),
        ("bank", None, "train", 3),
        ("library", "zone_r_capacity_1", "interaction", 4),
    ]
    ps = [phase_params(ph, layout_id(lay), norm_id(nm), max_steps=h) for lay, nm, ph, h in rows]
    return jax.tree.map(lambda *x: np.stack(x), *ps)


BATCHED = _batched_params()


def _row(params, i):
    return jax.tree.map(lambda x: x[i], params)


def test_every_id_is_registered_without_building_anything():
    registry = gymnasium.envs.registration.registry
    assert all(name in registry for name in normjax.registered_envs)
    spec = gymnasium.spec(ID)
    assert spec.entry_point == "normjax.wrappers.gymnasium:NormGymGymnasiumEnv"
    assert spec.vector_entry_point == "normjax.wrappers.gymnasium:NormGymVectorEnv"
    assert spec.kwargs == {"env_id": ID} and spec.max_episode_steps == 100  # the test horizon
    env = gymnasium.make("NormGym-bank-none-train-v0", capacity=6)
    assert env.unwrapped.env == normjax.make("NormGym-bank-none-train-v0", capacity=6)
    assert env.observation_space.shape == (553,) and env.action_space.n == 5
    assert env.unwrapped._state is None  # nothing is reset (or compiled) before reset()


def test_importing_the_adapter_compiles_nothing():
    """Registration stores strings: importing the module traces and compiles nothing.

    normjax's own modules are imported first (their module-level jax constants are
    staged once, like any JAX library's); the adapter and its 1530 ids add nothing."""
    code = (
        "import jax, normjax, normjax.env, normjax.registration\n"
        "events = []\n"
        "jax.monitoring.register_event_duration_secs_listener(lambda name, *a, **k: events.append(name))\n"
        "import gymnasium, normjax.wrappers.gymnasium\n"
        "assert 'NormGym-post_office-seats_in_order_r2l-test-v0' in gymnasium.registry\n"
        "print(sorted(e for e in events if '/compile/' in e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_check_env_passes_and_renders():
    env = gymnasium.make(ID, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    # gymnasium.logger.warn prefixes its warnings (the checker's soft failures) "WARN:".
    assert not [str(w.message) for w in caught if "WARN:" in str(w.message)]
    obs, info = env.reset(seed=3)  # through gymnasium's PassiveEnvChecker / OrderEnforcing
    assert obs.dtype == np.float32 and obs.shape == (585,)
    np.testing.assert_array_equal(info["action_mask"], obs[-5:] > 0.5)
    frame = env.render()
    assert frame.shape == (11 * 32, 15 * 32, 3) and frame.dtype == np.uint8


def test_observations_stay_in_the_box_over_an_episode():
    env = NormGymGymnasiumEnv(ID)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    seen, done = [obs], False
    while not done:
        obs, reward, term, trunc, info = env.step(env.action_space.sample())
        seen.append(obs)
        done = term or trunc
        assert isinstance(reward, float) and isinstance(info["sanctioned"], bool)
    assert all(o in env.observation_space for o in seen)
    seen = np.stack(seen)
    assert seen.min() >= -1.0 and seen.max() <= 1.0
    assert info["t"] == len(seen) - 1
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step(0)
    env.reset()
    with pytest.raises(ValueError, match="0..4"):
        env.step(5)
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"horizon": 3})


def test_single_env_follows_the_documented_key_chain():
    env = NormGymGymnasiumEnv(env=normjax.make(ID))
    obs, _ = env.reset(seed=42)
    chain, k = jax.random.split(jax.random.PRNGKey(42))
    ref_obs, ref_state = REF_RESET(k, env.params)
    np.testing.assert_array_equal(obs, ref_obs)
    for action in (0, 3, 3, 4, 1):
        obs, reward, term, trunc, _ = env.step(action)
        chain, k = jax.random.split(chain)
        ref_obs, ref_state, ref_r, ref_term, ref_trunc, _ = REF_STEP(k, ref_state, np.int32(action), env.params)
        np.testing.assert_array_equal(obs, ref_obs)
        assert (reward, term, trunc) == (float(ref_r), bool(ref_term), bool(ref_trunc))


def _reference_rollout(seed, actions, params):
    """The documented key scheme, replayed with the bare jitted NormGymEnv."""
    chains = list(jax.random.split(jax.random.PRNGKey(seed), N))
    states, first = [], []
    for i in range(N):
        chains[i], k = jax.random.split(chains[i])
        o, s = REF_RESET(k, _row(params, i))
        states.append(s)
        first.append(np.asarray(o))
    steps = []
    for a in actions:
        out = []
        for i in range(N):
            chains[i], k = jax.random.split(chains[i])
            o, states[i], r, te, tr, _ = REF_STEP(k, states[i], np.int32(a[i]), _row(params, i))
            final = np.asarray(o)
            if bool(te | tr):  # the vector env starts the next episode inside this step
                o, states[i] = REF_RESET(reset_key(k), _row(params, i))
            out.append((np.asarray(o), final, float(r), bool(te), bool(tr)))
        steps.append(out)
    return np.stack(first), steps


@pytest.mark.slow  # an equivalence run of whole programs; the slow tier (CI runs both)
def test_vector_env_equals_the_jitted_env():
    venv = NormGymVectorEnv(ID, num_envs=N, params=BATCHED, autoreset_mode="same-step")
    assert venv.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert venv.observation_space.shape == (N, 585) and venv.single_action_space.n == 5
    actions = np.random.default_rng(0).integers(0, 5, size=(9, N))
    obs, info = venv.reset(seed=11)
    ref_first, ref_steps = _reference_rollout(11, actions, BATCHED)
    np.testing.assert_array_equal(obs, ref_first)
    ended = np.zeros(N, bool)
    ret, length = np.zeros(N), np.zeros(N, int)
    for a, ref in zip(actions, ref_steps):
        obs, rew, term, trunc, info = venv.step(a)
        for i, (r_obs, r_final, r_rew, r_term, r_trunc) in enumerate(ref):
            np.testing.assert_array_equal(obs[i], r_obs)
            assert (float(rew[i]), bool(term[i]), bool(trunc[i])) == (r_rew, r_term, r_trunc)
            ret[i] += r_rew
            length[i] += 1
            done = r_term or r_trunc
            assert ("final_obs" in info and bool(info["_final_obs"][i] and info["_final_info"][i])) == done
            if done:  # gymnasium's layout: the ended episode's last observation and info
                np.testing.assert_array_equal(info["final_obs"][i], r_final)
                stats = info["final_info"]["normjax_episode"]
                assert stats["r"][i] == pytest.approx(ret[i], abs=1e-4) and stats["l"][i] == length[i]
                ret[i], length[i], ended[i] = 0.0, 0, True
        assert "normjax_episode" not in info  # SAME_STEP: only under final_info
        assert obs in venv.observation_space
    assert ended.all()
    frames = NormGymVectorEnv(ID, num_envs=N, params=BATCHED, render_mode="rgb_array")
    frames.reset(seed=0)
    assert len(frames.render()) == N


def test_next_step_mode_restarts_on_the_following_call():
    """NEXT_STEP (the default): the ending step returns the episode's last observation;
    the next call restarts that env with NormGymEnv.reset(k) of its own chain key and
    ignores its action (reward 0, flags False).  Same compiled program as SAME_STEP."""
    venv = NormGymVectorEnv(ID, num_envs=N, params=BATCHED)
    assert venv.autoreset_mode == gymnasium.vector.AutoresetMode.NEXT_STEP
    obs, _ = venv.reset(seed=11)
    chains = list(jax.random.split(jax.random.PRNGKey(11), N))
    states = []
    for i in range(N):
        chains[i], k = jax.random.split(chains[i])
        states.append(REF_RESET(k, _row(BATCHED, i))[1])
    pending = np.zeros(N, bool)
    for _ in range(7):  # horizons 5, 3, 4: each env ends and restarts
        obs, rew, term, trunc, info = venv.step(np.full(N, 4))
        for i in range(N):
            chains[i], k = jax.random.split(chains[i])
            if pending[i]:
                r_obs, states[i] = REF_RESET(k, _row(BATCHED, i))
                assert (rew[i], term[i], trunc[i], info["_exited"][i]) == (0.0, False, False, False)
            else:
                r_obs, states[i], r, te, tr, _ = REF_STEP(k, states[i], np.int32(4), _row(BATCHED, i))
                assert (float(rew[i]), bool(term[i]), bool(trunc[i])) == (float(r), bool(te), bool(tr))
            np.testing.assert_array_equal(obs[i], r_obs)
        assert "final_obs" not in info and "episode" not in info
        pending = term | trunc
    assert info["action_mask"].dtype == np.int8


class _SameStepKeys(NormGymGymnasiumEnv):
    """The single env whose reset after an ended episode takes the vector env's SAME_STEP
    key (`reset_key` of the ending step's key, the chain not split again), so that
    SyncVectorEnv over it runs the same episodes as NormGymVectorEnv in SAME_STEP."""

    _pending = _last = None

    def _next_key(self):
        if self._pending is not None:
            key, self._pending = reset_key(self._pending), None
            return key
        self._last = super()._next_key()
        return self._last

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._pending = None
        return super().reset(seed=seed, options=options)

    def step(self, action):
        out = super().step(action)
        if out[2] or out[3]:
            self._pending = self._last
        return out


def _assert_same_info(ours, theirs, where):
    assert set(ours) == set(theirs), f"{where}: keys differ: {sorted(set(ours) ^ set(theirs))}"
    for key, a in ours.items():
        b = theirs[key]
        if isinstance(b, dict):
            _assert_same_info(a, b, f"{where} {key}")
            continue
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{where} {key}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        if a.dtype == object:  # final_obs: one observation per ended env, None elsewhere
            assert [x is None for x in a] == [y is None for y in b], f"{where} {key}"
            for x, y in zip(a, b):
                if y is not None:
                    np.testing.assert_array_equal(x, y, err_msg=f"{where} {key}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{where} {key}")


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_vector_info_equals_sync_vector_env_over_the_single_env(mode):
    """Same id, seeds and actions: our one-program vector env and gymnasium's SyncVectorEnv
    over NormGymGymnasiumEnv give identical observations, rewards, flags and infos (keys,
    masks, values, dtypes), through 2-4 episode ends per env (horizons 5, 3, 4), including
    steps where two envs end at once and steps where none does."""
    mode = gymnasium.vector.AutoresetMode(dict(same_step="SameStep", next_step="NextStep")[mode])
    single = _SameStepKeys if mode == gymnasium.vector.AutoresetMode.SAME_STEP else NormGymGymnasiumEnv
    ours = NormGymVectorEnv(ID, num_envs=N, params=BATCHED, autoreset_mode=mode)
    theirs = gymnasium.vector.SyncVectorEnv(
        [functools.partial(single, ID, params=_row(BATCHED, i)) for i in range(N)], autoreset_mode=mode
    )
    (obs, info), (ref_obs, ref_info) = ours.reset(seed=[5, 6, 7]), theirs.reset(seed=[5, 6, 7])
    np.testing.assert_array_equal(obs, ref_obs)
    _assert_same_info(info, ref_info, "reset")
    ends, finals = np.zeros(N, int), 0
    for t, actions in enumerate(np.random.default_rng(1).integers(0, 5, size=(12, N))):
        obs, rew, term, trunc, info = ours.step(actions)
        ref_obs, ref_rew, ref_term, ref_trunc, ref_info = theirs.step(actions)
        np.testing.assert_array_equal(obs, ref_obs)
        assert (rew.tolist(), term.tolist(), trunc.tolist()) == (
            ref_rew.tolist(),
            ref_term.tolist(),
            ref_trunc.tolist(),
        )
        _assert_same_info(info, ref_info, f"step {t}")
        ends += term | trunc
        finals += "final_info" in info
    assert (ends >= 2).all()
    if mode == gymnasium.vector.AutoresetMode.SAME_STEP:
        assert 0 < finals < 12 and "normjax_episode" in info["final_info"]


def test_make_vec_and_seed_lists():
    venv = gymnasium.make_vec(ID, num_envs=N, params=BATCHED)
    assert isinstance(venv, NormGymVectorEnv)
    a, _ = venv.reset(seed=[5, 6, 7])
    b, _ = NormGymVectorEnv(ID, num_envs=N, params=BATCHED).reset(seed=[5, 6, 7])
    np.testing.assert_array_equal(a, b)
    chain = jax.random.split(jax.random.PRNGKey(6))[1]
    np.testing.assert_array_equal(a[1], REF_RESET(chain, _row(BATCHED, 1))[0])
    with pytest.raises(ValueError, match="3 rows"):
        NormGymVectorEnv(ID, num_envs=4, params=BATCHED)
    with pytest.raises(TypeError, match="actions must be 3 values"):
        venv.step(np.zeros(2, int))
    with pytest.raises(ValueError, match="got 5 at index 2"):
        venv.step(np.array([0, 1, 5]))


def test_missing_gymnasium_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    monkeypatch.delitem(sys.modules, "normjax.wrappers.gymnasium")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[gym\]"'):
        importlib.import_module("normjax.wrappers.gymnasium")


def test_human_render_mode_draws_nothing_and_says_so_without_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = NormGymGymnasiumEnv(ID, render_mode="human", cell_px=8)
    assert env.metadata["render_modes"] == ["human", "rgb_array"]
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="needs a display"):
        assert env.render() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, not per frame
        assert env.render() is None
    env.close()
    frame = NormGymGymnasiumEnv(ID, render_mode="rgb_array", cell_px=8)
    frame.reset(seed=0)
    assert frame.render().shape == (11 * 8, 15 * 8, 3)
