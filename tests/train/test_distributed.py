"""Multi-process training on jax.distributed (train.multihost, `normjax train --distributed`).

Two local processes on 127.0.0.1, one forced CPU device each, join one
distributed run (CPU collectives over Gloo); the population of two runs is
sharded over the two processes' devices.  Their parameters (gathered across
processes), metrics and files equal a single-process run of the same config
on two forced CPU devices, through the command line (with validation and the
final tests), across a stop (`--stop-after`) and resume.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.support.processes import clean_env, xla_flags

ROOT = Path(__file__).resolve().parents[2]
# test_tiny with 8 transitions per run, no validation: one small compiled block.
TINY = [
    "total_steps=8",
    "buffer_size=8",
    "learning_starts=4",
    "batch_size=4",
    "target_update=4",
    "episode_steps=8",
    "validation_at=",
    "progress_every=4",
]
# Three blocks of 8 transitions, validation after the first: a run to stop after one block
# and resume for two (so block follows block both before and after a restore).
THREE_BLOCKS = [a for a in TINY if not a.startswith(("total_steps", "validation_at"))] + [
    "total_steps=24",
    "validation_at=8",
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int) -> dict:
    cache = os.environ.get("NORMJAX_TEST_CACHE", str(ROOT / ".jax_cache"))
    return clean_env(
        PYTHONPATH=str(ROOT),
        JAX_PLATFORMS="cpu",
        JAX_COMPILATION_CACHE_DIR=cache,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1",
        XLA_FLAGS=xla_flags(devices),
    )


def _launch(argv_of, n: int, devices: int, timeout: int = 900, **env) -> list[str]:
    """Start n processes (argv_of(i)), wait for all; stdout of each, asserting success."""
    procs = [
        subprocess.Popen(
            argv_of(i),
            cwd=ROOT,
            env=dict(_env(devices), **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, err[-4000:]
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs


def _same_npz(a: Path, b: Path) -> bool:
    x, y = np.load(a), np.load(b)
    return list(x) == list(y) and all(np.array_equal(x[k], y[k]) for k in x)


def test_importing_normjax_and_the_cli_starts_no_backend():
    """jax.distributed.initialize must come before any backend: `import normjax.cli` starts none."""
    code = (
        "import normjax, normjax.cli, normjax.cache, train.multihost\n"
        "from jax._src import xla_bridge\n"
        "assert not xla_bridge.backends_are_initialized()\n"
        "normjax.NORMS\nprint('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(1), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_distributed_flags(capsys):
    from normjax.cli import build_parser, main

    args = build_parser().parse_args(
        ["train", "--config", "c", "--distributed", "--coordinator", "h:1", "--num-processes", "4", "--process-id", "3"]
    )
    assert (args.coordinator, args.num_processes, args.process_id) == ("h:1", 4, 3)
    assert main(["train", "--config", "configs/test_tiny", "--coordinator", "127.0.0.1:1"]) == 2
    assert "need --distributed" in capsys.readouterr().err
    assert (
        main(["train", "--config", "configs/test_tiny", "--distributed", "--num-processes", "2", "--process-id", "2"])
        == 2
    )
    assert "--process-id=2 is invalid" in capsys.readouterr().err


def _checkpoint(path: Path) -> list[np.ndarray]:
    """A checkpoint's whole carry (networks, optimiser, replay, environments) as host arrays,
    whatever devices and processes saved it."""
    import jax
    import orbax.checkpoint as ocp

    ckptr = ocp.PyTreeCheckpointer()
    tree = ckptr.metadata(path).item_metadata
    return jax.tree.leaves(
        ckptr.restore(path, restore_args=jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree))
    )


@pytest.mark.distributed
def test_two_processes_stopped_and_resumed_equal_one_process(tmp_path):
    """One config (three blocks of 8 transitions, validation after the first) through the
    command two ways: `normjax train --distributed` with two processes, stopped after the first
    block (`--stop-after`, as if killed) and started again, and the same command in one process
    on two devices.  Both end with the same parameters, metrics, validation, final tests and
    whole carry (the last checkpoint, restored to host arrays); the files are written once.
    The one-process run loads the programs the other compiled where they are the same
    (the persistent cache)."""
    cli = [sys.executable, "-m", "normjax.cli", "train", "--config", "configs/test_tiny", "--no-progress"]
    two, one = tmp_path / "two", tmp_path / "one"

    def distributed(i):
        return [
            *cli,
            "--out",
            str(two),
            "--distributed",
            "--coordinator",
            f"127.0.0.1:{port}",
            "--num-processes",
            "2",
            "--process-id",
            str(i),
            *THREE_BLOCKS,
        ]

    port = _port()
    stopped = _launch(lambda i: [*distributed(i), "--stop-after", "8"], n=2, devices=1)
    assert "stopped at 8 transitions, checkpoint saved" in stopped[0] and "resumed" not in stopped[0]
    assert not (two / "results.json").exists()
    # process 0 of 2 logs for both: two devices in two processes, one shard of the runs each
    assert "devices: 2 in 2 processes, sharded over mesh {'runs': 2}" in stopped[0], stopped[0]
    assert "population:" not in stopped[1] and "stopped at" not in stopped[1], stopped[1]  # process 1 logs nothing
    port = _port()
    resumed = _launch(distributed, n=2, devices=1)
    assert "resumed from checkpoint at 8 transitions" in resumed[0], resumed[0]
    _launch(lambda i: [*cli, "--out", str(one), *THREE_BLOCKS], n=1, devices=2)
    for name in ("metrics.jsonl", "validation.jsonl", "config.json", "population.json"):
        assert (two / name).read_text() == (one / name).read_text(), name
    assert len((one / "metrics.jsonl").read_text().splitlines()) == 6  # 3 blocks x 2 runs, written once
    a, b = (json.loads((d / "results.json").read_text()) for d in (two, one))
    a.pop("train_seconds"), b.pop("train_seconds")
    assert a == b
    assert _same_npz(two / "final_params.npz", one / "final_params.npz")
    assert sorted(p.name for p in (two / "checkpoints").iterdir() if p.name.isdigit()) == ["16", "24"]
    carry_two, carry_one = (_checkpoint(d / "checkpoints" / "24" / "default") for d in (two, one))
    assert len(carry_two) == len(carry_one) > 50
    assert all(np.array_equal(x, y) for x, y in zip(carry_two, carry_one))


PER_DEVICE_CHUNKS = textwrap.dedent(
    """
    import sys
    import jax
    import numpy as np
    from normjax.world.state import with_packing
    from normjax.train.config import load_config
    from normjax.train.dqn import make_population
    from normjax.train.run import population_mesh, shard
    pop = make_population(load_config("configs/test_tiny.json", sys.argv[1:]))
    meshes = tuple(population_mesh(len(rows)) for _, rows, _ in pop.member_rows())
    assert all(m is not None for m in meshes), meshes
    specs = tuple(shard(x, m) for x, m in zip(pop.specs, meshes))
    carry = tuple(shard(x, m) for x, m in zip(jax.jit(pop.init_population)(jax.random.PRNGKey(0)), meshes))

    def run(per_device):
        def block(c, s):
            return pop.run_chunks(c, with_packing(s, False), 4, meshes=meshes if per_device else None)
        return jax.tree.leaves(jax.jit(block)(carry, specs))

    a, b = run(True), run(False)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    print("EQUAL", len(a))
    """
)


@pytest.mark.distributed
def test_per_device_chunks_equal_the_compiler_sharded_population():
    """On two devices each device runs the chunks of its own runs in a `shard_map`
    (packing the rare work per device); the population ends exactly as when the
    compiler shards the whole chunk (16 transitions per run: updates and an episode reset).

    Two runs per device: with one, XLA compiles each device's program for a batch
    of one, and an observation at an episode reset came out 1 ulp apart in one entry."""
    tiny = [a for a in TINY if not a.startswith("total_steps")] + ["total_steps=16", "seeds_per_norm=2"]
    (out,) = _launch(lambda i: [sys.executable, "-c", PER_DEVICE_CHUNKS, *tiny], n=1, devices=2)
    assert "EQUAL" in out
