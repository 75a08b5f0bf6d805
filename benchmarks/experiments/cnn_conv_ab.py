"""DQN-CNN's training chunk with the convolution's two patch layouts, timed alternately.

`agents.networks.conv3x3_same` builds its 3x3 patches by concatenating the nine shifted
copies along the channels ([..., 9 C], C contiguous numbers per copy) and multiplies them
by the kernel as a [9 C, O] matrix.  Before round 14 of docs/speed.md it stacked them as
[..., 9, C] and contracted both axes in an einsum, which XLA:CPU compiled as a transpose
of the patches to [..., C, 9] (a copy with a stride of 9) before the product.  This script
compiles the whole 50-run training chunk with each formulation in one process and times
them alternately, as `train_throughput.py --ab-rounds` does for DQN-MLP's first layer:

    python -m benchmarks.experiments.cnn_conv_ab --rounds 5

Results: benchmarks/experiments/results/cnn_conv_ab_<N>dev.json (transitions/s per round and
formulation, per-round ratios).
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import jax
import jax.numpy as jnp

import normjax.agents.networks as networks
from benchmarks.common import save_experiment
from benchmarks.train_throughput import _devices, _mesh, _setup


def conv3x3_stacked(x, kernel, bias):
    """The formulation before round 14: patches stacked as [..., 9, C], an einsum over both."""
    h, w = x.shape[-3], x.shape[-2]
    pad = [(0, 0)] * (x.ndim - 3) + [(1, 1), (1, 1), (0, 0)]
    xp = jnp.pad(x, pad)
    patches = jnp.stack([xp[..., i : i + h, j : j + w, :] for i in range(3) for j in range(3)], axis=-2)
    return jnp.einsum("...hwkc,kco->...hwo", patches, kernel.reshape((9,) + kernel.shape[2:])) + bias


FORMULATIONS = {"stacked": conv3x3_stacked, "concatenated": networks.conv3x3_same}


def main(argv=None):
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=10, help="chunks (4 transitions per run) per timed block")
    ap.add_argument("--norms", type=int, default=50, help="population size (first N norms)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--buffer-size", type=int, default=10_000)
    args = ap.parse_args(argv)
    progs = {}
    for name, conv in FORMULATIONS.items():
        with mock.patch.object(networks, "conv3x3_same", conv):  # read when the network is traced
            cfg, tr, carry = _setup("cnn", args.buffer_size, args.norms)
            fn = jax.jit(lambda c, s, tr=tr: tr.run_chunks(c, s, args.chunks, mesh=_mesh(tr)), donate_argnums=0)
            t0 = time.perf_counter()
            compiled = fn.lower(carry, tr.specs).compile()
            progs[name] = [
                compiled,
                jax.block_until_ready(compiled(carry, tr.specs)),
                tr.specs,
                time.perf_counter() - t0,
            ]
    times = {name: [] for name in progs}
    for _ in range(args.rounds):
        for name, p in progs.items():
            t0 = time.perf_counter()
            p[1] = jax.block_until_ready(p[0](p[1], p[2]))
            times[name].append(time.perf_counter() - t0)
    n = args.norms * args.chunks * cfg.train_freq  # transitions per timed block
    rate = {k: [n / t for t in v] for k, v in times.items()}
    ratios = [s / c for s, c in zip(times["stacked"], times["concatenated"])]
    r = {
        "runs": args.norms,
        "chunks": args.chunks,
        "rounds": args.rounds,
        "devices": _devices(tr),
        "transitions_per_s": rate,
        "compile_and_first_block_s": {k: p[3] for k, p in progs.items()},
        "speedup_per_round": ratios,
        "speedup_median": statistics.median(ratios),
    }
    for name, v in rate.items():
        print(f"cnn, {name} patches: {', '.join(f'{x:,.0f}' for x in v)} transitions/s")
    print(
        f"concatenated / stacked per round: {', '.join(f'{x:.2f}' for x in ratios)} "
        f"(median {r['speedup_median']:.2f}) on {r['devices']} device(s)"
    )
    print("saved", save_experiment(f"cnn_conv_ab_{r['devices']}dev", r))


if __name__ == "__main__":
    main()
