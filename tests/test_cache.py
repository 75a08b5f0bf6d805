"""The `normjax` command's persistent compilation cache (normjax.cache).

A tiny command (`normjax rollout --steps 2`) runs in fresh subprocesses: the
first run writes cache entries, the second identical run loads every program
from them (JAX's own cache-hit events, counted by `normjax.cache.cache_stats`)
and writes nothing; `--no-cache` / `NORMJAX_NO_CACHE=1` leave the directory empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normjax.cache import default_cache_dir, resolve_cache_dir

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ("import json, sys\nfrom normjax.cli import main\nfrom normjax.cache import cache_stats\n"
          "rc = main(sys.argv[1:])\nprint(json.dumps(dict(rc=rc, **cache_stats())))\n")


def _run(tmp_path, *flags, **env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "NORMJAX_", "XLA_"))}
    env.update(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_extra)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, "rollout", "--steps", "2", *flags], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["rc"] == 0
    return stats


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


def test_second_run_loads_from_cache(tmp_path):
    default = tmp_path / "xdg" / "normjax" / "jax"
    first = _run(tmp_path)  # the default directory under XDG_CACHE_HOME
    written = _files(default)
    assert first["writes"] > 0 and len(written) >= first["writes"]
    assert all(name.endswith("-cache") for name in written)
    second = _run(tmp_path, NORMJAX_CACHE_DIR=str(default))  # the same directory, named by the env
    assert second["lookups"] == first["lookups"] > 0
    assert second["hits"] == second["lookups"] and second["writes"] == 0
    assert _files(default) == written


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_cache_leaves_directory_empty(tmp_path, how):
    d = tmp_path / "cache"
    if how == "flag":
        stats = _run(tmp_path, "--no-cache", "--cache-dir", str(d))
    else:
        stats = _run(tmp_path, NORMJAX_NO_CACHE="1", NORMJAX_CACHE_DIR=str(d))
    assert stats["lookups"] == stats["hits"] == stats["writes"] == 0
    assert not _files(d) and not _files(tmp_path / "xdg" / "normjax" / "jax")
