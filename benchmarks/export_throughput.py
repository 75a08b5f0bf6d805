"""Wall time of `normjax export`: 150 episodes in one call, and the compilation cache.

Everything runs as the real command (`python -m normjax.cli export ...`) in
fresh subprocesses, so the times include Python start-up, imports,
compilation (or loading from the persistent cache), simulation and writing:

* ``many``: `normjax export --norms all --phases interaction seen unseen
  --episodes 0 --policy oracle` (150 episodes with the protocol's seeds: each
  norm's interaction episode and its first seen and unseen test episode), with
  an empty cache directory, then once more with the cache it filled.  A sample
  of the files (every phase) is compared byte for byte with single-episode
  exports of the same episodes.
* ``cache``: one single-episode export (`--norm bend_right_1 --phase seen
  --episode 0 --policy oracle`) twice with a fresh cache directory: the first
  run compiles and writes the cache, the second loads it.

    python -m benchmarks.export_throughput            # about 3-5 minutes on 2 cores
    python -m benchmarks.export_throughput --norms forbidden_zone_q bend_right_1   # quicker

Results: benchmarks/results/export_throughput.json.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import save

ROOT = Path(__file__).resolve().parents[1]

PHASES = ("interaction", "seen", "unseen")
SINGLE = ["--norm", "bend_right_1", "--phase", "seen", "--episode", "0", "--policy", "oracle"]
TARGET_MANY_S = 180.0
TARGET_CACHE_RATIO = 0.25


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NORMJAX_", "JAX_COMPILATION"))}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def normjax(*args) -> tuple[float, str]:
    """Run `normjax ARGS` in a fresh process -> (wall seconds, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "normjax.cli", *map(str, args)], cwd=ROOT, env=_env(), capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"normjax {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}")
    return wall, proc.stdout


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def bench_many(norms: list[str], tmp: Path, sample: int) -> dict:
    """`norms` as given on the command line (``all`` stays ``all``)."""
    cache = tmp / "cache_many"
    args = ["export", "--norms", *norms, "--phases", *PHASES, "--episodes", "0", "--policies", "oracle"]
    cold_s, out = normjax(*args, "--cache-dir", cache, "--out", tmp / "many_cold")
    report = json.loads(out[out.index("{") :])
    warm_s, _ = normjax(*args, "--cache-dir", cache, "--out", tmp / "many_warm")
    if norms == ["all"]:
        from normjax.norms import NORMS

        norms = [n.name for n in NORMS]
    files = sorted((tmp / "many_cold").glob("*.jsonl"))
    same_warm = all(filecmp.cmp(f, tmp / "many_warm" / f.name, shallow=False) for f in files)
    # Byte-identity with single exports: the first `sample` norms, every phase.
    checked = []
    for norm in norms[:sample]:
        for phase in PHASES:
            one = tmp / f"single_{norm}_{phase}.jsonl"
            normjax(
                "export",
                "--norm",
                norm,
                "--phase",
                phase,
                "--episode",
                "0",
                "--policy",
                "oracle",
                "--cache-dir",
                cache,
                "--out",
                one,
            )
            name = f"{norm}.{phase}.ep0.oracle.seed0.jsonl"
            checked.append({"file": name, "identical": filecmp.cmp(one, tmp / "many_cold" / name, shallow=False)})
    return {
        "command": "normjax " + " ".join(args) + " --cache-dir DIR --out DIR",
        "episodes": len(files),
        "cold_cache_wall_s": round(cold_s, 2),
        "warm_cache_wall_s": round(warm_s, 2),
        "exporter_timing_cold": {k: v for k, v in report.items() if k not in ("out", "episodes")},
        "warm_files_identical": same_warm,
        "single_export_checks": checked,
        "target_s": TARGET_MANY_S,
        "meets_target": cold_s < TARGET_MANY_S,
    }


def bench_cache(tmp: Path) -> dict:
    cache = tmp / "cache_single"
    first_s, _ = normjax("export", *SINGLE, "--cache-dir", cache, "--out", tmp / "first.jsonl")
    entries = len(list(cache.iterdir()))
    second_s, _ = normjax("export", *SINGLE, "--cache-dir", cache, "--out", tmp / "second.jsonl")
    nocache_s, _ = normjax("export", *SINGLE, "--no-cache", "--out", tmp / "nocache.jsonl")
    return {
        "command": "normjax export " + " ".join(SINGLE) + " --out FILE",
        "first_s": round(first_s, 2),
        "second_s": round(second_s, 2),
        "no_cache_s": round(nocache_s, 2),
        "ratio_second_to_first": round(second_s / first_s, 3),
        "cache_entries": entries,
        "files_identical": filecmp.cmp(tmp / "first.jsonl", tmp / "second.jsonl", shallow=False),
        "target_ratio": TARGET_CACHE_RATIO,
        "meets_target": second_s / first_s < TARGET_CACHE_RATIO,
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--norms", nargs="+", default=["all"], help="norms of the many-episode export (default all)")
    ap.add_argument("--sample", type=int, default=2, help="norms whose files are checked against single exports")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    payload = {"load_before": load()}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        payload["cache"] = bench_cache(tmp)
        payload["many"] = bench_many(args.norms, tmp, args.sample)
    payload["load_after"] = load()
    c, m = payload["cache"], payload["many"]
    print(
        f"single export, cache: first {c['first_s']:.1f}s, second {c['second_s']:.1f}s "
        f"({100 * c['ratio_second_to_first']:.0f}% of first; target < {100 * TARGET_CACHE_RATIO:.0f}%), "
        f"no cache {c['no_cache_s']:.1f}s, {c['cache_entries']} cache entries"
    )
    print(
        f"{m['episodes']} episodes in one export: {m['cold_cache_wall_s']:.1f}s with an empty cache "
        f"(target < {TARGET_MANY_S:.0f}s), {m['warm_cache_wall_s']:.1f}s with the cache; "
        f"simulate {m['exporter_timing_cold'].get('simulate_s')}s, write {m['exporter_timing_cold'].get('write_s')}s"
    )
    ok = sum(x["identical"] for x in m["single_export_checks"])
    print(
        f"byte-identical to single exports: {ok}/{len(m['single_export_checks'])}; "
        f"warm run wrote the same files: {m['warm_files_identical']}; load {payload['load_before']} -> "
        f"{payload['load_after']}"
    )
    if not args.no_save:
        print(f"wrote {save('export_throughput', payload)}")
    return payload


if __name__ == "__main__":
    main()
