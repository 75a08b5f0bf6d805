"""DQN-MLP's factorised first layer (train/first_layer.py, docs/training.md) against the
dense network it stands for: the observation facts it rests on, forward values,
gradients, one clipped Adam update, many updates side by side, and the config and
resume rules around it."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.agents.networks import action_mask, functional
from normjax.train.config import DQNConfig
from normjax.train.dqn import make_train, td_loss
from normjax.train.first_layer import N_CELLS, Structure, dense_net, factorised_net, resumed_first_layer, training_net

TINY = dict(
    norms=("forbidden_zone_q", "bend_right_1"),
    total_steps=800,
    buffer_size=400,
    learning_starts=100,
    target_update=200,
    validation_at=(400, 800),
    progress_every=200,
)
RTOL = 1e-5


@pytest.fixture(scope="module")
def trained():
    """A factorised tiny run after 100 chunks (400 transitions per run, ~75 updates):
    (trainer, runners, full observations at the start of every chunk [runs * 100, 585],
    replay [runs, 400, ...] in the trainer's form)."""
    tr = make_train(DQNConfig(**TINY))
    assert tr.config.first_layer == "factorised"

    def run(carry):
        return jax.lax.scan(lambda c, _: (tr.chunk(*c, tr.specs), c[0].obs), carry, None, length=100)

    (runners, rb), obs = jax.jit(run)(tr.init_population(jax.random.PRNGKey(0)))
    obs = np.asarray(obs).transpose(1, 0, 2)  # [runs, chunks, 585]
    return tr, runners, obs.reshape(-1, obs.shape[-1]), rb


def _member(tree, i=0):
    return jax.tree.map(lambda x: x[i], tree)


def _close(a, b, rtol=RTOL):
    """Every leaf of `a` within `rtol` of `b`, relative to the leaf's largest magnitude."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape
        scale = max(float(np.abs(y).max()), 1e-30)
        assert float(np.abs(x - y).max()) <= rtol * scale, float(np.abs(x - y).max()) / scale


def test_observations_have_the_structure_the_factorisation_assumes(trained):
    """The layout plane is the same in every training observation, and the agent planes
    are zero off the open cells: the columns the factorised layer does not train row by
    row carry nothing but the constant layout plane."""
    tr, _, obs, rb = trained
    s = Structure.of(tr.config.layout, obs.shape[-1])
    assert obs.shape == (2 * 100, 585) and np.abs(obs).sum() > 0
    np.testing.assert_array_equal(obs[:, :N_CELLS], np.broadcast_to(s.plane, (obs.shape[0], N_CELLS)))
    frozen_cols = np.setdiff1d(np.arange(N_CELLS, obs.shape[-1]), s.live)
    assert len(frozen_cols) > 0 and np.all(obs[:, frozen_cols] == 0)
    assert np.any(obs[:, s.live[s.live < 3 * N_CELLS]] != 0)  # agents do stand on open cells
    assert s.counts.sum() + np.sum(s.codes == 0) == N_CELLS
    # The replay holds those columns only: transition 4k starts from chunk k's observation.
    stored = np.asarray(rb.obs)[:, ::4].reshape(-1, len(s.live))
    np.testing.assert_array_equal(stored, obs[:, s.live])
    np.testing.assert_array_equal(tr.net.columns, s.live)
    np.testing.assert_array_equal(
        np.asarray(action_mask(jnp.asarray(stored))), np.asarray(action_mask(jnp.asarray(obs)))
    )


def test_a_fresh_factorised_network_is_the_dense_initialisation():
    net = factorised_net("cafe", 585, 10.0, 1e-4)
    init_dense, _ = functional("mlp", 585)
    params, frozen = net.init(jax.random.PRNGKey(3))
    for a, b in zip(jax.tree.leaves(net.dense(params, frozen)), jax.tree.leaves(init_dense(jax.random.PRNGKey(3)))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_forward_and_gradients_match_the_dense_network(trained):
    """On real replay observations, with trained parameters (delta rows non-zero): the
    factorised Q-values and TD-loss gradients equal the dense ones to 1e-5 relative; the
    dense gradient is zero on every frozen row and the same on all cells of one code,
    which is what lets one `delta` row per code stand for them."""
    tr, runners, obs, _ = trained
    net = factorised_net("cafe", obs.shape[-1], 10.0, 1e-4)
    _, apply = functional("mlp", obs.shape[-1])
    params, frozen, target = _member(runners.q_params), _member(runners.frozen), _member(runners.target_params)
    assert float(jnp.abs(params["l1"]["delta"]).max()) > 0
    dense, dense_target = net.dense(params, frozen), net.dense(target, frozen)
    x = jnp.asarray(obs)
    _close(net.apply(params, frozen, net.compress(x)), apply(dense, x))

    rng = np.random.default_rng(0)
    batch = {
        "obs": x[rng.choice(len(obs), 64)],
        "next_obs": x[rng.choice(len(obs), 64)],
        "action": jnp.asarray(rng.integers(0, 5, 64)),
        "reward": jnp.asarray(rng.normal(size=64), jnp.float32),
        "terminated": jnp.zeros(64),
    }
    compressed = {**batch, "obs": net.compress(batch["obs"]), "next_obs": net.compress(batch["next_obs"])}
    g_f = jax.grad(lambda p: td_loss(lambda q, o: net.apply(q, frozen, o), p, target, compressed, 0.99)[0])(params)
    g_d = jax.grad(lambda p: td_loss(apply, p, dense_target, batch, 0.99)[0])(dense)
    k_d = np.asarray(g_d["l1"]["kernel"][...])
    s = Structure.of("cafe", obs.shape[-1])
    _close(g_f["l1"]["live"], k_d[s.live])
    for c in range(1, 8):
        rows = k_d[:N_CELLS][s.codes == c]
        _close(np.broadcast_to(g_f["l1"]["delta"][c - 1], rows.shape), rows)
    frozen_rows = np.setdiff1d(np.arange(N_CELLS, obs.shape[-1]), s.live)
    assert np.all(k_d[frozen_rows] == 0) and np.all(k_d[:N_CELLS][s.codes == 0] == 0)
    for name in ("l2", "out"):
        _close(g_f[name]["kernel"], g_d[name]["kernel"][...])
        _close(g_f[name]["bias"], g_d[name]["bias"][...])
    _close(g_f["l1"]["bias"], g_d["l1"]["bias"][...])


def _train_side_by_side(obs, max_grad_norm: float, n_updates: int):
    """`n_updates` clipped Adam steps of both forms on the same batches from `obs` ->
    (factorised as dense, dense, fraction of steps whose gradient was clipped)."""
    fac = factorised_net("cafe", obs.shape[-1], max_grad_norm, 1e-3)
    den = dense_net("mlp", obs.shape[-1], max_grad_norm, 1e-3)
    _, apply = functional("mlp", obs.shape[-1])
    p_f, frozen = fac.init(jax.random.PRNGKey(7))
    p_d, _ = den.init(jax.random.PRNGKey(7))
    target_f, target_d = p_f, p_d
    x = jnp.asarray(obs)

    def step(carry, key):
        p_f, s_f, p_d, s_d = carry
        k1, k2, k3, k4 = jax.random.split(key, 4)
        batch = {
            "obs": x[jax.random.choice(k1, len(obs), (32,))],
            "next_obs": x[jax.random.choice(k2, len(obs), (32,))],
            "action": jax.random.randint(k3, (32,), 0, 5),
            "reward": jax.random.normal(k4, (32,)),
            "terminated": jnp.zeros(32),
        }
        small = {**batch, "obs": fac.compress(batch["obs"]), "next_obs": fac.compress(batch["next_obs"])}
        g_f = jax.grad(lambda p: td_loss(lambda q, o: fac.apply(q, frozen, o), p, target_f, small, 0.99)[0])(p_f)
        g_d = jax.grad(lambda p: td_loss(apply, p, target_d, batch, 0.99)[0])(p_d)
        u_f, s_f = fac.tx.update(g_f, s_f, p_f)
        u_d, s_d = den.tx.update(g_d, s_d, p_d)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(g_d)))
        new = (jax.tree.map(jnp.add, p_f, u_f), s_f, jax.tree.map(jnp.add, p_d, u_d), s_d)
        return new, norm > max_grad_norm

    keys = jax.random.split(jax.random.PRNGKey(1), n_updates)
    (p_f, _, p_d, _), clipped = jax.jit(lambda c: jax.lax.scan(step, c, keys))(
        (p_f, fac.tx.init(p_f), p_d, den.tx.init(p_d))
    )
    return fac.dense(p_f, frozen), p_d, float(np.mean(clipped))


@pytest.mark.parametrize("max_grad_norm", [10.0, 0.05])
def test_clipped_adam_updates_match_the_dense_network(trained, max_grad_norm):
    """One update, then 200 side by side on the same batches: the factorised network's
    weights stay those of the dense network (1e-5 relative after one step, 1e-4 after
    200), with global-norm clipping idle (max norm 10, the paper's) and triggered on
    every step (0.05): the clip sees the dense gradient's norm."""
    obs = trained[2]
    one_f, one_d, clip_one = _train_side_by_side(obs, max_grad_norm, 1)
    _close(one_f, one_d)
    many_f, many_d, clip_many = _train_side_by_side(obs, max_grad_norm, 200)
    _close(many_f, many_d, rtol=1e-4)
    assert (clip_one, clip_many) == ((0.0, 0.0) if max_grad_norm == 10.0 else (1.0, 1.0))
    moved = np.abs(np.asarray(many_d["l1"]["kernel"][...]) - np.asarray(one_d["l1"]["kernel"][...])).max()
    assert moved > 1e-3  # the runs did train


def test_the_trainers_dense_view_and_the_cnn_stay_dense(trained):
    tr, runners, obs, _ = trained
    dense = tr.q_dense(runners)
    q = jax.vmap(tr.apply)(dense, jnp.asarray(obs[:8])[None].repeat(2, 0))
    assert q.shape == (2, 8, 5)
    assert training_net("cnn", "factorised", "cafe", 585, 10.0, 1e-4).init(jax.random.PRNGKey(0))[1] is None


def test_first_layer_is_validated_and_a_dense_era_run_resumes_dense(tmp_path):
    with pytest.raises(ValueError, match=r"first_layer.*'sparse'.*factorised, dense"):
        DQNConfig(**TINY, first_layer="sparse")
    cfg = DQNConfig(**TINY)
    saved = {k: v for k, v in json.loads(json.dumps(cfg.to_dict())).items() if k != "first_layer"}
    (tmp_path / "config.json").write_text(json.dumps(saved))
    logged = []
    assert resumed_first_layer(cfg, tmp_path, True, logged.append) == cfg  # no checkpoints yet: a new run
    (tmp_path / "checkpoints").mkdir()
    resumed = resumed_first_layer(cfg, tmp_path, True, logged.append)
    assert resumed.first_layer == "dense" and logged == ["resuming with first_layer=dense, the run's own"]
    assert resumed_first_layer(cfg, tmp_path, False, logged.append) == cfg


def test_a_dense_era_run_directory_reads_as_dense(tmp_path):
    """`normjax final-test` rebuilds a run from its config.json: one written before
    `first_layer` existed was trained dense, and its results must say so."""
    from normjax.train.params import run_config

    cfg = DQNConfig(**TINY)
    saved = {k: v for k, v in json.loads(json.dumps(cfg.to_dict())).items() if k != "first_layer"}
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert run_config(tmp_path).first_layer == "dense"
    (tmp_path / "config.json").write_text(json.dumps(dict(saved, first_layer="factorised")))
    assert run_config(tmp_path).first_layer == "factorised"
