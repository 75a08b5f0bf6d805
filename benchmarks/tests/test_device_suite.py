"""The device suite's helpers: the DQN-CNN budget choice, and training without checkpoints."""

import json
from pathlib import Path

from benchmarks import device_cnn_run as dc
from normjax.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_budget_rounds_down_to_blocks_and_has_a_floor():
    # 200k transitions/s for 50 runs, 180 s minus 60 s of overhead: 480k per run.
    assert dc.choose_budget(200_000, 50, 180, 60, 10_000, 10_000) == 480_000
    assert dc.choose_budget(199_999, 50, 180, 60, 10_000, 10_000) == 470_000
    assert dc.choose_budget(1_000, 50, 180, 60, 10_000, 10_000) == 10_000  # too slow: the floor
    assert dc.choose_budget(1e9, 50, 100, 200, 10_000, 10_000) == 10_000  # no time left: the floor
    assert dc.choose_budget(1e9, 50, 180, 60, 10_000, 10_000) == 1_000_000  # never past the paper's budget


def test_throughput_row_picks_the_population(tmp_path):
    path = tmp_path / "train_throughput.json"
    assert dc.throughput_row(path, 50) is None
    rows = [
        dict(arch="mlp", runs=50, transitions_per_s=9.0),
        dict(arch="cnn", runs=150, transitions_per_s=5.0),
        dict(arch="cnn", runs=50, transitions_per_s=7.0, compile_s=3.0),
    ]
    path.write_text(json.dumps({"machine": {"platform": "gpu"}, "rows": rows}))
    row = dc.throughput_row(path, 50)
    assert (row["transitions_per_s"], row["compile_s"], row["machine"]) == (7.0, 3.0, {"platform": "gpu"})
    assert dc.throughput_row(path, 2) is None


def test_no_checkpoints_flag():
    args = build_parser().parse_args(["train", "--config", "c", "--no-checkpoints"])
    assert args.no_checkpoints
