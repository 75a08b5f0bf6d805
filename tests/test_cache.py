"""The `normjax` command's persistent compilation cache (normjax.cache).

A tiny command (`normjax rollout --steps 2`) runs in fresh subprocesses: the
first run writes cache entries, the second identical run loads every program
from them (JAX's own cache-hit events, counted by `normjax.cache.cache_stats`)
and writes nothing; `--no-cache` / `NORMJAX_NO_CACHE=1` leave the directory empty.
The tests that start fresh processes are in the slow tier; the default tier tests the
cache's logic in this process (precedence, executable keys and reloads, whole writes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from normjax.cache import default_cache_dir, resolve_cache_dir
from tests.support.processes import clean_env, xla_flags

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (
    "import json, sys\nfrom normjax.cli import main\nfrom normjax.cache import cache_stats\n"
    "rc = main(sys.argv[1:])\nprint(json.dumps(dict(rc=rc, **cache_stats())))\n"
)


def _start(tmp_path, argv, **env_extra):
    """The `normjax` command `argv` in a fresh subprocess (started, not awaited)."""
    env = clean_env(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_extra)
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stats(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["rc"] == 0
    return stats


ROLLOUT = ["rollout", "--steps", "2"]  # a tiny command


def _run(tmp_path, *flags, **env_extra):
    return _stats(_start(tmp_path, [*ROLLOUT, *flags], **env_extra))


def _files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()} if d.exists() else set()


def test_resolve_precedence(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert resolve_cache_dir(environ=env) == tmp_path / "normjax" / "jax" == default_cache_dir(env)
    assert resolve_cache_dir(environ={}) == Path.home() / ".cache" / "normjax" / "jax"
    assert resolve_cache_dir(environ=env, jax_dir="/j") == Path("/j")  # JAX's own setting is kept
    env["NORMJAX_CACHE_DIR"] = "/e"
    assert resolve_cache_dir(environ=env, jax_dir="/j") == Path("/e")
    assert resolve_cache_dir("/flag", environ=env) == Path("/flag")
    for off in ("1", "true", "yes"):
        assert resolve_cache_dir(environ=dict(env, NORMJAX_NO_CACHE=off)) is None
    assert resolve_cache_dir(environ=dict(env, NORMJAX_NO_CACHE="0")) == Path("/e")
    assert resolve_cache_dir("/flag", environ=dict(env, NORMJAX_NO_CACHE="1")) == Path("/flag")
    assert resolve_cache_dir("/flag", no_cache=True, environ=env) is None


def test_every_command_takes_cache_flags():
    from normjax.cli import build_parser

    ap = build_parser()
    args = ap.parse_args(["render", "--cache-dir", "/x"])
    assert args.cache_dir == "/x" and not args.no_cache
    assert ap.parse_args(["evaluate", "--policy", "oracle", "--out", "o", "--no-cache"]).no_cache
    assert ap.parse_args(["train", "--config", "c", "--no-cache"]).no_cache


@pytest.mark.slow  # two fresh `normjax` processes (slow tier); the cache logic is tested in process here too
def test_second_run_loads_from_cache_and_no_cache_writes_nothing(tmp_path):
    """`--no-cache` wins over `--cache-dir` (NORMJAX_NO_CACHE takes the same path: test_resolve_precedence).

    The no-cache run and the first cached run are independent: they run side by side."""
    default = tmp_path / "xdg" / "normjax" / "jax"
    off_dir, off_home = tmp_path / "off", tmp_path / "off_home"
    off_home.mkdir()
    first = _start(tmp_path, ROLLOUT)  # the default directory under XDG_CACHE_HOME
    off = _start(off_home, [*ROLLOUT, "--no-cache", "--cache-dir", str(off_dir)], NORMJAX_CACHE_DIR=str(off_dir))
    first, off = _stats(first), _stats(off)
    assert off["lookups"] == off["hits"] == off["writes"] == 0
    assert not _files(off_dir) and not _files(off_home / "xdg" / "normjax" / "jax")
    written = _files(default)
    assert first["writes"] > 0 and len(written) >= first["writes"]
    assert all(name.endswith("-cache") for name in written)
    second = _run(tmp_path, NORMJAX_CACHE_DIR=str(default))  # the same directory, named by the env
    assert second["lookups"] == first["lookups"] > 0
    assert second["hits"] == second["lookups"] and second["writes"] == 0
    assert _files(default) == written


def test_executable_cache_keys_and_reloads(tmp_path, monkeypatch):
    """Whole executables: stored once, loaded whole by a new process (here: a cleared memo), and
    keyed by the package source, the static key and the argument shapes."""
    import jax
    import jax.numpy as jnp

    from normjax import cache

    monkeypatch.setattr(cache, "_exe_dir", tmp_path / "executables")
    monkeypatch.setattr(cache, "_loaded", {})
    monkeypatch.setattr(cache, "_exe_counts", {"executable_loads": 0, "executable_stores": 0, "program_s": 0.0})
    f = jax.jit(lambda x, n: x * n + 1, static_argnames="n")
    x = jnp.arange(4.0)
    exe = cache.compiled("t", f, (x,), {"n": 3}, "n=3")
    assert exe(x).tolist() == [1.0, 4.0, 7.0, 10.0] and cache.cache_stats()["executable_stores"] == 1
    assert cache.compiled("t", f, (x,), {"n": 3}, "n=3") is exe  # in memory
    cache._loaded.clear()
    again = cache.compiled("t", f, (x,), {"n": 3}, "n=3")
    assert again(x).tolist() == exe(x).tolist() and cache.cache_stats()["executable_loads"] == 1
    cache.compiled("t", f, (x,), {"n": 2}, "n=2")  # another static value: another program
    cache.compiled("t", f, (jnp.arange(5.0),), {"n": 3}, "n=3")  # another shape
    monkeypatch.setattr(cache, "source_hash", lambda packages: "changed source")
    cache._loaded.clear()
    cache.compiled("t", f, (x,), {"n": 3}, "n=3")  # the package changed: compiled again
    assert cache.cache_stats()["executable_stores"] == 4 and len(list((tmp_path / "executables").iterdir())) == 4
    (tmp_path / "executables" / next((tmp_path / "executables").iterdir()).name).write_bytes(b"broken")
    cache._loaded.clear()
    for n, arr in ((3, x), (2, x), (3, jnp.arange(5.0))):  # a broken file is compiled again
        assert cache.compiled("t", f, (arr,), {"n": n}, f"n={n}")(arr).shape == arr.shape


def test_program_that_ran_from_jax_cache_is_stored_compiled_afresh(tmp_path, monkeypatch):
    """A program this process already ran from JAX's persistent cache (a library call before
    an in-process command, as in the test workers) is stored from a fresh compile, and its
    stored copy runs.  `.compile()` used to return the executable JAX held in memory, which
    serialises without kernels: the stored copy failed at its first call ("Function
    convert_divide_fusion not found"; in the slow tier's llm-eval test
    "select_broadcast_fusion.1")."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from normjax import cache

    monkeypatch.setattr(cache, "_loaded", {})
    monkeypatch.setattr(cache, "_exe_counts", {"executable_loads": 0, "executable_stores": 0, "program_s": 0.0})
    cache.configure_cache(str(tmp_path))  # JAX's cache and the executables here (conftest restores both)

    def make():  # a new function each time: traced and lowered again, so JAX's in-memory caches miss
        def running_share(x):
            return jnp.where(x > 0.5, jnp.cumsum(x, axis=1), x[:, :1]) / (1 + jnp.arange(x.shape[1]))

        return running_share

    x = jnp.linspace(0.0, 1.0, 64).reshape(4, 16)
    jax.jit(make())(x)  # compiled, and written to JAX's cache
    jitted = jax.jit(make())
    hits = cache.cache_stats()["hits"]
    expected = np.asarray(jitted(x))
    assert cache.cache_stats()["hits"] == hits + 1  # this call's executable came from JAX's cache
    cache.compiled("t", jitted, (x,))
    cache._loaded.clear()  # as a new process: the stored file is read back
    stored = cache.compiled("t", jitted, (x,))
    assert cache.cache_stats()["executable_stores"] == 1 and cache.cache_stats()["executable_loads"] == 1
    np.testing.assert_array_equal(np.asarray(stored(x)), expected)


@pytest.mark.slow  # two fresh `normjax` processes (slow tier); the cache logic is tested in process here too
def test_repeated_export_loads_whole_programs(tmp_path):
    """A second identical `normjax export` loads its start and scan programs whole (no tracing)."""
    args = ["--cache-dir", str(tmp_path / "c")]
    first = _run_export(tmp_path, "one.jsonl", *args)
    assert first["executable_stores"] == 2 and first["executable_loads"] == 0
    second = _run_export(tmp_path, "two.jsonl", *args)
    assert second["executable_loads"] == 2 and second["executable_stores"] == 0 and second["writes"] == 0
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


@pytest.mark.slow  # two fresh `normjax` processes (slow tier); the cache logic is tested in process here too
def test_repeated_evaluate_loads_whole_programs(tmp_path):
    """A second identical `normjax evaluate` loads its protocol program whole and gives the same rows."""
    cmd = [
        "evaluate",
        "--policy",
        "random",
        "--norms",
        "bend_right_1",
        "--capacity",
        "6",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    first = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "one.json")]))
    assert first["executable_stores"] == 1 and first["executable_loads"] == 0
    second = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "two.json")]))
    assert second["executable_loads"] == 1 and second["executable_stores"] == 0 and second["writes"] == 0
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "two.json"))
    assert {k: v for k, v in one.items() if k != "meta"} == {k: v for k, v in two.items() if k != "meta"}


def _run_export(tmp_path, out, *flags):
    cmd = [
        "export",
        "--norm",
        "bend_right_1",
        "--phase",
        "seen",
        "--seed",
        "4",
        "--policy",
        "random",
        "--steps",
        "10",
        "--out",
        str(tmp_path / out),
        *flags,
    ]
    return _stats(_start(tmp_path, cmd))


def test_jax_cache_entries_are_written_whole(tmp_path, monkeypatch):
    """JAX's own `put` writes the final name in place; ours (applied by the CLI's
    configure_cache and the test session) writes a temporary name and renames it, so a
    write that dies half-way leaves no entry a later run would load."""
    from jax._src import lru_cache

    from normjax.cache import atomic_cache_writes

    assert atomic_cache_writes() and atomic_cache_writes()  # idempotent
    cache = lru_cache.LRUCache(str(tmp_path), max_size=-1)
    cache.put("k1", b"whole entry")
    assert cache.get("k1") == b"whole entry"
    cache.put("k1", b"another value")  # an existing entry is kept, as in JAX
    assert cache.get("k1") == b"whole entry"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1-cache"]

    def killed(src, dst):
        raise KeyboardInterrupt("killed between writing and renaming")

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        cache.put("k2", b"never renamed")
    assert cache.get("k2") is None  # no partial entry under the name JAX reads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1-cache"]  # nor a stray temporary


def _without_meta(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "meta"}


@pytest.mark.slow  # two fresh `normjax` processes (slow tier); the cache logic is tested in process here too
def test_repeated_identify_loads_whole_programs(tmp_path):
    """A second identical `normjax identify` loads its program whole and writes the same identify.json."""
    cmd = ["identify", "--norms", "bend_right_1", "--seeds", "0", "--capacity", "6", "--cache-dir", str(tmp_path / "c")]
    first = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "one")]))
    assert first["executable_stores"] == 1 and first["executable_loads"] == 0
    second = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "two")]))
    assert second["executable_loads"] == 1 and second["executable_stores"] == 0 and second["writes"] == 0
    assert (tmp_path / "one" / "identify.json").read_bytes() == (tmp_path / "two" / "identify.json").read_bytes()
    assert sorted(p.name for p in (tmp_path / "c" / "tables").iterdir() if p.suffix == ".npz")  # route tables kept


@pytest.mark.training  # two fresh `normjax train` processes (slow tier)
def test_repeated_train_loads_whole_programs(tmp_path):
    """A second identical `normjax train` loads every program whole (init, block, probes, validation and
    final tests) and writes the same metrics, validation, probes and results as the first."""
    cmd = [
        "train",
        "--config",
        "test_tiny",
        "--no-checkpoints",
        "--no-progress",
        "total_steps=400",
        "validation_at=400",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    first = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "one")]))
    assert first["executable_stores"] >= 5 and first["executable_loads"] == 0
    second = _stats(_start(tmp_path, [*cmd, "--out", str(tmp_path / "two")]))
    assert second["executable_loads"] == first["executable_stores"] and second["executable_stores"] == 0
    for name in ("metrics.jsonl", "validation.jsonl", "probes.jsonl", "probes.npz", "population.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    one, two = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("one", "two"))
    assert one.pop("train_seconds") > 0 and two.pop("train_seconds") > 0  # wall time, compile included
    assert one == two


def test_stored_tables_round_trip(tmp_path, monkeypatch):
    """Host-side tables (route and scenario tables use this): built once, read back equal with their
    dtypes, keyed by the source, a broken file rebuilt; without a cache directory always built."""
    import numpy as np

    from normjax import cache

    table = dict(
        valid=np.array([[True, False]]),
        start=np.arange(6, dtype=np.int32).reshape(3, 2),
        routes=np.arange(8, dtype=np.uint8),
        mass=np.linspace(0, 1, 3, dtype=np.float32),
    )
    built = []

    def build():
        built.append(1)
        return table

    monkeypatch.setattr(cache, "_exe_dir", None)
    assert cache.stored("t", build) is table and len(built) == 1 and not (tmp_path / "tables").exists()
    monkeypatch.setattr(cache, "_exe_dir", tmp_path / "executables")
    cache.stored("t", build)
    again = cache.stored("t", build)
    assert len(built) == 2 and set(again) == set(table)
    for k, v in table.items():
        assert again[k].dtype == v.dtype and np.array_equal(again[k], v), k
    arr = cache.stored("arr", lambda: table["routes"])
    assert np.array_equal(cache.stored("arr", list), arr) and cache.stored("arr", list).dtype == np.uint8
    (path,) = (tmp_path / "tables").glob("t-*.npz")
    path.write_bytes(b"broken")
    assert np.array_equal(cache.stored("t", build)["start"], table["start"]) and len(built) == 3
    monkeypatch.setattr(cache, "source_hash", lambda packages: "changed source")
    cache.stored("t", build)
    assert len(built) == 4 and len(list((tmp_path / "tables").glob("t-*.npz"))) == 2


def test_train_programs_go_through_the_cache_only_with_a_directory(tmp_path, monkeypatch):
    """train.programs.cached: the jitted function itself without a cache directory, else a Program keyed by
    the config and values (same results)."""
    import jax
    import jax.numpy as jnp

    from normjax import cache
    from normjax.train.programs import cached

    f = jax.jit(lambda x: x * 2 + 1)
    monkeypatch.setattr(cache, "_exe_dir", None)
    assert cached("t", f, None, n=1) is f
    monkeypatch.setattr(cache, "_exe_dir", tmp_path / "executables")
    monkeypatch.setattr(cache, "_loaded", {})
    config = SimpleNamespace(to_dict=lambda: {"learning_rate": 1e-4})  # a DQNConfig's key: its to_dict()
    p = cached("t", f, config, n=1)
    assert isinstance(p, cache.Program) and p(jnp.arange(3.0)).tolist() == [1.0, 3.0, 5.0]
    assert p.static_key != cached("t", f, config, n=2).static_key != cached("t", f, None, n=1).static_key
    assert len(list((tmp_path / "executables").iterdir())) == 1


_STORE_AND_LOAD = """
import json, sys
import jax, jax.numpy as jnp
from normjax import cache
cache.configure_cache(sys.argv[1])
def mean_so_far(x):
    return jnp.cumsum(x, axis=1) / (1 + jnp.arange(x.shape[1]))
x = jnp.linspace(0.0, 1.0, 64).reshape(4, 16)
if sys.argv[2] == "store":
    jax.jit(mean_so_far)(x)  # JAX's own cache now holds this lowering
    jax.clear_caches()  # so the next compile is served by it
y = cache.compiled("t", jax.jit(mean_so_far), (x,))(x)
print(json.dumps(dict(sum=float(y.sum()), **cache.cache_stats())))
"""


@pytest.mark.slow  # two fresh processes
def test_stored_program_compiled_after_a_jax_cache_hit_runs(tmp_path):
    """A program whose lowering JAX's own cache already holds (e.g. after an edit elsewhere in
    the package changed the executable key) is stored in a form that a new process loads and
    runs: on XLA:CPU an executable loaded from JAX's cache serialises without its kernels
    ("Function convert_divide_fusion not found" at the stored copy's first call)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "NORMJAX_", "XLA_"))}
    env.update(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    runs = []
    for step in ("store", "load"):
        run = subprocess.run(
            [sys.executable, "-c", _STORE_AND_LOAD, str(tmp_path / "c"), step],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    store, load = runs
    assert store["executable_stores"] == 1 and load["executable_loads"] == 1 and load["executable_stores"] == 0
    assert load["sum"] == store["sum"]


_TWO_DEVICES = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from normjax import cache
cache.configure_cache(sys.argv[1])
assert jax.device_count() == 2
f = jax.jit(lambda x: 2 * x + 1)
one = jnp.arange(4.0)  # on one device
both = jax.device_put(one, NamedSharding(Mesh(np.array(jax.devices()), ("r",)), PartitionSpec("r")))
a = cache.compiled("t", f, (one,))(one)
b = cache.compiled("t", f, (both,))(both)
print(json.dumps(dict(a=a.tolist(), b=b.tolist(), b_devices=len(b.sharding.device_set), **cache.cache_stats())))
"""


@pytest.mark.slow  # two fresh processes
def test_stored_programs_keep_their_devices(tmp_path):
    """With two devices, a program compiled for one device's arguments and one for arguments
    sharded over both (same shapes) are two entries, and each loads in a new process and runs
    where it was compiled to (a loaded program used to expect every device: "Expected args to
    execute_sharded_on_local_devices to have 2 shards, got: [1]", which stopped a second
    `normjax train` on two devices at its probe collection)."""
    env = clean_env(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", XLA_FLAGS=xla_flags(2))
    runs = []
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", _TWO_DEVICES, str(tmp_path / "c")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    store, load = runs
    assert store["executable_stores"] == 2 and load["executable_loads"] == 2 and load["executable_stores"] == 0
    assert load["a"] == load["b"] == store["a"] == [1.0, 3.0, 5.0, 7.0] and load["b_devices"] == 2
