"""Multi-process training on jax.distributed (train.multihost, `normjax train --distributed`).

Two local processes on 127.0.0.1, one forced CPU device each, join one
distributed run (CPU collectives over Gloo); the population of two runs is
sharded over the two processes' devices.  Their parameters (gathered across
processes), metrics and files equal a single-process run of the same config
on two forced CPU devices, through the command line (with validation and the
final tests) and after a stop and resume.
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
# Two blocks of 8 transitions with validation between them: a run to stop and resume.
TWO_BLOCKS = [a for a in TINY if not a.startswith(("total_steps", "validation_at"))] + [
    "total_steps=16",
    "validation_at=8",
]

WORKER = textwrap.dedent(
    """
    import os, sys
    import jax
    pid, n, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    stop = int(os.environ.get("STOP_AFTER", "0")) or None
    if n > 1:
        from normjax.train.multihost import initialize
        initialize(f"127.0.0.1:{port}", n, pid)
    import numpy as np
    from normjax.train.config import load_config
    from normjax.train.multihost import is_primary, to_host
    from normjax.train.run import train_population
    cfg = load_config("configs/test_tiny.json", sys.argv[5:])
    result = train_population(cfg, out, progress=False, final_test=False, log=print, stop_after=stop)
    leaves = jax.tree.leaves(to_host(result["carry"]))  # a collective: every process calls it
    local = result["carry"][0][0].step
    print("PROCESS", jax.process_index(), jax.process_count(), jax.device_count(), len(local.addressable_shards))
    if is_primary():
        np.savez(out + "/carry.npz", *leaves)
    """
)


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


@pytest.mark.distributed
def test_two_processes_equal_one_process_uninterrupted_and_resumed(tmp_path):
    """One config (two blocks of 8 transitions, validation after the first) run four ways:
    `normjax train --distributed` with two processes, the same command in one process on two
    devices, and two processes stopped after the first block (as if killed) then started
    again.  All end with the same parameters, metrics, validation and (through the command)
    final tests; the resumed run's whole carry equals a one-process run's.  The runs share
    their compiled programs through the persistent cache, so the later ones compile little."""
    cli = [sys.executable, "-m", "normjax.cli", "train", "--config", "configs/test_tiny", "--no-progress"]

    def distributed(port):
        return ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id"]

    port = _port()
    _launch(lambda i: cli + ["--out", str(tmp_path / "two"), *distributed(port), str(i), *TWO_BLOCKS], n=2, devices=1)
    _launch(lambda i: cli + ["--out", str(tmp_path / "one"), *TWO_BLOCKS], n=1, devices=2)
    one, two = tmp_path / "one", tmp_path / "two"
    for name in ("metrics.jsonl", "validation.jsonl", "config.json", "population.json"):
        assert (two / name).read_text() == (one / name).read_text(), name
    assert len((one / "metrics.jsonl").read_text().splitlines()) == 4  # 2 blocks x 2 runs, written once
    a, b = (json.loads((d / "results.json").read_text()) for d in (two, one))
    a.pop("train_seconds"), b.pop("train_seconds")
    assert a == b
    assert _same_npz(two / "final_params.npz", one / "final_params.npz")
    assert sorted(p.name for p in (two / "checkpoints").iterdir() if p.name.isdigit()) == ["16", "8"]

    def worker(n, port, out):
        return lambda i: [sys.executable, "-c", WORKER, str(i), str(n), str(port), str(tmp_path / out), *TWO_BLOCKS]

    stopped = _launch(worker(2, _port(), "resumed"), n=2, devices=1, STOP_AFTER="8")
    assert all("resumed" not in out for out in stopped)
    resumed = _launch(worker(2, _port(), "resumed"), n=2, devices=1)
    assert "resumed from checkpoint at 8 transitions" in resumed[0]
    for i, out in enumerate(resumed):
        assert f"PROCESS {i} 2 2 1" in out  # process i of 2, 2 devices in all, one shard of the runs here
    # The whole carry (networks, optimiser, replay, environments), gathered, against one process.
    (single,) = _launch(worker(1, 0, "single"), n=1, devices=2)
    assert "PROCESS 0 1 2 2" in single
    assert _same_npz(tmp_path / "resumed" / "carry.npz", tmp_path / "single" / "carry.npz")
    assert _same_npz(tmp_path / "resumed" / "final_params.npz", one / "final_params.npz")
    for name in ("metrics.jsonl", "validation.jsonl"):
        assert (tmp_path / "resumed" / name).read_text() == (one / name).read_text(), name


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
