"""Transcripts of external-agent runs, and resuming a killed run from them.

Layout of a run directory ``OUT`` (`TranscriptStore`):

    OUT/run.json                                the run's settings (checked on resume)
    OUT/results.json                            the results (`normjax.runtime.runner`)
    OUT/transcripts/<norm>/interaction.jsonl    one file per episode ...
    OUT/transcripts/<norm>/seen_<e>.jsonl       ... e = 0, 1, 2 (protocol order)
    OUT/transcripts/<norm>/unseen_<e>.jsonl
    OUT/transcripts/<norm>/<episode>_frames/frame_<t>.png   frames sent to a VLM
    OUT/transcripts/<norm>/<episode>.jsonl.part             an episode in progress

A finished episode's file is a trajectory file in the export format
(docs/world.md §12, ``"format": "normjax.trajectory/1"``), readable by any
JSON Lines reader, with extras: the header carries ``transcript``
(``"normjax.llm_transcript/1"``), ``name``, ``run`` (model and settings) and
``result`` (the protocol's raw metrics of the episode and its LLM counters:
errors, requests, retries, tokens in and out, the belief and confidence it
ended with, or was given), and every step line carries an ``llm`` object:
whether the model was asked (``queried``; not while the newcomer's WAIT is
forced by service or while it is off the grid), the request ``messages``
(images replaced by their frame file), the raw ``reply``, the parsed
``action`` and the ``executed`` (effective) one, ``error``, ``warnings``,
``reasoning``, ``belief`` and ``confidence`` (interaction: the belief held
after the step), tokens, retries and latency.

While an episode runs, its ``.part`` file receives one ``{"t", "llm"}`` line
per step (a log to inspect a live or crashed run).  The finished file is
written at once, through a temporary file and an atomic rename, so a file
named ``<episode>.jsonl`` is always complete.

**Resume.**  Running again into the same ``OUT`` with the same settings
(`check_run`) skips every episode whose ``.jsonl`` exists and is complete,
and reads its result from the header.  An episode in which most decisions
got no reply from the endpoint is written with ``incomplete: true`` in its
result and is rerun like a missing one (`load` does not return it).
Episodes in progress when the run was killed (``.part`` files, frames) are
discarded and rerun from their first step: the environment is deterministic
per episode, so the rerun sees the same world as long as the model acts the
same.  If a norm's interaction episode is rerun, that norm's finished test
episodes are discarded too (their frozen belief came from the old
interaction).  Norms may be added to an existing run directory; results
always cover the norms requested.

The run's identity (``run.json``) is what it measures, `RUN_KEYS` (prompt
mode, protocol seed, capacity, interaction length, distractor, and for a
normative-module newcomer its kind and module endpoint; a run resumed with
another ``--newcomer`` is refused naming both), which must always match, and the endpoint and sampling, `ENDPOINT_KEYS` (base URL,
model, temperature, token limit and its field, extra request fields), which
must match too unless ``allow_mixed`` is set (``--allow-mixed-endpoint``):
then ``run.json`` lists every endpoint used under ``endpoints``, and each
transcript header names its own.  A directory without a complete episode
takes the new endpoint without the flag (nothing would be mixed).
Concurrency, timeout and retries may always change.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

TRANSCRIPT_FORMAT = "normjax.llm_transcript/1"
RUN_FORMAT = "normjax.llm_run/1"
# Settings that change what an episode is or how the model is prompted.
RUN_KEYS = (
    "text_only",
    "known_norm",
    "seed",
    "capacity",
    "interaction_steps",
    "distractor",
    "distractor_share",
    "newcomer",
    "module_base_url",
    "module_model",
)
# The model behind the run and how it samples: mixed only on request.
ENDPOINT_KEYS = ("base_url", "model", "temperature", "max_tokens", "token_param", "send_temperature", "extra_body")


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_default)


def _default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, (bytes, bytearray)):
        return f"<{len(o)} bytes>"
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


class TranscriptStore:
    """Per-episode transcript files under ``OUT/transcripts`` (see the module docstring)."""

    def __init__(self, out_dir):
        self.out = Path(out_dir)
        self.root = self.out / "transcripts"
        self._parts: dict = {}  # name -> open .part log (opening a file per line and step is slow)

    def path(self, name: str) -> Path:
        return self.root / f"{name}.jsonl"

    def frames_dir(self, name: str) -> Path:
        return self.root / f"{name}_frames"

    def frame_file(self, name: str, t: int) -> tuple[Path, str]:
        """(absolute path, name relative to the transcript's folder) of step t's frame."""
        rel = f"{Path(name).name}_frames/frame_{t:03d}.png"
        return self.path(name).parent / rel, rel

    def load(self, name: str) -> dict | None:
        """The header of a finished, complete episode, or None (incomplete episodes are rerun)."""
        p = self.path(name)
        if not p.exists():
            return None
        with p.open(encoding="utf-8") as f:
            header = json.loads(f.readline())
        if header.get("transcript") != TRANSCRIPT_FORMAT or "result" not in header:
            return None
        return None if header["result"].get("llm", {}).get("incomplete") else header

    def read(self, name: str) -> list[dict]:
        """All records (header, then steps) of a finished episode."""
        with self.path(name).open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def discard(self, name: str) -> None:
        """Remove an episode's files (finished, partial and frames)."""
        self._close(name)
        for p in (self.path(name), self.path(name).with_suffix(".jsonl.part")):
            p.unlink(missing_ok=True)
        shutil.rmtree(self.frames_dir(name), ignore_errors=True)

    def start(self, name: str) -> None:
        """Begin an episode: drop leftovers of an interrupted attempt."""
        self.discard(name)
        self.path(name).parent.mkdir(parents=True, exist_ok=True)

    def append(self, name: str, t: int, llm: dict) -> None:
        """Log one step of an episode in progress (written out by `flush`, `finish` or `close`)."""
        f = self._parts.get(name)
        if f is None:
            f = self._parts[name] = self.path(name).with_suffix(".jsonl.part").open("a", encoding="utf-8")
        f.write(_dumps({"t": t, "llm": llm}) + "\n")

    def flush(self) -> None:
        """Write the logged lines of every open .part file (the runner calls it once per step)."""
        for f in self._parts.values():
            f.flush()

    def _close(self, name: str) -> None:
        f = self._parts.pop(name, None)
        if f is not None:
            f.close()

    def close(self) -> None:
        """Close every open .part log (their lines stay on disk)."""
        for name in list(self._parts):
            self._close(name)

    def finish(self, name: str, records: list[dict]) -> Path:
        """Write the finished episode atomically and drop its .part log."""
        self._close(name)
        p = self.path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for rec in records:
                f.write(_dumps(rec) + "\n")
        os.replace(tmp, p)
        p.with_suffix(".jsonl.part").unlink(missing_ok=True)
        return p

    def episodes(self, prefix: str = "") -> list[str]:
        """Names of finished episodes (``<norm>/<episode>``)."""
        if not self.root.exists():
            return []
        return sorted(
            str(p.relative_to(self.root).with_suffix(""))
            for p in self.root.glob("*/*.jsonl")
            if str(p.relative_to(self.root)).startswith(prefix)
        )


def transcript_records(trajectory: list[dict], llm_steps: dict[int, dict], extra_header: dict) -> list[dict]:
    """Merge `normjax.interop.export.trajectory_records` output with per-step LLM records."""
    header = {**trajectory[0], "transcript": TRANSCRIPT_FORMAT, **extra_header}
    steps = [{**rec, "llm": llm_steps.get(rec["t"])} for rec in trajectory[1:]]
    return [header, *steps]


def _endpoint(settings: dict) -> dict:
    return {k: settings.get(k) for k in ENDPOINT_KEYS}


def check_run(out_dir, settings: dict, resume: bool = True, allow_mixed: bool = False) -> dict | None:
    """Check `settings` against an existing ``OUT/run.json`` (see the module docstring).

    Returns the run.json content to write (`write_run`), or None when nothing
    changes.  Raises ValueError naming the differing settings.  With `resume`
    False an existing run directory is an error.
    """
    out = Path(out_dir)
    p = out / "run.json"
    new = {"format": RUN_FORMAT, **settings, "endpoints": [_endpoint(settings)]}
    if not p.exists():
        return new
    if not resume:
        raise ValueError(f"{out} already holds a run; resume it or choose a new output directory")
    old = json.loads(p.read_text())

    def details(keys):
        return ", ".join(f"{k}: {old.get(k)!r} -> {settings.get(k)!r}" for k in keys)

    was, now = old.get("newcomer") or "memory", settings.get("newcomer") or "memory"
    if was != now:  # absent: the memory newcomer (runs from before the modules)
        raise ValueError(
            f"{out} holds a run started with --newcomer {was}; this command asks for --newcomer {now}. "
            f"Resume it with --newcomer {was}, or use a new output directory"
        )
    diff = [k for k in RUN_KEYS if old.get(k) != settings.get(k)]
    if diff:
        raise ValueError(f"{out} holds a run with other settings ({details(diff)}); use a new output directory")
    diff = [k for k in ENDPOINT_KEYS if old.get(k) != settings.get(k)]
    if not diff:
        return None
    store = TranscriptStore(out)
    if not any(store.load(name) is not None for name in store.episodes()):
        return new  # no complete episode yet: nothing to mix with
    if not allow_mixed:
        raise ValueError(
            f"{out} holds a run with another endpoint or sampling ({details(diff)}); its episodes "
            "would be mixed with this one's. Use a new output directory, or --allow-mixed-endpoint"
        )
    endpoints = old.get("endpoints") or [_endpoint(old)]
    if _endpoint(settings) not in endpoints:
        endpoints = endpoints + [_endpoint(settings)]
    return {**old, "endpoints": endpoints}


def write_run(out_dir, content: dict | None) -> None:
    """Write ``OUT/run.json`` (`check_run`'s result; None writes nothing)."""
    if content is None:
        return
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(content, indent=1))


__all__ = [
    "ENDPOINT_KEYS",
    "RUN_FORMAT",
    "RUN_KEYS",
    "TRANSCRIPT_FORMAT",
    "TranscriptStore",
    "check_run",
    "transcript_records",
    "write_run",
]
