"""Environments for the Python subprocesses tests start (training runs, forced devices)."""

from __future__ import annotations

import os

from normjax.testing.pytest_plugin import FAST_COMPILE_FLAG


def xla_flags(devices: int | None = None) -> str:
    """XLA_FLAGS for a child process: this session's compile level (pytest_plugin) and,
    if given, `devices` forced CPU devices.  A child given only a device count would
    compile at XLA's default level, several times slower, and miss the shared cache."""
    flags = [FAST_COMPILE_FLAG]
    if devices is not None:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    return " ".join(flags)


def clean_env(**extra) -> dict:
    """os.environ without JAX_, XLA_ and NORMJAX_ settings, XLA_FLAGS from `xla_flags()`, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "NORMJAX_"))}
    env["XLA_FLAGS"] = xla_flags()
    env.update(extra)
    return env
