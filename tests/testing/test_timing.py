"""normjax.testing.timing: per-test compile accounting and its report."""

import json

import jax
import jax.numpy as jnp

from normjax.testing.timing import Recorder, programs, summarise


def test_a_compile_inside_a_phase_is_counted_and_written(tmp_path):
    rec = Recorder(tmp_path, "gw9", program_min_s=0.0)
    rec.start("tests/x.py::test_a", "call")

    def sin_times_three(x):
        return jnp.sin(x) * 3.0 + 0.123456

    jax.jit(sin_times_three)(jnp.arange(7.0)).block_until_ready()  # a fresh program
    rec.stop()
    rec.stop()  # a second stop without a start writes nothing
    (row,) = [json.loads(x) for x in (tmp_path / "gw9.jsonl").read_text().splitlines()]
    assert row["test"] == "tests/x.py::test_a" and row["when"] == "call"
    assert row["compile_s"] > 0 and row["trace_s"] > 0 and row["wall_s"] >= row["compile_s"]
    assert "jit(sin_times_three)" in [name for name, _ in row["programs"]]  # each compile named


def test_program_report_counts_variants_and_files(tmp_path):
    rows = [
        dict(test="tests/a.py::t1", programs=[["jit_step", 2.0], ["jit_scan", 1.0]]),
        dict(test="tests/a.py::t2", programs=[["jit_step", 3.0]]),
        dict(test="tests/b.py::t3", programs=[["jit_step", 0.5]]),
        dict(test="tests/b.py::t4"),  # rows written before programs were recorded
    ]
    (tmp_path / "gw0.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert programs(tmp_path) == [
        {"name": "jit_step", "compile_s": 5.5, "compiles": 3, "files": 2},
        {"name": "jit_scan", "compile_s": 1.0, "compiles": 1, "files": 1},
    ]


def test_summary_sums_phases_per_test_and_per_file(tmp_path):
    zero = dict(trace_s=0.0, lower_s=0.0, cache_hits=0, cache_misses=0)
    rows = [
        dict(test="tests/a.py::t1", when="setup", wall_s=1.0, compile_s=0.5, **zero),
        dict(test="tests/a.py::t1", when="call", wall_s=2.0, compile_s=1.0, **zero),
        dict(test="tests/a.py::t2", when="call", wall_s=4.0, compile_s=0.0, **zero),
        dict(test="tests/b.py::t3", when="call", wall_s=5.0, compile_s=5.0, **zero),
    ]
    (tmp_path / "gw0.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:2]))
    (tmp_path / "gw1.jsonl").write_text("\n".join(json.dumps(r) for r in rows[2:]))
    by_test = summarise(tmp_path)
    assert [(r["name"], r["wall_s"], r["compile_s"]) for r in by_test] == [
        ("tests/b.py::t3", 5.0, 5.0),
        ("tests/a.py::t2", 4.0, 0.0),
        ("tests/a.py::t1", 3.0, 1.5),
    ]
    assert [(r["name"], r["wall_s"]) for r in summarise(tmp_path, by="file")] == [
        ("tests/a.py", 7.0),
        ("tests/b.py", 5.0),
    ]
    assert len(summarise(tmp_path, top=1)) == 1


def test_long_files_go_first_and_tests_keep_their_order_within_a_file():
    from types import SimpleNamespace

    from normjax.testing.pytest_plugin import heavy_files_first

    def item(nodeid, *markers):
        return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda m: m in markers or None)

    items = [item("a.py::t1"), item("b.py::t1", "training"), item("a.py::t2"), item("c.py::t1"), item("b.py::t2")]
    # an unmeasured file with heavy tests first (b), then measured seconds (c), then the rest (a)
    assert [i.nodeid for i in heavy_files_first(items, {"c.py": 9.0})] == [
        "b.py::t1",
        "b.py::t2",
        "c.py::t1",
        "a.py::t1",
        "a.py::t2",
    ]
    assert heavy_files_first([], {}) == []
