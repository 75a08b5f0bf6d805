"""A persistent JAX compilation cache for the `normjax` command line.

Every `normjax` command compiles large programs (the environment step, the
protocol's 300 episodes, a DQN population); with a persistent cache a second
identical command loads the executables from disk instead of compiling them.
The cache is JAX's own (`jax_compilation_cache_dir`), configured here before
anything compiles:

* on by default, under the user's cache directory:
  ``$XDG_CACHE_HOME/normjax/jax``, or ``~/.cache/normjax/jax``;
* ``--cache-dir DIR`` or the environment variable ``NORMJAX_CACHE_DIR`` choose
  another directory;
* ``--no-cache`` or ``NORMJAX_NO_CACHE=1`` turn it off;
* a directory that JAX already has (``JAX_COMPILATION_CACHE_DIR``, or a test
  session's own setting) is kept when neither flag nor ``NORMJAX_CACHE_DIR``
  names one.

The thresholds are lowered (`jax_persistent_cache_min_compile_time_secs` 0,
`jax_persistent_cache_min_entry_size_bytes` -1) so that CPU programs, which
compile in well under JAX's default one second, are cached too.
`cache_stats()` counts this process's cache hits and writes (from
`jax.monitoring` events).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import threading
import time
import zlib
from pathlib import Path

from normjax.compile_afresh import compile_afresh

_HIT = "/jax/compilation_cache/cache_hits"
_MISS = "/jax/compilation_cache/cache_misses"  # recorded when an entry is written
_REQUEST = "/jax/compilation_cache/compile_requests_use_cache"
_counts = {_HIT: 0, _MISS: 0, _REQUEST: 0}
_listening = False

_FALSE = ("", "0", "false", "no", "off")


def default_cache_dir(environ=None) -> Path:
    """``$XDG_CACHE_HOME/normjax/jax`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "normjax" / "jax"


def resolve_cache_dir(
    cache_dir: str | None = None, no_cache: bool = False, environ=None, jax_dir: str | None = None
) -> Path | None:
    """The cache directory a command should use, or None for no cache.

    Precedence: ``no_cache`` (``--no-cache``), ``cache_dir`` (``--cache-dir``),
    ``NORMJAX_NO_CACHE``, ``NORMJAX_CACHE_DIR``, a directory JAX is already
    configured with (`jax_dir`), the default user cache directory.
    """
    env = os.environ if environ is None else environ
    if no_cache:
        return None
    if cache_dir:
        return Path(cache_dir).expanduser()
    if env.get("NORMJAX_NO_CACHE", "").strip().lower() not in _FALSE:
        return None
    if env.get("NORMJAX_CACHE_DIR"):
        return Path(env["NORMJAX_CACHE_DIR"]).expanduser()
    if jax_dir:
        return Path(jax_dir)
    return default_cache_dir(env)


def _listen() -> None:
    global _listening
    if _listening:
        return
    import jax

    def on_event(event: str, **kwargs) -> None:
        if event in _counts:
            _counts[event] += 1

    jax.monitoring.register_event_listener(on_event)
    _listening = True


def configure_cache(cache_dir: str | None = None, no_cache: bool = False) -> Path | None:
    """Set JAX's persistent compilation cache for this process; returns the directory or None.

    Call before the programs to be cached compile.  JAX decides once per
    process whether it uses a cache (at its first compilation, which may have
    happened before this call), so the decision is reset here
    (`jax.experimental.compilation_cache.compilation_cache.reset_cache`) and
    taken again at the next compilation with these settings.  Turning the
    cache off sets `jax_enable_compilation_cache` to False.  The executable
    cache (`compiled`) uses ``<dir>/executables``.
    """
    global _exe_dir
    import jax
    from jax.experimental.compilation_cache import compilation_cache as jax_cache

    _listen()
    path = resolve_cache_dir(cache_dir, no_cache, jax_dir=jax.config.jax_compilation_cache_dir)
    jax_cache.reset_cache()
    _exe_dir = None if path is None else path / "executables"
    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    path.mkdir(parents=True, exist_ok=True)
    atomic_cache_writes()
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path


def atomic_cache_writes() -> bool:
    """Make JAX's persistent-cache writes atomic for this process; True where applied.

    JAX (0.10) writes an entry in place (`LRUCache.put`: `write_bytes` on the final
    name), so two processes compiling the same program at once (pytest-xdist workers,
    parallel commands) or a process killed mid-write can leave a mixed or truncated
    entry that a later run loads, failing with e.g. ``NOT_FOUND: Function ... not
    found``.  Here an entry is written to a temporary name in the same directory and
    renamed into place, so a reader sees a whole entry or none.  Only the local,
    eviction-free configuration that normjax uses is changed (with a size cap JAX
    locks and evicts itself); with another JAX layout nothing is changed.
    """
    try:
        from jax._src import lru_cache
    except ImportError:
        return False
    cls, suffix = getattr(lru_cache, "LRUCache", None), getattr(lru_cache, "_CACHE_SUFFIX", None)
    if cls is None or suffix is None:
        return False
    if getattr(cls.put, "_normjax_atomic", False):
        return True
    jax_put = cls.put

    def put(self, key: str, value: bytes) -> None:
        target = Path(str(self.path)) / f"{key}{suffix}"
        if self.eviction_enabled or "://" in str(self.path) or not key:
            return jax_put(self, key, value)
        if target.exists():
            return None
        # One writer per name (process and thread); a dot name is not matched by JAX's "*-cache".
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            tmp.write_bytes(value)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return None

    put._normjax_atomic = True
    cls.put = put
    return True


def cache_stats() -> dict:
    """This process's cache events: JAX's persistent-cache hits, writes and lookups, and
    the executable cache's loads and stores."""
    return {"hits": _counts[_HIT], "writes": _counts[_MISS], "lookups": _counts[_REQUEST], **_exe_counts}


# ---------------------------------------------------------------------------
# Executable cache: whole compiled programs, so a repeated command also skips
# tracing and lowering (which JAX's cache, keyed by the lowered program, cannot).

_exe_dir: Path | None = None
_exe_counts = {"executable_loads": 0, "executable_stores": 0, "program_s": 0.0}
_loaded: dict[str, object] = {}


@functools.cache
def source_hash(packages: tuple[str, ...] = ("normjax",)) -> str:
    """sha256 of the source and map files of `packages` (installed or importable packages,
    e.g. ``("normjax", "train")``) and the JAX / jaxlib versions."""
    import importlib.util

    import jax
    import jaxlib

    h = hashlib.sha256(f"{jax.__version__} {jaxlib.__version__}".encode())
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"source_hash: {package!r} is not an importable package")
        root = Path(list(spec.submodule_search_locations)[0]).resolve()
        h.update(package.encode())
        for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".txt") and p.is_file()):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


# _key's digests by everything they are made of, with the leaves' shapes and dtypes as objects:
# a program called once per step (llm-eval's) spent most of its 0.2 ms key on str(dtype).
_key_memo: dict[tuple, str] = {}
_KEY_MEMO_MAX = 4096


def _key(name: str, static: str, args, packages: tuple[str, ...]) -> str:
    import jax

    from normjax.xla_cpu import unrolled_threefry_applied  # same bits either way, another program

    leaves, treedef = jax.tree.flatten(args)
    # With the placement: a program compiled for one device's arguments cannot take sharded ones.
    raw = tuple(
        (tuple(getattr(x, "shape", ())), getattr(x, "dtype", type(x).__name__), getattr(x, "sharding", None))
        for x in leaves
    )
    dev = jax.devices()[0]
    context = (
        dev.platform,
        getattr(dev, "device_kind", ""),
        str(jax.device_count()),
        os.environ.get("XLA_FLAGS", ""),
        str(unrolled_threefry_applied()),
    )
    source = source_hash(packages)  # lru-cached: the source as read once per process
    memo = (name, static, treedef, raw, source, context)
    try:
        return _key_memo[memo]
    except KeyError:
        pass
    except TypeError:  # an unhashable shape or dtype: computed every time
        memo = None
    avals = [
        (shape, str(dtype)) if sharding is None else (shape, str(dtype), str(sharding))
        for shape, dtype, sharding in raw
    ]
    parts = (name, static, str(treedef), repr(avals), source, *context)
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:40]
    if memo is not None:
        if len(_key_memo) >= _KEY_MEMO_MAX:
            _key_memo.clear()
        _key_memo[memo] = key
    return key


def compiled(
    name: str,
    jitted,
    args: tuple,
    static: dict | None = None,
    static_key: str = "",
    packages: tuple[str, ...] = ("normjax",),
):
    """`jitted` compiled for `args` (and the static keyword arguments `static`), kept whole
    in the executable cache when one is configured; call the result with `args` alone.

    `static_key` names what the program depends on beyond the arguments' structure,
    shapes and dtypes (e.g. the policy by name: a function's identity does not carry
    across processes); the key adds the source of `packages` (`source_hash`), JAX's
    version and the device.  The seconds spent getting programs (loading, or tracing
    and compiling) add up in `cache_stats()["program_s"]`.  Without a configured cache
    directory the executable is only kept in memory.  A file that cannot be read is compiled again and replaced.
    """
    static = dict(static or {})
    key = f"{name}-{_key(name, static_key, args, tuple(packages))}"
    if key in _loaded:
        return _loaded[key]
    t0 = time.perf_counter()
    try:
        exe = _load_or_compile(key, jitted, args, static)
    finally:
        _exe_counts["program_s"] += time.perf_counter() - t0
    _loaded[key] = exe
    return exe


def _device_ids(exe) -> list[int]:
    """The devices a compiled program runs on, in its order.  A loaded program runs on all of
    the process's devices unless told otherwise: with two devices, a program compiled for one
    failed at its first call ("Expected args ... to have 2 shards")."""
    return [d.id for d in exe.runtime_executable().local_devices()]


def _devices(ids: list[int]):
    import jax

    by_id = {d.id: d for d in jax.local_devices()}
    return [by_id[i] for i in ids]  # a KeyError (a device this process lacks) compiles again


def _load_or_compile(key: str, jitted, args: tuple, static: dict):
    from jax.experimental import serialize_executable as se

    path = None if _exe_dir is None else _exe_dir / f"{key}.exe"
    if path is not None and path.exists():
        try:
            payload, device_ids = pickle.loads(zlib.decompress(path.read_bytes()))
            exe = se.deserialize_and_load(*payload, execution_devices=_devices(device_ids))
            _exe_counts["executable_loads"] += 1
            return exe
        except Exception:
            pass
    if path is None:
        return jitted.lower(*args, **static).compile()
    exe = compile_afresh(jitted, args, static)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # one writer per name
        tmp.write_bytes(zlib.compress(pickle.dumps((se.serialize(exe), _device_ids(exe))), 1))
        tmp.replace(path)
        _exe_counts["executable_stores"] += 1
    except Exception:
        pass
    return exe


def persistent() -> bool:
    """Whether compiled programs are kept on disk (a cache directory is configured)."""
    return _exe_dir is not None


def stored(name: str, build, packages: tuple[str, ...] = ("normjax",)):
    """`build()`'s numpy array or dict of arrays, kept on disk beside the executables
    (``<dir>/tables/<name>-<source hash>.npz``) when a cache directory is configured.

    For host-side tables that cost seconds to build (route and scenario tables): a
    repeated command reads them back.  Keyed by the source of `packages`, so a code
    change builds them again; a file that cannot be read is built again and replaced.
    """
    import numpy as np

    if _exe_dir is None:
        return build()
    path = _exe_dir.parent / "tables" / f"{name}-{source_hash(tuple(packages))[:40]}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                items = {k: z[k] for k in z.files}
            return items["__array__"] if set(items) == {"__array__"} else items
        except Exception:
            pass
    value = build()
    items = value if isinstance(value, dict) else {"__array__": value}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.npz")
        np.savez(tmp, **items)
        tmp.replace(path)
    except OSError:  # a read-only cache still gives the table
        pass
    return value


class Program:
    """A jitted function whose programs go through `compiled`: one per argument signature,
    loaded whole from the executable cache when it holds them.  Call it like the function."""

    def __init__(self, name: str, jitted, static_key: str = "", packages: tuple[str, ...] = ("normjax",)):
        self.name, self.jitted, self.static_key, self.packages = name, jitted, static_key, tuple(packages)

    def __call__(self, *args):
        return compiled(self.name, self.jitted, args, static_key=self.static_key, packages=self.packages)(*args)


__all__ = [
    "Program",
    "atomic_cache_writes",
    "cache_stats",
    "compiled",
    "configure_cache",
    "default_cache_dir",
    "persistent",
    "resolve_cache_dir",
    "source_hash",
    "stored",
]
