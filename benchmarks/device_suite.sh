#!/usr/bin/env bash
# The prepared accelerator check, one command (benchmarks/README.md, "device_suite.sh"):
#
#   OUT=/some/dir bash benchmarks/device_suite.sh   # on a GPU machine, from the repo root
#   QUICK=1 OUT=/tmp/devq bash benchmarks/device_suite.sh   # tiny sizes: checks the script on a CPU
#
# Parts, most valuable first; each runs under its own time limit and the suite's deadline
# (SUITE_SECONDS, default 480), and a part that fails, times out or finds no time left is
# logged and the next one runs:
#   env_info         jax, devices, and whether the comparison packages import
#   train_cnn        DQN-CNN transitions/s of the 50-norm population (train_throughput.py)
#   cnn_run          a DQN-CNN run sized from that rate to about CNN_TARGET_S (180) seconds
#                    (device_cnn_run.py: all 50 norms, sparse_penalty, paper hyperparameters, K=10)
#   compare          compare.py: normjax full / single-layout / world step beside XLand-MiniGrid
#                    Empty-8x8, R1-9x9 and gymnax CartPole, batches 65536 and 4096, + DQN chunk
#   train_mlp        DQN-MLP transitions/s, 50 runs, with the acting / learning breakdown
#   train_mlp_ab     DQN-MLP's dense and factorised first layer timed alternately in one process
#   train_cnn_parts  the same breakdown for DQN-CNN
#   grid             the paper grid's populations: 50 norms x 3 runs, MLP and CNN
#   world, env       world_throughput.py and env_throughput.py at GPU batch sizes
#
# Output in $OUT (default benchmarks/results/device), at most 5 files:
#   suite.log               everything printed
#   device_results.tar.gz   results/: every part's JSON and plots, suite_parts.jsonl, machine.json
#                           (rewritten after every part, so a killed suite still leaves one)
#   cnn_run.tar.gz          the DQN-CNN run's logs, final tests and figures (no checkpoints)
#   cnn_budget.json         its measured rate, chosen budget, wall time and machine
#   suite_parts.jsonl       one line per part: status, exit code, seconds
# Optional comparison packages travel as wheels in .whl/ at the repo root (installed with
# --no-index into a folder on PYTHONPATH); without them compare.py skips their rows.
{  # read whole before it runs: editing this file during a run cannot change the run
set -uo pipefail  # no -e: every part is independent
cd "$(dirname "$0")/.."
ROOT=$PWD
PY="${PYTHON:-python3}"
QUICK="${QUICK:-0}"
OUT="${OUT:-benchmarks/results/device}"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
WORK="${WORK:-$(mktemp -d /tmp/normjax_device.XXXXXX)}"
RES="$WORK/results"
mkdir -p "$RES"
export NORMJAX_BENCH_RESULTS="$RES" PYTHONUNBUFFERED=1
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
exec > >(tee -a "$OUT/suite.log") 2>&1

if [[ "$QUICK" == 1 ]]; then
  BUDGET_S="${SUITE_SECONDS:-3600}"; CNN_TARGET_S="${CNN_TARGET_S:-60}"
  NORMS=2; CHUNKS=10; SEEDS=2
  CNN_ARGS=(--steps 2000 probe_states=64)
  COMPARE=(--batches 8 --steps 5 --repeats 1 --skip-train
           --envs normjax-full-static normjax-world xland-empty-8x8 xland-r1-9x9 gymnax-cartpole)
  WORLD=(--batches 8 --steps 5); ENV=(--batches 8 --steps 5)
else
  BUDGET_S="${SUITE_SECONDS:-480}"; CNN_TARGET_S="${CNN_TARGET_S:-180}"
  NORMS=50; CHUNKS=500; SEEDS=3
  CNN_ARGS=()
  # 65536 first: if the deadline cuts compare short, the GPU-sized rows are the ones kept.
  # --no-step-cost: the count for one more step compiles every program twice; the
  # part's time budget is for the throughput.
  COMPARE=(--batches 65536 4096 --steps 50 --repeats 3 --train-chunks 100 --no-step-cost
           --envs normjax-full normjax-full-static normjax-world xland-empty-8x8 xland-r1-9x9 gymnax-cartpole)
  WORLD=(--batches 65536 --steps 50); ENV=(--batches 262144 --steps 20 --max-env-steps 100000000)
fi
MIN_PART_S=20

pack() {  # the results folder as one tarball in $OUT (replaced atomically)
  tar -czf "$OUT/device_results.tar.gz.tmp" -C "$WORK" results && mv -f "$OUT/device_results.tar.gz.tmp" "$OUT/device_results.tar.gz"
  cp -f "$RES/suite_parts.jsonl" "$OUT/suite_parts.jsonl" 2>/dev/null || true
}

record() {  # record NAME STATUS RC SECONDS LIMIT
  printf '{"part": "%s", "status": "%s", "rc": %s, "seconds": %s, "limit_s": %s, "at_s": %s}\n' \
    "$1" "$2" "$3" "$4" "$5" "$SECONDS" >> "$RES/suite_parts.jsonl"
}

limit_for() {  # limit_for CAP: seconds a part may take (its cap, or what is left of the suite)
  local left=$(( BUDGET_S - SECONDS ))
  echo $(( $1 < left ? $1 : left ))
}

part() {  # part NAME CAP COMMAND...: run COMMAND under a time limit; log, record, pack; never abort the suite
  local name=$1 limit; limit=$(limit_for "$2"); shift 2
  if (( limit < MIN_PART_S )); then
    echo "=== $name: SKIPPED (${limit}s left of the suite's ${BUDGET_S}s)"
    record "$name" skipped null 0 "$limit"; pack; return 99
  fi
  echo "=== $name (limit ${limit}s; suite at ${SECONDS}s of ${BUDGET_S}s)"
  echo "\$ $*"
  local t0=$SECONDS rc status
  timeout -k 10 "$limit" "$@"; rc=$?
  case $rc in 0) status=ok ;; 124|137) status=timeout ;; *) status=failed ;; esac
  echo "=== $name: $status (exit $rc, $(( SECONDS - t0 ))s)"
  record "$name" "$status" "$rc" "$(( SECONDS - t0 ))" "$limit"; pack
  return $rc
}

echo "normjax device suite: QUICK=$QUICK, deadline ${BUDGET_S}s, OUT=$OUT, work folder $WORK, $(date -u +%FT%TZ)"
: > "$RES/suite_parts.jsonl"

# Optional comparison packages (xminigrid, gymnax and what they need) shipped as wheels.
if compgen -G ".whl/*.whl" > /dev/null; then
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" .whl/*.whl; then
    export PYTHONPATH="$WORK/site:$PYTHONPATH"
    echo "installed $(ls .whl | tr '\n' ' ')into $WORK/site"
  elif "$PY" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \
      "$WORK/site" .whl/*.whl; then  # no pip: pure-Python wheels are zip files of the installed tree
    export PYTHONPATH="$WORK/site:$PYTHONPATH"
    echo "pip install failed; unpacked $(ls .whl | tr '\n' ' ')into $WORK/site"
  else
    echo "wheel install failed: compare.py will skip the packages it cannot import"
  fi
else
  echo "no .whl/ folder: compare.py will skip the packages it cannot import"
fi

part env_info 90 "$PY" - <<'EOF'
import json, os, platform, sys
import jax
info = {"python": platform.python_version(), "jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
        "device_kind": jax.devices()[0].device_kind, "cpu_count": os.cpu_count()}
import jaxlib, normjax
info["jaxlib"] = jaxlib.__version__
info["normjax_from"] = os.path.dirname(normjax.__file__)
for mod in ("xminigrid", "gymnax", "flax", "optax", "orbax.checkpoint"):
    try:
        m = __import__(mod, fromlist=["_"])
        info[mod] = getattr(m, "__version__", "imported")
    except Exception as e:
        info[mod] = f"unavailable: {type(e).__name__}: {e}"
print(json.dumps(info, indent=1))
open(os.path.join(os.environ["NORMJAX_BENCH_RESULTS"], "machine.json"), "w").write(json.dumps(info, indent=2))
EOF

TRAIN=(--chunks "$CHUNKS" --norms "$NORMS")
part train_cnn 180 "$PY" -m benchmarks.train_throughput --archs cnn "${TRAIN[@]}"

# The DQN-CNN run: sized from the rate just measured (skipped when there is none).
if grep -q '"arch": "cnn"' "$RES/train_throughput.json" 2>/dev/null; then
  lim=$(limit_for $(( CNN_TARGET_S + 120 )))
  target=$(( CNN_TARGET_S < lim - 30 ? CNN_TARGET_S : lim - 30 ))
  part cnn_run $(( CNN_TARGET_S + 120 )) "$PY" -m benchmarks.device_cnn_run \
    --throughput "$RES/train_throughput.json" --norms "$NORMS" --run-dir "$WORK/cnn_run" \
    --tar "$OUT/cnn_run.tar.gz" --budget-json "$OUT/cnn_budget.json" --timeout $(( lim - 20 )) \
    --target "$target" "${CNN_ARGS[@]}"
else
  echo "=== cnn_run: SKIPPED (no DQN-CNN throughput measured)"; record cnn_run skipped null 0 0; pack
fi

part compare 240 "$PY" -m benchmarks.compare "${COMPARE[@]}" --results "$RES"
part train_mlp 180 "$PY" -m benchmarks.train_throughput --archs mlp --breakdown "${TRAIN[@]}"
part train_mlp_ab 120 "$PY" -m benchmarks.train_throughput --ab-rounds 3 "${TRAIN[@]}"
part train_cnn_parts 150 "$PY" -m benchmarks.train_throughput --archs cnn --breakdown-only "${TRAIN[@]}"
# Each architecture's member of the paper grid: 50 norms x 3 (as many runs as its 3 reward conditions).
part grid 200 "$PY" -m benchmarks.train_throughput --archs mlp cnn "${TRAIN[@]}" --seeds "$SEEDS"
part world 120 "$PY" -m benchmarks.world_throughput "${WORLD[@]}"
part env 120 "$PY" -m benchmarks.env_throughput "${ENV[@]}"

pack
echo "=== done in ${SECONDS}s; parts:"
cat "$RES/suite_parts.jsonl"
echo "files in $OUT:"
ls -la "$OUT"
# Exit 1 when a part failed, timed out or was skipped (the results of the others are in $OUT).
! grep -qv '"status": "ok"' "$RES/suite_parts.jsonl"
exit
}
