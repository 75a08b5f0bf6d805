"""What a result records about the protocol it ran beyond its settings: the scenario tables' hash
and the code version, so that `normjax table` can tell results of different test scenarios apart
(docs/results.md, "Table 1 with uncertainty")."""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

from normjax.constants import VERSION
from normjax.protocol.scenario_tables import host_scenarios

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def scenario_hash() -> str:
    """sha256 (first 16 hex digits) of every scenario table: name, dtype, shape and bytes."""
    h = hashlib.sha256()
    for name, table in sorted(host_scenarios().items()):
        h.update(f"{name}|{table.dtype.str}|{table.shape}|".encode())
        h.update(table.tobytes())
    return h.hexdigest()[:16]


@functools.cache
def code_version() -> str:
    """The package version and, in a git checkout, the commit (informative: not compared)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{VERSION}+{commit}" if commit else VERSION


def protocol_stamp() -> dict:
    return dict(scenario_hash=scenario_hash(), code_version=code_version())


__all__ = ["code_version", "protocol_stamp", "scenario_hash"]
