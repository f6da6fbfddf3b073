#!/usr/bin/env bash
# Fits the trace estimator's constants on the GPUMemNet train split and scores them on the test
# split (docs/ESTIMATION.md, "Calibration of the trace estimator"):
#   1. probes every GPUMemNet row (python3 -m colo_probe.gpumemnet; ~2.5 min on 2 cores),
#   2. colo estimate calibrate --estimator trace: MLP rows (max 2 % under), then CNN rows,
#   3. colo estimate eval on the held-out test split.
# Usage: scripts/trace-calibrate.sh [TRACE_DIR] [CNN_MAX_UNDER_RATE]   (defaults /tmp/colo-gmn-traces, 0.15)
# COLO=PATH: the colo binary (default build/colo). It rewrites calibration/a100-40gb.json and its
# fit reports in place (git diff shows what moved).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/colo-gmn-traces}
cnn_under=${2:-0.15}
data=data/gpumemnet
python=${COLO_PYTHON:-/usr/bin/python3}
colo=${COLO:-build/colo}
[ -x "$colo" ] || { echo "trace-calibrate: $colo is missing: build it first (README)" >&2; exit 2; }
for kind in cnn mlp; do
  if [ ! -s "$dir/$kind/index.jsonl" ]; then
    PYTHONPATH=python "$python" -m colo_probe.gpumemnet --csv "$data/$kind.csv" --kind "$kind" --out-dir "$dir/$kind"
  fi
done
"$colo" estimate calibrate --dataset "$data/mlp.csv" --format gpumemnet-mlp --split train --estimator trace \
  --traces "$dir/mlp" --max-under-rate 0.02
"$colo" estimate calibrate --dataset "$data/cnn.csv" --format gpumemnet-cnn --split train --estimator trace \
  --traces "$dir/cnn" --max-under-rate "$cnn_under"
for kind in mlp cnn; do
  "$colo" estimate eval --dataset "$data/$kind.csv" --format "gpumemnet-$kind" --estimator trace --traces "$dir/$kind" --split test
done
