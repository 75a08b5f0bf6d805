"""DQN validation and diagnostics (docs/training.md): per-layout validation rows, the
probe set, 20k return bins with median / IQR, report figures, capacity lists."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.train import curves as cv
from normjax.train.config import DQNConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# Binning and quantiles on hand-built rows
# ---------------------------------------------------------------------------


def _row(step, run, ret, eps, family="access", cond="sparse_penalty"):
    return dict(step=step, run=run, arch="mlp", family=family, reward_condition=cond, episode_return=ret, episodes=eps)


def test_returns_are_binned_per_20k_with_median_and_iqr_across_runs():
    rows = [
        # bin (0, 20k]: run means -15, -10, -5, 10 (two blocks of 10k each for runs 0 and 1)
        _row(10_000, 0, -10.0, 2),
        _row(20_000, 0, -20.0, 2),  # (-20 - 40) / 4 = -15
        _row(10_000, 1, -10.0, 1),
        _row(20_000, 1, 0.0, 0),  # no episode in the 2nd block: -10
        _row(20_000, 2, -5.0, 3),
        _row(20_000, 3, 10.0, 1),
        # bin (20k, 40k]: step 20,001 is past the first bin's end
        _row(20_001, 0, 1.0, 1),
        _row(40_000, 1, 3.0, 1),
        # another family and another reward condition stay apart
        _row(20_000, 4, 100.0, 1, family="procedure"),
        _row(20_000, 0, 7.0, 1, cond="dense"),
    ]
    bins = cv.bin_returns(rows)
    assert set(bins) == {("mlp sparse_penalty", "access"), ("mlp sparse_penalty", "procedure"), ("mlp dense", "access")}
    first, second = bins[("mlp sparse_penalty", "access")]
    # numpy percentiles of [-15, -10, -5, 10]: q25 -11.25, median -7.5, q75 -1.25
    assert first == (20_000, -11.25, -7.5, -1.25, 4)
    assert second == (40_000, 1.5, 2.0, 2.5, 2)
    assert bins[("mlp dense", "access")] == [(20_000, 7.0, 7.0, 7.0, 1)]
    # A run that stops inside a bin: the partial bin ends at its last logged step.
    assert cv.bin_returns([_row(10_000, 0, 1.0, 1), _row(30_000, 0, 2.0, 1)])[("mlp sparse_penalty", "access")] == [
        (20_000, 1.0, 1.0, 1.0, 1),
        (30_000, 2.0, 2.0, 2.0, 1),
    ]
    assert cv.bin_returns(rows, width=40_000)[("mlp sparse_penalty", "access")][0][0] == 40_000
    with pytest.raises(ValueError, match="bin width=0"):
        cv.bin_returns(rows, width=0)


def test_quantile_and_validation_curves_keep_groups_and_layouts_apart():
    probes = [
        dict(step=400, run=i, arch="mlp", reward_condition="dense", probe_td_loss=float(v))
        for i, v in enumerate((1, 2, 3, 4, 5))
    ]
    probes.append(dict(step=400, run=9, arch="mlp", reward_condition="no_penalty", probe_td_loss=None))
    assert cv.quantile_curves(probes, "probe_td_loss") == {"mlp dense": [(400, 2.0, 3.0, 4.0, 5)]}
    val = [
        dict(step=800, arch="mlp", reward_condition="dense", layout=lay, task=t, joint=j)
        for lay, t, j in (("cafe", 1.0, 0.5), ("cafe", 0.0, 0.0), ("cafe_shifted", 0.5, 0.25), ("all", 0.5, 0.25))
    ]
    val.append(dict(step=800, arch="mlp", reward_condition="sparse_penalty", task=0.25, joint=0.0))  # old row
    curves = cv.validation_curves(val)
    assert curves[("mlp dense", "cafe")] == [(800, 0.5, 0.25, 2)]
    assert curves[("mlp dense", "cafe_shifted")] == [(800, 0.5, 0.25, 1)]
    assert curves[("mlp sparse_penalty", "cafe")] == [(800, 0.25, 0.0, 1)]
    assert [k[1] for k in curves if k[0] == "mlp dense"] == ["cafe", "cafe_shifted", "all"]


def test_group_key_names_capacity_and_source():
    r = dict(arch="cnn", reward_condition="dense")
    assert cv.group_key(r) == "cnn dense"
    assert cv.group_key(dict(r, capacity=6)) == "cnn dense K=6"
    assert cv.group_key(dict(r, capacity=6, source="runA")) == "runA cnn dense K=6"


# ---------------------------------------------------------------------------
# Capacity lists and the new config fields
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["paper_grid", "paper_mlp_sparse_penalty", "paper_cnn_dense"])
def test_paper_configs_list_the_three_capacities(name):
    from normjax.train.run import run_dirs

    cfg = load_config(ROOT / "configs" / name)
    assert cfg.capacities == (6, 8, 10)
    assert cfg.validation_layouts == ("cafe", "cafe_rearranged", "cafe_shifted") and cfg.probe_states == 1000
    per = cfg.per_capacity()
    assert [c.capacity for c in per] == [6, 8, 10] and [c.name for c in per] == [f"{name}_K{k}" for k in (6, 8, 10)]
    assert [d.name for _, d in run_dirs(cfg, "out")] == ["K6", "K8", "K10"]
    one = load_config(ROOT / "configs" / name, ["capacity=8"])
    assert one.capacity == 8 and [d for _, d in run_dirs(one, "out")] == [Path("out")]
    assert load_config(ROOT / "configs" / name, ["capacity=6,10"]).capacities == (6, 10)


@pytest.mark.parametrize(
    "value, match",
    [
        ("7", r"capacity=7 is invalid; allowed: one of 6, 8, 10"),
        ("6,7", r"capacity=\(6, 7\) is invalid; allowed: one of 6, 8, 10"),
        ("6,6", r"capacity=\(6, 6\) is invalid.*distinct"),
        ("ten", r"capacity='ten' is invalid; allowed: one of 6, 8, 10"),
        ("", r"capacity=\(\) is invalid"),
    ],
)
def test_bad_capacity_lists_name_the_value_and_the_allowed_ones(value, match):
    with pytest.raises(ValueError, match=match):
        load_config(ROOT / "configs/test_tiny.json", [f"capacity={value}"])


def test_new_config_fields_are_validated():
    with pytest.raises(ValueError, match="validation_layouts='cafe_moved' is invalid; allowed: cafe, bank"):
        DQNConfig(validation_layouts=("cafe", "cafe_moved"))
    with pytest.raises(ValueError, match="validation_layouts"):
        DQNConfig(validation_layouts=())
    with pytest.raises(ValueError, match="probe_states=-1"):
        DQNConfig(probe_states=-1)
    assert DQNConfig(capacity=[8]).capacity == 8  # a one-item list is that K
    assert DQNConfig(capacity=[6, 8]).to_dict()["capacity"] == (6, 8)


def test_one_program_per_capacity(tmp_path):
    from normjax.train.dqn import make_train
    from normjax.train.run import train_population

    cfg = DQNConfig(capacity=(6, 10), norms=("forbidden_zone_q",), total_steps=8, learning_starts=0, validation_at=())
    with pytest.raises(ValueError, match="make_train takes one capacity"):
        make_train(cfg)
    with pytest.raises(ValueError, match="train_population trains one capacity"):
        train_population(cfg, tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written, nothing compiled


# ---------------------------------------------------------------------------
# The probe set
# ---------------------------------------------------------------------------


def test_probe_stats_in_passes_equal_one_run_at_a_time():
    """`make_stats` takes the runs a few at a time (memory); each run's numbers are
    its own TD loss and max Q, also for a population not a multiple of the pass size."""
    from normjax.agents.networks import action_mask, functional, masked_max
    from normjax.train import probes as pb
    from normjax.train.dqn import td_loss

    runs, n, n_obs = pb.RUNS_PER_PASS + 2, 12, 553
    init, apply = functional("mlp", n_obs)
    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    qp = jax.vmap(init)(keys)
    tp = jax.vmap(init)(jax.random.split(jax.random.PRNGKey(1), runs))
    k = jax.random.split(jax.random.PRNGKey(2), 4)
    probe = {
        "obs": jax.random.uniform(k[0], (runs, n, n_obs)),
        "next_obs": jax.random.uniform(k[1], (runs, n, n_obs)),
        "action": jax.random.randint(k[2], (runs, n), 0, 5),
        "reward": jax.random.normal(k[3], (runs, n)),
        "terminated": jnp.zeros((runs, n)),
    }
    loss, max_q = pb.make_stats(apply, 0.99)(qp, tp, probe)
    for r in range(runs):
        one = jax.tree.map(lambda a: a[r], (qp, tp, probe))
        want_loss, _ = td_loss(apply, one[0], one[1], one[2], 0.99)
        want_q = masked_max(apply(one[0], one[2]["obs"]), action_mask(one[2]["obs"])).mean()
        np.testing.assert_allclose(loss[r], want_loss, rtol=1e-5)
        np.testing.assert_allclose(max_q[r], want_q, rtol=1e-5)


def test_validation_episodes_use_disjoint_seeds_on_each_layout():
    from normjax.protocol.scenarios import test_episodes
    from normjax.train import evaluate as ev
    from normjax.train.run import VALIDATION_SEEDS

    per_run = ev.validation_episodes([0, 23], VALIDATION_SEEDS, ("cafe", "cafe_shifted"))
    test_seeds = {e["seed"] for e in test_episodes([0, 23], 0)}
    for eps in per_run:
        assert len(eps) == 24 and {e["layout_id"] for e in eps} == {0, 11}
        assert not {e["seed"] for e in eps} & test_seeds
        cafe = [(e["seed"], e["group"]) for e in eps if e["layout"] == "cafe"]
        assert cafe == [(e["seed"], e["group"]) for e in eps if e["layout"] == "cafe_shifted"]
