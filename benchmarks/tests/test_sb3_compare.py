"""benchmarks/sb3_compare.py: SB3's torch Q-network copied into normjax's DQN-MLP.

Needs the `[sb3]` extra (stable-baselines3, torch); skipped without it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("gymnasium")


def test_copied_weights_give_sb3_q_values_and_greedy_actions():
    import gymnasium
    import torch
    from stable_baselines3 import DQN

    import normjax.wrappers.gymnasium  # noqa: F401 (registers the NormGym ids with gymnasium)
    from benchmarks.sb3_compare import config, sb3_params
    from normjax.train.dqn import make_train

    cfg = config(["forbidden_zone_q"], 2000, 0)
    tr = make_train(cfg)
    env = gymnasium.make("NormGym-cafe-forbidden_zone_q-train-v0")
    model = DQN("MlpPolicy", env, buffer_size=100, policy_kwargs=dict(net_arch=[64, 64]), device="cpu", seed=1)
    params = sb3_params(model, tr, 585)  # raises if the Q-values disagree
    obs = np.random.default_rng(3).uniform(-1, 1, (32, 585)).astype(np.float32)
    with torch.no_grad():
        q = model.q_net(torch.as_tensor(obs)).numpy()
    np.testing.assert_allclose(np.asarray(tr.apply(params, jnp.asarray(obs))), q, rtol=1e-5, atol=1e-5)
    actions, _ = model.predict(obs, deterministic=True)
    assert np.array_equal(np.asarray(jax.vmap(lambda o: jnp.argmax(tr.apply(params, o)))(jnp.asarray(obs))), actions)
    env.close()
