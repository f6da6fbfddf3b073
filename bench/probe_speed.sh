#!/usr/bin/env bash
# Speed of the CPU-only probe (issue 13 item 6): ResNet-50, batch 128, Adam, two iterations.
# Prints, per run, the probe's own time (build the model on the meta device + record two iterations +
# write the trace: the footer's "seconds") and the whole process' wall time (Python start-up and
# `import torch, torchvision` included), then the medians.
#   bash bench/probe_speed.sh [RUNS] [MODEL] [BATCH]
# MODEL `script` probes bench/resnet50_train.py, an ordinary training script, through --script.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
model=${2:-torchvision:resnet50}
batch=${3:-128}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
probe=() wall=()
for _ in $(seq "$runs"); do
  t0=$(date +%s.%N)
  if [[ $model == script ]]; then
    PYTHONPATH=python /usr/bin/python3 -m colo_probe --out "$out" --script bench/resnet50_train.py --batch-size "$batch" 2>/dev/null
  else
    PYTHONPATH=python /usr/bin/python3 -m colo_probe --model "$model" --batch "$batch" --optimizer adam --out "$out"
  fi
  t1=$(date +%s.%N)
  probe+=("$(tail -1 "$out" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read()[2:])["seconds"])')")
  wall+=("$(echo "$t1 - $t0" | bc -l)")
done
/usr/bin/python3 - "${probe[*]}" "${wall[*]}" "$model" "$batch" <<'PY'
import statistics, sys
probe = [float(x) for x in sys.argv[1].split()]
wall = [float(x) for x in sys.argv[2].split()]
print(f"{sys.argv[3]} batch {sys.argv[4]} adam, {len(probe)} runs")
print(f"  probe (build + 2 iterations + trace): median {statistics.median(probe):.3f} s  min {min(probe):.3f}  max {max(probe):.3f}")
print(f"  process wall (incl. import torch):    median {statistics.median(wall):.3f} s  min {min(wall):.3f}  max {max(wall):.3f}")
PY
