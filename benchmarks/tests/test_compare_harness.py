"""benchmarks/compare.py runs without the optional packages and writes its JSON (no timing is checked)."""

import builtins
import json

import pytest

from benchmarks import compare


@pytest.mark.benchmark
def test_compare_harness_normjax_only(tmp_path):
    # One normjax program keeps the test to one small compile; the structure is what is checked.
    payload = compare.main(
        [
            "--only",
            "normjax",
            "--envs",
            "normjax-world",
            "--batches",
            "8",
            "--steps",
            "4",
            "--repeats",
            "1",
            "--skip-train",
            "--no-plot",
            "--results",
            str(tmp_path),
        ]
    )
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert saved["rows"] == payload["rows"]
    assert {"machine", "versions", "config", "rows", "train", "ratios", "skipped", "programs"} <= saved.keys()
    assert saved["versions"]["jax"] and saved["machine"]["platform"]
    (row,) = saved["rows"]
    assert (row["env"], row["batch"], row["steps"]) == ("normjax-world", 8, 4)
    assert row["steps_per_s"] > 0 and row["compile_s"] > 0
    assert len(row["run_s_rounds"]) == 1 and row["run_s"] == min(row["run_s_rounds"])
    assert row["xla_flops_per_env_step"] > 0 and row["xla_bytes_per_env_step"] > 0
    # One more step adds a step's work: positive, and short of the whole program's count,
    # which also holds the reset state copied in and out.
    assert 0 < row["xla_bytes_per_step_marginal"] < row["xla_bytes_per_env_step"]
    assert row["xla_flops_per_step_marginal"] > 0
    assert set(row["hlo"]) == {"while", "gather", "fusion"} and row["hlo"]["while"] >= 1
    assert saved["train"] is None and saved["ratios"] == []
    skipped = {s["group"] for s in saved["skipped"]}
    assert {"xminigrid", "gymnax", "normjax-dqn"} <= skipped


def test_missing_package_is_skipped_with_install_hint(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.split(".")[0] in ("xminigrid", "gymnax"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    ok, skipped = compare.available(["normjax", "xminigrid", "gymnax"])
    assert ok == ["normjax"]
    assert [s["group"] for s in skipped] == ["xminigrid", "gymnax"]
    assert all(compare.BENCH_HINT in s["reason"] for s in skipped)


def test_ratios_and_hlo_counts():
    rows = [
        dict(env="normjax-full", batch=8, steps_per_s=10.0),
        dict(env="xland-empty-8x8", batch=8, steps_per_s=40.0),
        dict(env="normjax-world", batch=8, steps_per_s=20.0),
        dict(env="xland-r1-9x9", batch=16, steps_per_s=1.0),
    ]
    got = {(q["numerator"], q["denominator"], q["batch"]): q["ratio"] for q in compare.ratios(rows)}
    assert got == {("normjax-full", "xland-empty-8x8", 8): 0.25, ("normjax-world", "xland-empty-8x8", 8): 0.5}
    assert all("median_round_ratio" not in q for q in compare.ratios(rows))  # no rounds recorded
    text = (
        "%w = (s32[]) while(%t), body=%b\n%g = f32[2] gather(%a, %i)\n%f = f32[2] fusion(%x), calls=%fused\n"
        "%ag = f32[2] all-gather(%a)\n"
    )
    assert compare.hlo_counts(text) == {"while": 1, "gather": 1, "fusion": 1}


def test_median_round_ratio_pairs_rounds():
    """Per-round ratios pair the runs of the same round: a machine twice as slow
    in round 2 leaves each round's ratio at 0.25, while the best runs of two
    different rounds would give 0.5."""
    rows = [
        dict(env="normjax-full", batch=8, steps_per_s=10.0, run_s_rounds=[4.0, 8.0, 4.4]),
        dict(env="xland-empty-8x8", batch=8, steps_per_s=20.0, run_s_rounds=[1.0, 2.0, 1.1]),
    ]
    (q,) = compare.ratios(rows)
    assert q["ratio"] == 0.5 and q["median_round_ratio"] == 0.25


def test_interleaved_rounds_time_each_program_once_per_round(monkeypatch):
    order = []

    def fake_prepare(prog, batch, steps, body_once, per_step=True):
        return (lambda: order.append(prog.name)), dict(env=prog.name, batch=batch, steps=steps)

    monkeypatch.setattr(compare, "prepare", fake_prepare)
    progs = [
        compare.Program(
            name=n, label=n, group="normjax", reset=None, step=None, action=None, params=None, what="", notes={}
        )
        for n in ("a", "b")
    ]
    rows = compare.measure_interleaved(progs, 8, 5, 3, True, failed=[])
    assert order == ["a", "b"] * 3
    assert [len(r["run_s_rounds"]) for r in rows] == [3, 3]


def test_step_cost_needs_an_even_step_count():
    # With an odd count the scan unrolled by two adds a remainder step to the program.
    assert compare.step_cost(None, 5, (), {}) is None
