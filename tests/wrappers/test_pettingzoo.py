"""PettingZoo adapter: the API test, caller-controlled slots, departures, truncation.

All environments here have capacity 10, so one jitted reset and one jitted joint
step (`compiled_parallel(10)`) serve every test of the file.
"""

import importlib
import sys

import jax
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from normjax import constants as C
from normjax.env import phase_params
from normjax.layouts.tables import layout_id
from normjax.norms import norm_id
from normjax.wrappers.pettingzoo import NormGymParallelEnv, parallel_env

EXIT_MOVE = {0: C.LEFT, 1: C.DOWN, 2: C.RIGHT}  # from a door's inward cell onto the door


def test_parallel_api_test_passes():
    env = parallel_env(layout="cafe", norm="clockwise_circulation", phase="train", controlled=(0, 3, 9), capacity=10)
    assert isinstance(env, NormGymParallelEnv)
    assert env.possible_agents == ["agent_0", "agent_3", "agent_9"]
    parallel_api_test(env, num_cycles=60)  # the API checks run on every cycle
    obs, infos = env.reset(seed=0)
    assert set(obs) == set(infos) == set(env.agents) == set(env.possible_agents)
    assert all(o.shape == (585,) and o in env.observation_space(a) for a, o in obs.items())
    assert env.action_space("agent_3").n == 5
    assert infos["agent_0"]["action_mask"].dtype == np.int8 and infos["agent_0"]["action_mask"][4] == 1
    state = env.state()  # the global observation: every slot's own observation
    assert state.shape == (10 * 585,) and state in env.state_space
    np.testing.assert_array_equal(state.reshape(10, 585)[9], obs["agent_9"])


def test_controlled_slots_are_always_in_use():
    env = parallel_env("NormGym-cafe-none-train-v0", controlled=(8,))
    assert int(env.params.min_agents) == 9  # raised from the phase's 6
    for seed in range(6):
        env.reset(seed=seed)
        assert _agents(env).in_use[8]


def _agents(env):
    """The world's per-slot agent arrays, as numpy."""
    return jax.device_get(env.world_state.agents)


def _entry_exit(env, slot):
    return EXIT_MOVE[int(_agents(env).entry_door[slot])]


def test_caller_actions_replace_the_community():
    """A controlled newcomer ordered back through its entry door leaves at once,
    which the scripted planner (heading for goal 1) never does; held at WAIT, a
    controlled agent's effective action is WAIT on every step while the scripted
    agents move."""
    env = parallel_env(layout="cafe", norm=None, phase="test", controlled=(0, 4))
    env.reset(seed=1)
    scripted_moved = False
    for _ in range(8):
        obs, rew, term, trunc, info = env.step({a: C.WAIT for a in env.agents})
        ag = _agents(env)
        for slot in (0, 4):
            if bool(ag.active[slot]):
                assert int(ag.last_action[slot]) == C.WAIT
        scripted_moved |= bool((ag.active & (ag.last_action != C.WAIT))[[1, 2, 3, 5]].any())
    assert scripted_moved and env.agents == ["agent_0", "agent_4"]
    obs, rew, term, trunc, info = env.step({"agent_0": _entry_exit(env, 0), "agent_4": C.WAIT})
    assert term == {"agent_0": True, "agent_4": False}
    assert info["agent_0"]["active"] is False and rew["agent_0"] == pytest.approx(-0.1)
    # A test episode ends when the newcomer exits: the other agent is truncated.
    assert trunc == {"agent_0": False, "agent_4": True} and env.agents == []


def test_a_departed_background_slot_returns_to_the_community():
    env = parallel_env(layout="cafe", norm=None, phase="train", controlled=(1,))
    env.reset(seed=2)
    for _ in range(10):  # slot 1 enters within its first two steps (docs/world.md §2.3)
        if _agents(env).active[1]:
            break
        env.step({"agent_1": C.WAIT})
    assert bool(_agents(env).active[1])
    obs, rew, term, trunc, info = env.step({"agent_1": _entry_exit(env, 1)})
    assert term == {"agent_1": True} and env.agents == [] and info["agent_1"]["active"] is False
    with pytest.raises(RuntimeError, match="every agent has left"):
        env.step({"agent_1": C.WAIT})
    # The slot is refilled by turnover and its new occupant follows the planner.
    env2 = parallel_env(layout="cafe", norm=None, phase="train", controlled=(1, 2))
    env2.reset(seed=2)
    for _ in range(10):
        if _agents(env2).active[1]:
            break
        env2.step({a: C.WAIT for a in env2.agents})
    uid = int(_agents(env2).uid[1])
    env2.step({"agent_1": _entry_exit(env2, 1), "agent_2": C.WAIT})
    moved = False
    for _ in range(40):
        env2.step({"agent_2": C.WAIT})
        ag = _agents(env2)
        moved |= bool(ag.active[1] & (ag.last_action[1] != C.WAIT) & (ag.uid[1] != uid))
        if moved:
            break
    assert moved


def test_truncation_at_the_horizon():
    params = phase_params("train", layout_id("bank"), norm_id("move1_wait1"), max_steps=9)
    env = parallel_env(
        layout="bank", norm="move1_wait1", controlled=(0, 2), params=params, render_mode="rgb_array", max_cycles=5
    )  # max_cycles overrides the params' horizon
    assert env.max_cycles == 5
    env.reset(seed=4)
    for t in range(5):
        live = list(env.agents)
        obs, rew, term, trunc, info = env.step({a: C.WAIT for a in live})
        assert set(obs) == set(rew) == set(term) == set(trunc) == set(info) == set(live)
        assert all(trunc[a] == (t == 4 and not term[a]) for a in live)
        assert all(isinstance(info[a]["sanctioned"], bool) for a in live)
    assert env.agents == []
    frame = env.render()
    assert frame.shape == (11 * 32, 15 * 32, 3)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="distinct slots in 0..5"):
        parallel_env(capacity=6, controlled=(0, 6))
    with pytest.raises(ValueError, match="distinct"):
        parallel_env(controlled=(1, 1))
    with pytest.raises(ValueError, match="closest valid ids"):
        parallel_env("NormGym-cafe-nome-train-v0")
    env = parallel_env(controlled=(0, 1))
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"agent_0": 0})
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"missing \['agent_1'\], not live \['agent_7'\]"):
        env.step({"agent_0": 0, "agent_7": 0})
    with pytest.raises(ValueError, match="action of agent_1"):
        env.step({"agent_0": 0, "agent_1": 9})


def test_missing_pettingzoo_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    monkeypatch.delitem(sys.modules, "normjax.wrappers.pettingzoo")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[pettingzoo\]"'):
        importlib.import_module("normjax.wrappers.pettingzoo")


def test_pettingzoo_render_test_passes_without_a_display(monkeypatch):
    """PettingZoo's own render_test, unchanged: it builds the env with render_mode="human"
    first, then checks every mode in the metadata (human returns None, rgb_array a frame).
    Without a display the human mode says so once and draws nothing."""
    from pettingzoo.test import render_test

    from normjax.wrappers.pettingzoo import env as aec_env

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)

    def make(render_mode=None):
        return aec_env(
            layout="cafe",
            norm="clockwise_circulation",
            phase="train",
            controlled=(0, 3, 9),
            capacity=10,
            render_mode=render_mode,
            cell_px=8,
        )

    assert make().metadata["render_modes"] == ["human", "rgb_array"]
    with pytest.warns(UserWarning, match="needs a display") as caught:
        render_test(make)
    assert len([w for w in caught if "needs a display" in str(w.message)]) == 1  # once per env, not per frame
    with pytest.raises(ValueError, match="render_mode must be None or one of 'human', 'rgb_array', got 'ansi'"):
        make("ansi")
