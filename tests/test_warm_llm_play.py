"""`normjax llm-eval` and `normjax play` keep their programs whole (normjax/runtime/programs.py).

Default tier: `programs.run` stores a program once, hits it in memory on the next
call, loads it whole after the memo is cleared (a new process), and keys it by the
static arguments and the shapes; `normjax.cache._key`'s memo gives exactly the key
computed without it.  Slow tier: the real commands twice in fresh processes with one
fresh --cache-dir (llm-eval against the fake endpoint of normjax/testing/fake_openai.py, play
driven over HTTP by normjax/testing/play_driver.py): the second run loads every program whole and
writes the same files; llm-eval also equals a run without the cache (the jitted path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import cache
from normjax.runtime import programs

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = re.compile(r"programs: (\d+) loaded whole, (\d+) compiled and stored, ([0-9.]+)s")


@pytest.fixture
def exe_cache(tmp_path, monkeypatch):
    """A fresh executable cache in tmp_path (module state restored by monkeypatch)."""
    monkeypatch.setattr(cache, "_exe_dir", tmp_path / "executables")
    monkeypatch.setattr(cache, "_loaded", {})
    monkeypatch.setattr(cache, "_exe_counts", {"executable_loads": 0, "executable_stores": 0, "program_s": 0.0})
    return tmp_path / "executables"


def _old_key(name, static, args, packages):
    """`normjax.cache._key` computed without its memo (the reference)."""
    import hashlib as h

    from normjax.xla_cpu import unrolled_threefry_applied

    leaves, treedef = jax.tree.flatten(args)
    avals = [
        (tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", type(x).__name__)))
        + (() if getattr(x, "sharding", None) is None else (str(x.sharding),))
        for x in leaves
    ]
    dev = jax.devices()[0]
    parts = (
        name,
        static,
        str(treedef),
        repr(avals),
        cache.source_hash(packages),
        dev.platform,
        getattr(dev, "device_kind", ""),
        str(jax.device_count()),
        os.environ.get("XLA_FLAGS", ""),
        str(unrolled_threefry_applied()),
    )
    return h.sha256("\n".join(parts).encode()).hexdigest()[:40]


def test_key_memo_gives_the_uncached_key(monkeypatch):
    monkeypatch.setattr(cache, "_key_memo", {})
    args = (jnp.zeros((3, 2), jnp.int32), {"a": np.ones(4, np.float32), "b": None}, 7)
    pk = ("normjax",)
    first = cache._key("p", "s=1", args, pk)
    assert first == _old_key("p", "s=1", args, pk) and len(cache._key_memo) == 1
    assert cache._key("p", "s=1", args, pk) == first and len(cache._key_memo) == 1  # a memo hit
    variants = [
        ("s=2", args),  # another static key
        ("s=1", (jnp.zeros((4, 2), jnp.int32),) + args[1:]),  # another shape
        ("s=1", (jnp.zeros((3, 2), jnp.float32),) + args[1:]),  # another dtype
        ("s=1", args[:2]),  # another structure
        ("s=1", (np.zeros((3, 2), np.int32),) + args[1:]),
    ]  # a host array: no placement
    others = [cache._key("p", s, a, pk) for s, a in variants]
    assert len({first, *others}) == 6
    assert others == [_old_key("p", s, a, pk) for s, a in variants]
    monkeypatch.setattr(cache, "source_hash", lambda packages: "changed source")
    assert cache._key("p", "s=1", args, pk) != first  # the source is still part of the key


def test_run_stores_hits_loads_and_keys_programs(exe_cache):
    f = jax.jit(lambda x, *, n: x * n + 1, static_argnames="n")
    x = jnp.arange(4.0)
    stats = lambda: (cache.cache_stats()["executable_stores"], cache.cache_stats()["executable_loads"])
    assert programs.run("t", f, x, n=3).tolist() == f(x, n=3).tolist() == [1.0, 4.0, 7.0, 10.0]
    assert stats() == (1, 0) and len(list(exe_cache.iterdir())) == 1
    (key,) = cache._loaded
    assert key.startswith("llm_t-") and programs.run("t", f, x, n=3).tolist() == [1.0, 4.0, 7.0, 10.0]
    assert stats() == (1, 0) and list(cache._loaded) == [key]  # the second call: the program in memory
    assert programs.run("t", f, x, n=2).tolist() == [1.0, 3.0, 5.0, 7.0]  # another static value
    programs.run("t", f, jnp.arange(5.0), n=3)  # another shape
    assert stats() == (3, 0) and len(cache._loaded) == 3
    cache._loaded.clear()  # as in a new process: loaded whole from the file
    assert programs.run("t", f, x, n=3).tolist() == [1.0, 4.0, 7.0, 10.0] and stats() == (3, 1)
    assert PROGRAMS.fullmatch(programs.programs_line()).group(1, 2) == ("1", "3")


def test_threads_asking_for_one_new_program_compile_it_once(exe_cache):
    """play's sessions (and the runner's worker thread) may ask for a program at the same time."""
    from concurrent.futures import ThreadPoolExecutor

    f = jax.jit(lambda x, *, n: jnp.cumsum(x) * n, static_argnames="n")
    x = jnp.arange(6.0)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: programs.run("threads", f, x, n=2).tolist(), range(8)))
    assert outs == [f(x, n=2).tolist()] * 8
    assert cache.cache_stats()["executable_stores"] == 1 and len(list(exe_cache.iterdir())) == 1


def test_run_without_a_cache_directory_calls_the_jitted_function(exe_cache, monkeypatch):
    monkeypatch.setattr(cache, "_exe_dir", None)
    f = jax.jit(lambda x, *, n: x - n, static_argnames="n")
    assert programs.run("t", f, jnp.arange(3), n=1).tolist() == [-1, 0, 1]
    assert not cache._loaded and cache.cache_stats()["executable_stores"] == 0
    assert programs.programs_line() is None


# ---------------------------------------------------------------------------
# Slow tier: the real commands in fresh processes.

VOLATILE = {
    "latency_s",
    "wall_s",
    "wall_s_total",
    "timing",
    "started",
    "invocations",
    "client",
    "programs",
    "judge_prompts",
    "endpoints",
}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _contents(run: Path) -> dict:
    """Every file of a run directory: JSON without the timing fields, other files by digest."""
    out = {}
    for p in sorted(q for q in run.rglob("*") if q.is_file()):
        b = p.read_bytes()
        if p.suffix == ".json":
            out[str(p.relative_to(run))] = _strip(json.loads(b))
        elif p.suffix == ".jsonl":
            out[str(p.relative_to(run))] = [_strip(json.loads(x)) for x in b.decode().splitlines() if x.strip()]
        else:
            out[str(p.relative_to(run))] = hashlib.sha256(b).hexdigest()
    return out


def _programs(stdout: str) -> tuple[int, int]:
    m = PROGRAMS.search(stdout)
    assert m, stdout[-2000:]
    return int(m[1]), int(m[2])


@pytest.mark.slow
def test_llm_eval_twice_loads_its_programs_whole(tmp_path):
    from normjax.testing.fake_openai import FakeOpenAI, Reply, navigator_text

    cache_dir = tmp_path / "cache"
    runs = {}
    with FakeOpenAI(lambda p, a: Reply(navigator_text(p))) as srv:
        for name, flags in (
            ("cold", ["--cache-dir", cache_dir]),
            ("warm", ["--cache-dir", cache_dir]),
            ("plain", ["--no-cache"]),
        ):
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "normjax.cli",
                    "llm-eval",
                    "--base-url",
                    srv.base_url,
                    "--model",
                    "fake",
                    "--norms",
                    "forbidden_zone_q",
                    "--interaction-steps",
                    "5",
                    "--out",
                    str(tmp_path / name),
                    *map(str, flags),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            runs[name] = proc.stdout
    loaded, stored = _programs(runs["cold"])
    assert loaded == 0 and stored >= 4  # stage starts, observe, advance, render
    assert _programs(runs["warm"]) == (stored, 0)  # every program loaded whole
    assert not PROGRAMS.search(runs["plain"])
    inv = json.loads((tmp_path / "warm" / "invocations.jsonl").read_text().splitlines()[-1])
    assert inv["programs"]["loaded"] == stored and inv["programs"]["compiled"] == 0
    cold = _contents(tmp_path / "cold")
    assert any(k.endswith(".png") for k in cold) and "results.json" in cold  # frames were drawn
    assert cold == _contents(tmp_path / "warm") == _contents(tmp_path / "plain")


@pytest.mark.slow
def test_play_twice_loads_its_programs_whole(tmp_path):
    pytest.importorskip("flask", reason="needs the [play] extra (Flask)")
    from normjax.testing.play_driver import PlayServer, play

    got = {}
    for name in ("cold", "warm"):
        args = [
            "--norms",
            "forbidden_zone_q",
            "--interaction-steps",
            "5",
            "--out",
            tmp_path / name,
            "--cache-dir",
            tmp_path / "cache",
        ]
        with PlayServer(args, tmp_path / "logs") as srv:
            view, turns, frames = play(srv.url, "alice")
            got[name] = (view["table"], turns, frames, _programs(srv.stdout()))
    (c_table, c_turns, c_frames, (loaded, stored)), (w_table, w_turns, w_frames, w_programs) = got["cold"], got["warm"]
    assert loaded == 0 and stored >= 4 and w_programs == (stored, 0)
    assert (c_table, c_turns, c_frames) == (w_table, w_turns, w_frames) and c_turns > 5
    from normjax.play.app import VOLATILE_FILES  # clocks, tokens, the server's pid

    files = lambda run: {
        str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name not in VOLATILE_FILES
    }
    assert files(tmp_path / "cold") == files(tmp_path / "warm")  # byte for byte
