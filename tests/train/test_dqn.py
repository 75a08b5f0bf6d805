"""DQN mechanics (docs/world.md §10): TD target, target copies, epsilon, learning starts,
replay wrap-around, truncation bootstrapping, config validation."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from normjax.agents.networks import action_mask, epsilon_greedy, functional, masked_argmax
from normjax.train import replay as rp
from normjax.train.config import DQNConfig, load_config, make_config
from normjax.train.dqn import epsilon_at, make_population, make_train, td_loss
from normjax.train.report import format_results

TINY = dict(
    norms=("forbidden_zone_q", "bend_right_1"),
    total_steps=800,
    buffer_size=400,
    learning_starts=100,
    target_update=200,
    validation_at=(400, 800),
    progress_every=200,
)


def test_td_target_uses_masked_max_and_bootstraps_on_truncation():
    # A "network" that returns fixed Q-values: obs[..., :5] (mask in the last 5).
    apply = lambda params, obs: obs[..., :5] * params
    obs = jnp.zeros((2, 20)).at[:, :5].set(jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])).at[:, -5:].set(1.0)
    next_obs = jnp.zeros((2, 20)).at[:, :5].set(jnp.array([10.0, 0.0, 0.0, 0.0, 99.0]))
    next_obs = next_obs.at[:, -5:].set(jnp.array([1.0, 1.0, 1.0, 1.0, 0.0]))  # action 4 impossible
    batch = {
        "obs": obs,
        "action": jnp.array([1, 3]),
        "reward": jnp.array([1.0, -1.0]),
        "next_obs": next_obs,
        "terminated": jnp.array([0.0, 1.0]),
    }
    loss, _ = td_loss(apply, 1.0, 1.0, batch, gamma=0.5)
    # run 0: target 1 + 0.5 * 10 (masked max ignores 99) = 6; q = 2 -> huber(4) = 3.5
    # run 1: terminated: target -1; q = 4 -> huber(5) = 4.5
    assert float(loss) == pytest.approx((3.5 + 4.5) / 2)
    assert float(optax.huber_loss(2.0, 6.0)) == pytest.approx(3.5)


def test_epsilon_schedule():
    cfg = DQNConfig(**TINY)
    t = cfg.total_steps
    assert float(epsilon_at(cfg, 0)) == pytest.approx(1.0)
    assert float(epsilon_at(cfg, int(0.15 * t))) == pytest.approx(0.525, abs=1e-3)
    assert float(epsilon_at(cfg, int(0.3 * t))) == pytest.approx(0.05)
    assert float(epsilon_at(cfg, t)) == pytest.approx(0.05)


def test_greedy_is_masked_and_exploration_covers_all_actions():
    q = jnp.array([5.0, 1.0, 0.0, 0.0, 0.0])
    mask = jnp.array([False, True, True, True, True])
    assert int(masked_argmax(q, mask)) == 1
    acts = jax.vmap(lambda k: epsilon_greedy(k, q, mask, 1.0))(jax.random.split(jax.random.PRNGKey(0), 500))
    assert set(np.asarray(acts).tolist()) == {0, 1, 2, 3, 4}
    obs = jnp.zeros(585).at[-5:].set(jnp.array([1, 0, 1, 0, 1.0]))
    assert np.asarray(action_mask(obs)).tolist() == [True, False, True, False, True]


def test_replay_wraps_around():
    rb = rp.init(runs=2, capacity=8, obs_size=3)
    for i in range(3):  # 3 blocks of 4 = 12 > 8
        block = jnp.full((2, 4), i, jnp.int32)
        rb = rp.add_block(
            rb,
            obs=jnp.zeros((2, 4, 3)),
            action=block,
            reward=block.astype(jnp.float32),
            next_obs=jnp.zeros((2, 4, 3)),
            terminated=jnp.zeros((2, 4)),
        )
    assert int(rb.size) == 8 and int(rb.index) == 4
    # the oldest block (0) was overwritten by block 2
    assert np.asarray(rb.action[0]).tolist() == [2, 2, 2, 2, 1, 1, 1, 1]
    batch = rp.sample(rb, jax.random.split(jax.random.PRNGKey(0), 2), 64)
    assert set(np.asarray(batch["action"]).ravel().tolist()) <= {1, 2}


def test_half_precision_replay_halves_memory_and_samples_float32():
    obs = jax.random.uniform(jax.random.PRNGKey(3), (2, 4, 585), minval=-1.0, maxval=1.0)
    full = rp.add_block(
        rp.init(2, 8, 585), obs, jnp.zeros((2, 4), jnp.int32), jnp.zeros((2, 4)), obs, jnp.zeros((2, 4))
    )
    half = rp.add_block(
        rp.init(2, 8, 585, jnp.float16), obs, jnp.zeros((2, 4), jnp.int32), jnp.zeros((2, 4)), obs, jnp.zeros((2, 4))
    )
    assert half.obs.nbytes * 2 == full.obs.nbytes
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    a, b = rp.sample(full, keys, 16), rp.sample(half, keys, 16)
    assert b["obs"].dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(b["obs"]), np.asarray(a["obs"]), atol=1e-3)  # float16 spacing near 1
    with pytest.raises(ValueError, match="replay_dtype='int8'.*float16"):
        make_config({"replay_dtype": "int8"})
    # The population's replay is stored in float16 (shapes only: eval_shape runs nothing).
    tr = make_train(DQNConfig(**TINY, replay_dtype="float16"))
    assert jax.eval_shape(tr.init_population, jax.random.PRNGKey(0))[1].obs.dtype == jnp.float16


@pytest.fixture(scope="module")
def tiny():
    cfg = DQNConfig(**TINY)
    tr = make_train(cfg)
    # One compiled block of 5 chunks (20 transitions per run), reused everywhere.
    block = jax.jit(lambda c, s: tr.run_chunks(c, s, 5))

    def run(carry, specs, n_chunks):
        assert n_chunks % 5 == 0
        for _ in range(n_chunks // 5):
            carry = block(carry, specs)
        return carry

    return cfg, tr, run


def test_learning_starts_and_target_copies_on_schedule(tiny):
    cfg, tr, run = tiny
    carry = tr.init_population(jax.random.PRNGKey(0))
    q0 = carry[0].q_params
    carry = run(carry, tr.specs, 20)  # 80 transitions < learning_starts = 100
    same = jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), q0, carry[0].q_params)
    assert all(jax.tree.leaves(same)), "parameters changed before learning starts"
    carry = run(carry, tr.specs, 30)  # 200 transitions: updates ran, and a copy at 200
    r = carry[0]
    assert int(r.step[0]) == 200
    assert not all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), q0, r.q_params)))
    assert all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), r.q_params, r.target_params)))
    carry = run(carry, tr.specs, 5)  # 220: more updates, no copy
    r = carry[0]
    assert not all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), r.q_params, r.target_params)))


def test_population_conds_equal_per_run_selects(tiny):
    """The chunk's population-level conds (learning starts, target copy, episode
    reset) give the same runs as deciding per run with selects."""
    cfg, tr, run = tiny

    def per_run_chunk(runners, rb, specs):
        runners, items = jax.vmap(tr.collect)(runners, specs)
        rb = rp.add_block(rb, **items)
        keys = jax.vmap(lambda k: jax.random.split(k))(runners.key)
        batch = rp.sample(rb, keys[:, 1], cfg.batch_size)
        learn = runners.step >= cfg.learning_starts  # batched predicates: selects under vmap
        copy = (runners.step % cfg.target_update) == 0
        runners = jax.vmap(tr.update)(runners.replace(key=keys[:, 0]), batch, learn, copy)
        return jax.vmap(tr.maybe_reset)(runners, specs), rb

    def scan(chunk):
        return jax.jit(lambda c: jax.lax.scan(lambda c, _: (chunk(*c, tr.specs), None), c, None, length=60)[0])

    # 240 transitions per run: learning starts (100), a target copy (200), an episode reset (200).
    # The module's compiled block of 5 chunks (a scan over tr.chunk) runs ours: one compile fewer.
    ours = run(tr.init_population(jax.random.PRNGKey(4)), tr.specs, 60)
    ref = scan(per_run_chunk)(tr.init_population(jax.random.PRNGKey(4)))
    assert int(ours[0].episode[0]) == 1 and int(ours[0].metrics.updates[0]) == 36
    for name in ("q_params", "target_params", "opt_state", "env_state", "obs", "key", "step", "episode"):
        same = jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), getattr(ours[0], name), getattr(ref[0], name))
        assert all(jax.tree.leaves(same)), name
    assert all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), ours[1], ref[1])))
    # the summed loss may differ in the last bit (the branch fuses its reduction differently)
    np.testing.assert_allclose(ours[0].metrics.loss, ref[0].metrics.loss, rtol=1e-6)


def test_replay_memory_check_names_the_numbers_before_compiling(tmp_path, capsys):
    from normjax.cli import main
    from normjax.train.run import check_replay_fits

    cfg = DQNConfig(**TINY, first_layer="dense")
    # 2 runs x 400 x (2 x 585 float32 + 12 bytes) = 3,753,600 bytes
    assert rp.nbytes(2, 400, 585) == 3_753_600
    check_replay_fits(cfg, 2, available=3_753_600)
    check_replay_fits(cfg, 2, available=None)  # unknown: no check
    with pytest.raises(MemoryError, match=r"2 runs x buffer_size=400 x 585 .* needs 0.0 GB, but 0.0 GB is available"):
        check_replay_fits(cfg, 2, available=3_753_599)
    # The factorised first layer's replay keeps 318 of the cafe's 585 numbers (train.first_layer).
    assert rp.nbytes(2, 400, 318) == 2_044_800
    check_replay_fits(DQNConfig(**TINY), 2, available=2_044_800)
    with pytest.raises(MemoryError, match=r"2 runs x buffer_size=400 x 318 "):
        check_replay_fits(DQNConfig(**TINY), 2, available=2_044_799)
    # From the command line: a clear error, exit status 2, nothing trained.
    code = main(
        [
            "train",
            "--config",
            str(Path(__file__).resolve().parents[2] / "configs" / "test_tiny.json"),
            "--out",
            str(tmp_path / "big"),
            "--no-progress",
            "buffer_size=40000000",
            "total_steps=40000000",
            "validation_at=40000000",
        ]
    )
    assert code == 2 and "needs" in capsys.readouterr().err
    assert not (tmp_path / "big" / "config.json").exists()


def test_truncation_keeps_bootstrapping_and_stores_final_obs(tiny):
    cfg, tr, run = tiny
    carry = tr.init_population(jax.random.PRNGKey(1))
    carry = run(carry, tr.specs, 60)  # 240 transitions: crosses the 200-step time limit
    runners, rb = carry
    assert int(runners.episode[0]) == 1  # a new episode started
    assert float(rb.terminated.sum()) == 0.0  # time-limit cuts never stop bootstrapping
    # transition 199 (the last of episode 0) stores the final observation: 0% budget left
    budget = int(np.flatnonzero(tr.net.columns == 495 + 12)[0])  # the replay keeps the trainer's columns
    assert np.allclose(np.asarray(rb.next_obs[:, 199, budget]), 0.0)
    # and transition 200 starts from the reset observation: full budget left
    assert np.allclose(np.asarray(rb.obs[:, 200, budget]), 1.0)


def test_every_run_has_its_own_key_and_seed_block(tiny):
    cfg, tr, run = tiny
    runners, _ = tr.init_population(jax.random.PRNGKey(0))
    keys = np.asarray(runners.key)
    assert len({tuple(k) for k in keys}) == keys.shape[0]
    assert [r["seed_base"] for r in tr.rows] == [10**6 + 10**5 * 0, 10**6 + 10**5 * 23]


def test_config_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="unknown config key.*lr.*valid keys"):
        make_config({"lr": 1e-3})
    with pytest.raises(ValueError, match="arch='transformer'.*mlp, cnn"):
        make_config({"arch": "transformer"})
    with pytest.raises(ValueError, match="unknown norm 'queue_jumping'"):
        make_config({"norms": ["queue_jumping"]})
    with pytest.raises(ValueError, match="reward_conditions='sparse'"):
        make_config({"reward_conditions": ["sparse"]})
    with pytest.raises(ValueError, match="no_such_config.*does not exist.*cpu_default"):
        load_config("configs/no_such_config")
    cfg = load_config("configs/cpu_default", ["total_steps=40000", "arch=cnn"])
    assert cfg.total_steps == 40000 and cfg.arch == "cnn"
    with pytest.raises(ValueError, match="arch='mlp,mlp'.*distinct"):
        make_config({"arch": "mlp,mlp"})
    with pytest.raises(ValueError, match="arch='mlp,rnn'"):
        make_config({"arch": ["mlp", "rnn"]})
    assert make_config({"arch": ["mlp", "cnn"]}).archs == ("mlp", "cnn")
    assert DQNConfig(arch=("cnn", "mlp")).arch == "cnn,mlp"
    assert load_config("configs/cpu_default", ["arch=cnn,mlp"]).archs == ("cnn", "mlp")
    with pytest.raises(ValueError, match="make_population"):
        make_train(make_config({"arch": "mlp,cnn"}))


@pytest.mark.training  # compiles and trains a second (CNN) population: ~26 s on 2 cores
def test_mixed_population_trains_both_architectures_in_one_scan(tiny):
    """The ablation grid is one population: MLP and CNN members step in one scan.

    The MLP member starts from the population key itself, so it must match an
    MLP-only population with the same seed; the CNN member must learn too.
    """
    cfg, tr, run = tiny
    pop = make_population(DQNConfig(**TINY, arch="mlp,cnn"))
    assert [r["arch"] for r in pop.rows] == ["mlp", "mlp", "cnn", "cnn"]
    block = jax.jit(lambda c, s: pop.run_chunks(c, s, 5))
    mixed = pop.init_population(jax.random.PRNGKey(0))
    q_cnn0 = mixed[1][0].q_params
    for _ in range(30):  # 600 transitions per run: past learning_starts and two target copies
        mixed = block(mixed, pop.specs)
    alone = run(tr.init_population(jax.random.PRNGKey(0)), tr.specs, 150)
    for a, b in zip(jax.tree.leaves(mixed[0]), jax.tree.leaves(alone)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    cnn_runners = mixed[1][0]
    assert np.asarray(cnn_runners.step).tolist() == [600, 600]
    assert float(np.asarray(cnn_runners.metrics.updates).min()) > 0
    changed = jax.tree.map(lambda a, b: not np.array_equal(np.asarray(a), np.asarray(b)), q_cnn0, cnn_runners.q_params)
    assert all(jax.tree.leaves(changed))


def test_report_reads_mixed_and_single_architecture_results():
    table = {
        "seen": {"overall": {"joint": 10.0, "task": 20.0, "wait_share": 5.0, "all_wait_episodes": 0.0}},
        "unseen": {"overall": {"joint": 0.0, "task": 1.0, "wait_share": 5.0, "all_wait_episodes": 0.0}},
    }
    mixed = format_results({"mlp": {"no_penalty": table}, "cnn": {"no_penalty": table}}, "mlp,cnn")
    assert "DQN-MLP no_penalty" in mixed and "DQN-CNN no_penalty" in mixed
    assert " 98.3" in mixed and "100.0" in mixed  # the paper's task numbers of each architecture
    old = format_results({"no_penalty": table}, "cnn")  # results.json written before mixed populations
    assert "DQN-CNN no_penalty" in old and "MLP" not in old


def test_networks_have_the_paper_shapes():
    init, apply = functional("mlp", 585)
    p = init(jax.random.PRNGKey(0))
    kernels = sorted(x.shape for x in jax.tree.leaves(p) if x.ndim == 2)
    assert kernels == sorted([(585, 64), (64, 64), (64, 5)])
    init, apply = functional("cnn", 585)
    p = init(jax.random.PRNGKey(0))
    shapes = sorted(x.shape for x in jax.tree.leaves(p) if x.ndim >= 2)
    assert (3, 3, 3, 16) in shapes and (3, 3, 16, 32) in shapes
    assert (32 * 11 * 15 + 90, 256) in shapes and (256, 64) in shapes
    assert apply(p, jnp.ones((7, 585))).shape == (7, 5)


def test_patch_convolution_equals_nnx_conv():
    from flax import nnx

    from normjax.agents.networks import conv3x3_same

    conv = nnx.Conv(3, 16, kernel_size=(3, 3), padding="SAME", rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 11, 15, 3))
    ref = conv(x)
    out = conv3x3_same(x, conv.kernel[...], conv.bias[...])
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-5)


def _lax_conv(x, kernel, bias):
    """The reference: XLA's own convolution, as nnx.Conv(padding="SAME") computes it."""
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + bias


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("c_in, c_out", [(3, 16), (16, 32)])
def test_patch_convolution_and_its_gradients_match_xla_conv_across_a_population(c_in, c_out):
    """The population's convolutions (vmapped over runs' kernels, a minibatch each) and their
    gradients equal XLA's convolution to float rounding (1e-5 relative; measured ~2e-7)."""
    from normjax.agents.networks import conv3x3_same

    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    x = jax.random.normal(keys[0], (4, 8, 11, 15, c_in))  # 4 runs x minibatch 8
    kernel = jax.random.normal(keys[1], (4, 3, 3, c_in, c_out)) * 0.2
    bias = jax.random.normal(keys[2], (4, c_out))

    def loss(conv):
        return lambda x, k, b: (jnp.tanh(jax.vmap(conv)(x, k, b)) ** 2).sum()

    out, ref = jax.vmap(conv3x3_same)(x, kernel, bias), jax.vmap(_lax_conv)(x, kernel, bias)
    assert _rel(out, ref) < 1e-5
    grads = jax.grad(loss(conv3x3_same), argnums=(0, 1, 2))(x, kernel, bias)
    ref_grads = jax.grad(loss(_lax_conv), argnums=(0, 1, 2))(x, kernel, bias)
    for g, r in zip(grads, ref_grads):
        assert _rel(g, r) < 1e-5


def test_cnn_td_gradient_matches_the_network_on_xla_conv(monkeypatch):
    """DQN-CNN's Q-values and TD-loss gradient, every parameter, equal those of the same
    network on XLA's convolution to 1e-5 relative (the update's float tolerance)."""
    import normjax.agents.networks as nets

    init, apply = functional("cnn", 585)
    params = init(jax.random.PRNGKey(0))
    k = jax.random.split(jax.random.PRNGKey(1), 3)
    batch = {
        "obs": jax.random.uniform(k[0], (32, 585)),
        "next_obs": jax.random.uniform(k[1], (32, 585)),
        "action": jax.random.randint(k[2], (32,), 0, 5),
        "reward": jnp.ones(32),
        "terminated": jnp.zeros(32),
    }
    target = jax.tree.map(lambda a: a * 0.9, params)

    def q_and_grad():
        g = jax.grad(lambda p: td_loss(apply, p, target, batch, 0.99)[0])(params)
        return apply(params, batch["obs"]), g

    q, g = q_and_grad()
    monkeypatch.setattr(nets, "conv3x3_same", _lax_conv)  # read when the network is traced
    q_ref, g_ref = q_and_grad()
    assert _rel(q, q_ref) < 1e-5
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(g), jax.tree.leaves(g_ref)):
        assert _rel(a, b) < 1e-5, jax.tree_util.keystr(path)


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.json")), ids=lambda p: p.stem
)
def test_every_shipped_config_is_valid(path):
    cfg = load_config(path)
    assert cfg.name == path.stem
    assert all(v <= cfg.total_steps for v in cfg.validation_at)


def test_train_cli_rejects_bad_options_before_compiling(tmp_path, capsys):
    from normjax.cli import main

    assert main(["train", "--config", "configs/test_tiny", "--out", str(tmp_path), "--checkpoint-every", "0"]) == 2
    assert "--checkpoint-every=0 is invalid" in capsys.readouterr().err
    for stop in (["--stop-after", "0"], ["--stop-after", "8", "--no-checkpoints"]):
        assert main(["train", "--config", "configs/test_tiny", "--out", str(tmp_path), *stop]) == 2
        assert f"--stop-after={stop[1]} is invalid; allowed: a positive number" in capsys.readouterr().err
    assert main(["train", "--config", "configs/test_tiny", "--out", str(tmp_path), "gamm=0.9"]) == 2
    assert "unknown config key(s) gamm" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing was written, nothing trained


def test_configs_resolve_from_any_working_directory(tmp_path, monkeypatch):
    """A config name, `configs/NAME` or `configs/NAME.json` finds the project's configs/
    wherever the process runs; a path to another file is read as given."""
    monkeypatch.chdir(tmp_path)
    want = load_config(Path(__file__).resolve().parents[2] / "configs" / "cpu_default.json")
    for name in ("cpu_default", "configs/cpu_default", "configs/cpu_default.json"):
        assert load_config(name) == want
    (tmp_path / "mine.json").write_text('{"norms": ["forbidden_zone_q"], "total_steps": 1000, "validation_at": [1000]}')
    assert load_config("mine").total_steps == 1000 and load_config(tmp_path / "mine.json").norms == (
        "forbidden_zone_q",
    )
