#!/usr/bin/env bash
# The prepared accelerator check: world, environment and DQN-population throughput
# at GPU sizes, in one command (results as JSON in $OUT, else benchmarks/results/device).
#
#   bash benchmarks/device_suite.sh          # on a lent GPU machine, from the repo root
#   QUICK=1 bash benchmarks/device_suite.sh  # tiny sizes: checks the script itself on a CPU
#
# It uses the machine's own JAX, flax, optax, chex and orbax (PYTHONPATH=repo; nothing
# is installed).  Sizes aim at a few minutes on one H200; compile time is reported apart.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NORMJAX_BENCH_RESULTS="${OUT:-benchmarks/results/device}"
PY="${PYTHON:-python3}"
if [[ "${QUICK:-0}" == 1 ]]; then
  WORLD="--batches 8 --steps 5"; ENV="--batches 8 --steps 5"; TRAIN="--norms 2 --chunks 10"; SEEDS=1
else
  WORLD="--batches 4096 65536 262144 --steps 50"; ENV="--batches 4096 65536 --steps 50"
  TRAIN="--chunks 500"; SEEDS=3
fi
"$PY" -c "import jax; print('jax', jax.__version__, jax.devices())"
"$PY" benchmarks/world_throughput.py $WORLD
"$PY" benchmarks/env_throughput.py $ENV
"$PY" benchmarks/train_throughput.py --archs mlp cnn --breakdown $TRAIN
# Each architecture's member of the paper grid: 50 norms x 3 (as many runs as its 3 reward conditions).
"$PY" benchmarks/train_throughput.py --archs mlp cnn $TRAIN --seeds "$SEEDS"
echo "results in $NORMJAX_BENCH_RESULTS"
