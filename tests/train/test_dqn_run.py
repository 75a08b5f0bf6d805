"""One tiny DQN run end to end (docs/training.md): per-layout validation rows, the probe
set and its rows, report figures, exact resume of a killed run, and training without
checkpoints.

Every test reads the same module-scoped run of configs/test_tiny.json (800 transitions
per run, 2 runs, validation at 400 and 800, 64 probe states), trained without
checkpoints; the resume test trains the same config again with checkpoints, killed at
400 transitions and resumed, and compares with it.  One config means one set of compiled
programs for the whole module.

Slow tier (`training`): the module trains (about 100 s of compiling and training on a
2-core machine).  The default tier keeps the trainer's semantics without a run:
tests/train/test_dqn.py (learning starts, target copies, population conds, truncation,
per-run keys) on one shared compiled block.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from normjax.train import curves as cv
from normjax.train import probes as pb
from normjax.train.config import load_config
from normjax.train.run import train_population

pytestmark = pytest.mark.training

QUIET = dict(progress=False, final_test=False, log=lambda *_: None)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    cfg = load_config("test_tiny")
    result = train_population(cfg, out, checkpoint_every=None, **QUIET)
    return out, cfg, result


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def test_training_without_checkpoints_writes_no_checkpoint(tiny_run):
    out, cfg, result = tiny_run
    assert int(result["carry"][0][0].step[0]) == cfg.total_steps == 800
    assert not (out / "checkpoints").exists()
    assert len(_jsonl(out / "metrics.jsonl")) == 2 * 2  # 2 blocks x 2 runs


def test_killed_run_resumes_to_identical_parameters_and_metrics(tiny_run, tmp_path):
    """Killed after the first block and resumed from its checkpoint, a run ends with
    exactly the parameters, optimiser, replay, metrics, validation and probes of the
    uninterrupted run (which also shows that checkpointing changes nothing)."""
    a, cfg, full = tiny_run
    b = tmp_path / "b"
    stopped = train_population(cfg, b, stop_after=400, **QUIET)
    assert stopped["stopped_at"] == 400 and (b / "checkpoints").exists()
    resumed = train_population(cfg, b, **QUIET)
    for x, y in zip(_leaves(full["carry"]), _leaves(resumed["carry"]), strict=True):
        assert np.array_equal(x, y)
    for name in ("metrics.jsonl", "validation.jsonl", "probes.jsonl"):
        assert (a / name).read_text() == (b / name).read_text(), name
    # The probe set is stored once and read back: the same probes after the resume.
    with np.load(a / "probes.npz") as za, np.load(b / "probes.npz") as zb:
        assert sorted(za.files) == sorted(zb.files)
        assert all(np.array_equal(za[k], zb[k]) for k in za.files)


def test_validation_has_rows_per_layout_and_together(tiny_run):
    out, cfg, _ = tiny_run
    rows = _jsonl(out / "validation.jsonl")
    layouts = ("cafe", "cafe_rearranged", "cafe_shifted", "all")
    assert len(rows) == len(cfg.validation_at) * 2 * len(layouts)
    for step in cfg.validation_at:
        for run in (0, 1):
            mine = {r["layout"]: r for r in rows if r["step"] == step and r["run"] == run}
            assert tuple(mine) == layouts
            assert [mine[lay]["episodes"] for lay in layouts] == [12, 12, 12, 36]
            for key in ("task", "joint"):  # the pooled row is the mean of the three (equal counts)
                assert mine["all"][key] == pytest.approx(np.mean([mine[lay][key] for lay in layouts[:3]]))
            assert {"norm", "family", "reward_condition", "arch"} <= set(mine["cafe"])


def test_probe_metrics_are_logged_every_block(tiny_run):
    out, cfg, _ = tiny_run
    rows = _jsonl(out / "probes.jsonl")
    assert [(r["step"], r["run"]) for r in rows] == [(400, 0), (400, 1), (800, 0), (800, 1)]
    assert all(
        np.isfinite(r["probe_td_loss"]) and r["probe_td_loss"] >= 0 and np.isfinite(r["probe_max_q"]) for r in rows
    )
    assert rows[0]["probe_td_loss"] != rows[2]["probe_td_loss"]  # the network moved between blocks
    with np.load(out / "probes.npz") as z:
        assert z["m0_obs"].shape == (2, cfg.probe_states, 585)


def test_probe_set_is_deterministic_and_read_back(tiny_run, tmp_path):
    from normjax.train.dqn import make_train

    out, cfg, _ = tiny_run
    tr = make_train(cfg)
    n, k = cfg.probe_states, cfg.capacity
    a = pb.collect(tr.specs, n, k)
    with np.load(out / "probes.npz") as z:  # collected again: the run's stored set
        for f in pb.FIELDS:
            assert np.array_equal(a[f], z[f"m0_{f}"]), f
    assert a["obs"].shape == (2, n, 585) and a["action"].shape == (2, n)
    assert set(np.unique(a["action"])) <= set(range(5))
    # The two norms' runs have different trajectories (their own seed blocks).
    assert not np.array_equal(a["obs"][0], a["obs"][1])
    # Stored once; a later call reads the file instead of collecting again.
    path = tmp_path / "probes.npz"
    first = pb.load_or_collect(path, [tr.specs], n, k)[0]
    with np.load(path) as z:
        assert np.array_equal(z["m0_obs"], a["obs"])
    marked = dict(first, reward=first["reward"] + 1.0)
    np.savez(path, **{f"m0_{f}": marked[f] for f in pb.FIELDS})
    again = pb.load_or_collect(path, [tr.specs], n, k)[0]
    assert np.array_equal(again["reward"], marked["reward"])
    assert np.array_equal(pb.load_or_collect(path, [tr.specs], n, k, fresh=True)[0]["reward"], a["reward"])
    with pytest.raises(ValueError, match=r"\(runs, states\) \[\(2, 64\)\], the config needs \[\(2, 8\)\]"):
        pb.load_or_collect(path, [tr.specs], 8, k)


def test_report_writes_the_figures_and_keeps_runs_apart(tiny_run, tmp_path):
    from normjax.train.report import load_rows, report

    out, _, _ = tiny_run
    text = report(out)
    for name in ("report.png", "returns.png", "probes.png", "validation.png"):
        assert (out / name).stat().st_size > 0 and f"wrote {out / name}" in text
    assert "cafe_shifted" in text
    bins = cv.bin_returns(load_rows([out])["metrics"])
    assert {b[0] for pts in bins.values() for b in pts} == {800}  # 800 transitions: one (partial) 20k bin
    # Two runs of the same group are told apart by their directory names.
    other = tmp_path / "copy"
    other.mkdir()
    for name in ("config.json", "metrics.jsonl", "validation.jsonl", "probes.jsonl"):
        (other / name).write_text((out / name).read_text())
    rows = load_rows([out, other])
    assert {r["source"] for r in rows["metrics"]} == {out.name, "copy"}
    text = report([out, other], tmp_path / "figs")
    assert (tmp_path / "figs" / "returns.png").exists() and f"== {other} (K=10) ==" in text


def test_final_params_rerun_the_final_tests_exactly(tiny_run, tmp_path):
    """`final_params.npz` (written at the end of every run) holds the greedy policies: final
    tests re-run from the file equal those of the in-memory parameters, and a file of the
    wrong shape is refused with the leaf named."""
    from normjax.train.dqn import make_population
    from normjax.train.params import PARAMS_FILE
    from normjax.train.run import final_tests_from_params, write_final_tests

    out, cfg, result = tiny_run
    direct_dir = tmp_path / "direct"
    direct_dir.mkdir()
    pop = make_population(cfg)
    direct = write_final_tests(
        pop, tuple(m.q_dense(r) for m, (r, _) in zip(pop.members, result["carry"])), direct_dir, None
    )
    assert final_tests_from_params(out) == direct
    assert (
        json.loads((out / "results.json").read_text())["episodes"]
        == json.loads((direct_dir / "results.json").read_text())["episodes"]
    )

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((out / "config.json").read_text())
    with np.load(out / PARAMS_FILE) as f:
        arrays = {k: f[k] for k in f.files}
    name = next(k for k in arrays if k != "step")
    arrays[name] = arrays[name][..., :1]
    np.savez(bad / PARAMS_FILE, **arrays)
    with pytest.raises(ValueError, match=name.replace("[", r"\[")):
        final_tests_from_params(bad)
