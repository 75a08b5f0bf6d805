"""Driver for a DQN population run: segments, validation, checkpoints, logs.

`train_population(config, out_dir)` runs the population of `train.dqn` in
fixed-size compiled blocks of chunks.  Between blocks (outside the compiled
program) it writes metrics as JSON lines (their rows: `train.run_log`), runs
validation at the configured transition counts, and saves the whole runner state (networks, optimiser,
replay memory, environments, keys, counters) with orbax.  A killed run
resumes from its last checkpoint and, because every block is the same pure
function of the carried state, ends with exactly the parameters and metrics
of an uninterrupted run.  At the end the frozen policies play the protocol's
final tests (3 seen + 3 unseen per norm) and `results.json` is written.

Scale-out: with several devices the population axis is sharded over a 1-D
`jax.sharding.Mesh` ("runs") with `NamedSharding`; the runs are independent,
so the compiled program needs no communication.  Multi-host: call
`jax.distributed.initialize()` first (`train.multihost.initialize`,
`normjax train --distributed`); the mesh then spans every process's devices,
every process builds the same population and runs the same blocks, metrics and
parameters are gathered to every process between blocks, validation and final
tests run on each process from the gathered parameters, process 0 alone writes
the run's files, and every process takes part in the (orbax) checkpoints.
docs/distributed.md.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from normjax.protocol.stamp import protocol_stamp
from normjax.train import evaluate as ev
from normjax.train import probes as pb
from normjax.train import replay as rp
from normjax.train.config import DQNConfig
from normjax.train.dqn import make_population
from normjax.train.first_layer import replay_width, resumed_first_layer
from normjax.train.multihost import is_multiprocess, is_primary, local_value, to_global, to_host
from normjax.train.params import load_final_params, run_config, save_final_params
from normjax.train.programs import cached, stores_programs
from normjax.train.run_log import append_jsonl, metric_rows, probe_rows, validation_rows, validation_summary
from normjax.world.observation import obs_size
from normjax.xla_cpu import configured

VALIDATION_SEEDS = (101, 102, 103, 104)  # 4 x 3 seen episodes = 12 per norm and layout


def population_mesh(n_runs: int):
    """A 1-D mesh over all devices if the population divides evenly, else None.

    Across several processes the population must divide evenly (a ValueError
    otherwise): every process then holds its share of the runs.
    """
    devices = jax.devices()
    if len(devices) < 2 or n_runs % len(devices):
        if is_multiprocess():
            raise ValueError(
                f"a population of {n_runs} runs does not divide over the {len(devices)} devices "
                f"of {jax.process_count()} processes; change seeds_per_norm / norms or the devices"
            )
        return None
    return Mesh(np.array(devices), ("runs",))


def shard(tree, mesh):
    """Place the leading (run) axis of every leaf across the mesh."""
    if mesh is None:
        return tree

    multi = is_multiprocess()

    def put(x):
        spec = PartitionSpec() if getattr(x, "ndim", 0) == 0 else PartitionSpec("runs")
        if multi:  # every process holds the full value; each fills its own devices
            return to_global(x, NamedSharding(mesh, spec))
        return jax.device_put(x, NamedSharding(mesh, spec))

    return jax.tree.map(put, tree)


def block_size(config: DQNConfig, max_chunks: int = 2_500) -> int:
    """Chunks per compiled block: divides every validation point and the total."""
    points = sorted(set(config.validation_at) | {config.total_steps})
    g = 0
    for p in points:
        g = math.gcd(g, p // config.train_freq)
    best = 1
    for d in range(1, min(g, max_chunks) + 1):
        if g % d == 0:
            best = d
    return best


def _params(q_params):
    """Parameters for the evaluation programs: gathered to every process when spread over several."""
    return to_host(q_params) if is_multiprocess() else q_params


def _zero_metrics(runners):
    return runners.replace(metrics=jax.tree.map(jnp.zeros_like, runners.metrics))


def _step(carry) -> int:
    """Transitions done so far (all runs step in lockstep)."""
    return int(local_value(carry[0][0].step))


def check_replay_fits(config: DQNConfig, n_runs: int, available: int | None = -1) -> None:
    """On a CPU, refuse (before compiling) a population whose replay memory alone
    exceeds the host's available memory, instead of being killed part-way.

    `available`: bytes (default: read from the system; None: unknown, no check).
    """
    if jax.default_backend() != "cpu":
        return
    available = rp.available_host_memory() if available == -1 else available
    # Under jax.distributed the runs (and their replay) are split over the processes.
    # Observations in the trainer's form (train.first_layer); the widest where architectures mix.
    width = max(replay_width(a, config.first_layer, config.layout, obs_size(config.capacity)) for a in config.archs)
    need = rp.nbytes(n_runs, config.buffer_size, width, jnp.dtype(config.replay_dtype)) // jax.process_count()
    if available is not None and need > available:
        gb = lambda b: f"{b / 2**30:.1f} GB"
        raise MemoryError(
            f"replay memory of {n_runs} runs x buffer_size={config.buffer_size:,} x {width} "
            f"observation floats ({config.replay_dtype}) needs {gb(need)}, but {gb(available)} is available; "
            f"train fewer norms at a time (norms=...), a smaller buffer_size, or replay_dtype=float16"
        )


def train_population(
    config: DQNConfig,
    out_dir,
    *,
    resume: bool = True,
    progress: bool = True,
    stop_after: int | None = None,
    checkpoint_every: int | None = 1,
    final_test: bool = True,
    log=print,
) -> dict:
    """Train (or resume) the population of `config` into `out_dir`.

    The population holds every (architecture, reward condition, norm, seed)
    run of the config; the returned `carry` is a tuple with one
    (runners, replay) pair per architecture (`train.dqn.Population`).
    stop_after: stop once this many transitions are done (as if killed, but with a
    checkpoint there whatever `checkpoint_every` says); training again resumes from it.
    checkpoint_every: save a checkpoint every this many blocks and at the end; None:
    no checkpoints at all (nothing to resume from; e.g. a timing run whose replay
    memory would take long to save).
    Under `jax.distributed` every process calls this with the same arguments;
    process 0 writes the files and logs.
    """
    with configured(unrolled_threefry=True):  # the trainer's programs only (normjax/xla_cpu.py), same bits
        return _train_population(
            config,
            out_dir,
            resume=resume,
            progress=progress,
            stop_after=stop_after,
            checkpoint_every=checkpoint_every,
            final_test=final_test,
            log=log,
        )


def _train_population(
    config: DQNConfig,
    out_dir,
    *,
    resume: bool,
    progress: bool,
    stop_after: int | None,
    checkpoint_every: int | None,
    final_test: bool,
    log,
) -> dict:
    if len(config.capacities) != 1:
        raise ValueError(
            f"train_population trains one capacity, got capacity={config.capacity!r}; "
            "use train_capacities (one population and run directory per K)"
        )
    primary = is_primary()
    if not primary:
        log, progress_bar = (lambda *_: None), False
    else:
        progress_bar = progress
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = resumed_first_layer(config, out, resume and checkpoint_every is not None, log)
    pop = make_population(config)
    n_runs = len(pop.rows)
    check_replay_fits(config, n_runs)
    if primary:
        (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2))
        (out / "population.json").write_text(json.dumps(pop.rows, indent=2))
    members = pop.member_rows()
    meshes = [population_mesh(len(rows)) for _, rows, _ in members]
    block = block_size(config)
    log(
        f"population: {n_runs} runs ({config.arch}), {config.total_steps:,} transitions each, "
        f"blocks of {block * config.train_freq:,}; devices: {jax.device_count()}"
        + (f" in {jax.process_count()} processes" if is_multiprocess() else "")
        + (f", sharded over mesh {dict(meshes[0].shape)}" if meshes[0] is not None else "")
    )

    specs = tuple(shard(x, mesh) for x, mesh in zip(pop.specs, meshes))
    # One compiled program (bit-identical to the eager init, and one cache entry instead of hundreds).
    init = cached("train-init", jax.jit(pop.init_population), config)(jax.random.PRNGKey(config.seed))
    carry = tuple(shard(x, mesh) for x, mesh in zip(init, meshes))
    ckpt = (
        None
        if checkpoint_every is None
        else ocp.CheckpointManager((out / "checkpoints").resolve(), options=ocp.CheckpointManagerOptions(max_to_keep=2))
    )
    if ckpt is not None and resume and ckpt.latest_step() is not None:
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, carry)
        carry = ckpt.restore(ckpt.latest_step(), args=ocp.args.StandardRestore(abstract))
        log(f"resumed from checkpoint at {ckpt.latest_step():,} transitions")

    probe_sets = probe_stats = None
    if config.probe_states:
        # Collected once, stored with the run: a resumed run reads the same probes back.
        sets = pb.load_or_collect(
            out / "probes.npz",
            [m.specs for m in pop.members],
            config.probe_states,
            config.capacity,
            write=primary,
            fresh=not resume,
        )
        probe_sets = [jax.tree.map(jnp.asarray, s) for s in sets]
        probe_stats = [cached("train-probe-stats", pb.make_stats(m.apply, config.gamma), m.config) for m in pop.members]

    bar = None
    if progress_bar:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.total_steps, unit="tr", desc=f"{config.name}", mininterval=1.0)
        bar.update(_step(carry))
    every = max(1, config.progress_every // config.train_freq)
    last = {"step": _step(carry)}

    def on_chunk(step):
        step = int(step)
        if bar is not None and step - last["step"] >= every * config.train_freq:
            bar.update(step - last["step"])
            last["step"] = step

    # A program with a host callback cannot be stored whole: with the executable cache
    # (train.programs) the block has none and the bar advances once per block.
    per_chunk = on_chunk if progress and not stores_programs() else None

    def run_block(c, s):
        # Sharded over devices, each device runs the chunks of its own runs (`_Train.chunk`).
        return pop.run_chunks(c, s, block, per_chunk, meshes=tuple(meshes))

    run = cached("train-block", jax.jit(run_block, donate_argnums=0), config, block=block)
    t_start = time.perf_counter()
    blocks_done = 0
    step = _step(carry)
    while step < config.total_steps:
        carry = run(carry, specs)
        step = _step(carry)
        blocks_done += 1
        if bar is not None:
            bar.update(step - last["step"])
            last["step"] = step
        for (_, rows, offset), (runners, _) in zip(members, carry):
            rows_out = metric_rows(rows, runners, step, offset)  # a collective across processes
            if primary:
                append_jsonl(out / "metrics.jsonl", rows_out)
        carry = tuple((_zero_metrics(runners), rb) for runners, rb in carry)
        if probe_sets is not None:
            rows_out = []
            for (m, rows, offset), (runners, _), stats, probe in zip(members, carry, probe_stats, probe_sets):
                loss, max_q = stats(_params(m.q_dense(runners)), _params(m.target_dense(runners)), probe)
                rows_out += probe_rows(rows, step, offset, loss, max_q)
            if primary:
                append_jsonl(out / "probes.jsonl", rows_out)
        if step in config.validation_at:
            val = []
            for (m, rows, offset), (runners, _) in zip(members, carry):
                per_run = ev.validation_episodes(
                    [r["norm_id"] for r in rows], VALIDATION_SEEDS, config.validation_layouts
                )
                raw = ev.run_population(m, _params(m.q_dense(runners)), per_run)
                val += validation_rows(rows, step, offset, per_run, raw)
            if primary:
                append_jsonl(out / "validation.jsonl", val)
            log(validation_summary(val, step, config.validation_layouts))
        stopping = stop_after is not None and stop_after <= step < config.total_steps
        if ckpt is not None and (blocks_done % checkpoint_every == 0 or step >= config.total_steps or stopping):
            ckpt.save(step, args=ocp.args.StandardSave(carry))
            ckpt.wait_until_finished()
        if stopping:
            if bar is not None:
                bar.close()
            log(
                f"stopped at {step:,} transitions" + (", checkpoint saved: training again resumes here" if ckpt else "")
            )
            return {"stopped_at": step, "carry": carry}
    train_s = time.perf_counter() - t_start
    if bar is not None:
        bar.close()

    if primary:
        (out / "timing.json").write_text(json.dumps({"train_seconds": train_s, "n_runs": n_runs}))
    result = {"config": config.to_dict(), "train_seconds": train_s, "carry": carry}
    q_params = tuple(_params(m.q_dense(runners)) for (m, _, _), (runners, _) in zip(members, carry))
    if primary:
        save_final_params(jax.device_get(q_params), out, step)
    if final_test:
        result["results"] = write_final_tests(pop, q_params, out, train_s)
    return result


def run_dirs(config: DQNConfig, out_dir) -> list[tuple[DQNConfig, Path]]:
    """(single-K config, run directory) per capacity: `out_dir` itself for one K, else `out_dir/K<k>`."""
    out = Path(out_dir)
    configs = config.per_capacity()
    if len(configs) == 1:
        return [(configs[0], out)]
    return [(c, out / f"K{c.capacity}") for c in configs]


def train_capacities(config: DQNConfig, out_dir, **kwargs) -> list[dict]:
    """Train one population per capacity K of `config` (K is static: one program per K)."""
    return [train_population(c, d, **kwargs) for c, d in run_dirs(config, out_dir)]


def write_final_tests(pop, q_params_per_member, out: Path, train_s: float | None) -> dict:
    """Final tests of the frozen policies (protocol seed 0) -> results.json.

    results[arch][reward_condition] = protocol summary (seen and unseen).
    """
    summary, episodes = {}, {}
    for (m, rows, _), q_params in zip(pop.member_rows(), q_params_per_member):
        per_run = ev.episodes_for([r["norm_id"] for r in rows])
        raw = ev.run_population(m, q_params, per_run)
        tables = ev.summarize_groups(rows, per_run, raw, "reward_condition")
        summary[m.config.arch] = {cond: {k: v for k, v in t.items() if k != "episodes"} for cond, t in tables.items()}
        episodes[m.config.arch] = {c: t["episodes"] for c, t in tables.items()}
    payload = {
        "config": pop.config.to_dict(),
        "train_seconds": train_s,
        "n_runs": len(pop.rows),
        "results": summary,
        "episodes": episodes,
        "protocol": protocol_stamp(),  # the scenario tables' hash and the code version (normjax table)
    }
    if is_primary():
        (out / "results.json").write_text(json.dumps(payload, indent=2))
    return summary


def _abstract_carry(pop):
    return jax.eval_shape(pop.init_population, jax.random.PRNGKey(pop.config.seed))


def _train_seconds(out: Path):
    timing = out / "timing.json"
    return json.loads(timing.read_text())["train_seconds"] if timing.exists() else None


def final_tests_from_params(run_dir) -> dict:
    """Re-run the final tests of a finished run from its `final_params.npz` (e.g. on new scenarios)."""
    out = Path(run_dir)
    pop = make_population(run_config(out))
    abstract = tuple(jax.eval_shape(m.q_dense, runners) for m, (runners, _) in zip(pop.members, _abstract_carry(pop)))
    q_params = tuple(jax.tree.map(jnp.asarray, t) for t in load_final_params(out, pop, abstract))
    return write_final_tests(pop, q_params, out, _train_seconds(out))
