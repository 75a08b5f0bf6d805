"""The vector env's spec says the horizon it runs (gymnasium's make_vec with max_episode_steps)."""

import gymnasium
import pytest

import normjax.wrappers.gymnasium  # noqa: F401 (registers the NormGym ids with gymnasium)

ID = "NormGym-cafe-forbidden_zone_q-train-v0"


@pytest.mark.parametrize("n", [7, 200])
def test_make_vec_spec_reports_the_overridden_horizon(n):
    envs = gymnasium.make_vec(ID, num_envs=2, max_episode_steps=n)
    try:
        assert envs.spec.max_episode_steps == n
        assert int(envs.unwrapped.params.max_steps) == n
        assert envs.spec.id == ID
    finally:
        envs.close()


def test_make_vec_without_override_keeps_the_registered_horizon():
    envs = gymnasium.make_vec(ID, num_envs=2)
    try:
        assert envs.spec.max_episode_steps == gymnasium.spec(ID).max_episode_steps == 200
    finally:
        envs.close()
