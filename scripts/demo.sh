#!/usr/bin/env bash
# The README's first command: install, build, and run colo's main job on an embedded default:
# a simulated 4×A100-40GB server replaying the 90-task Philly-derived trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
cmake --build build --target colo
data=../shared/data/carma
for policy in exclusive magm; do
  echo "== build/colo sim --policy $policy (4 x A100 40 GiB, philly_mix_90_tasks) =="
  build/colo sim --workloads "$data/workloads.csv" --trace "$data/traces/philly_mix_90_tasks.csv" \
    --gpus 4 --gpu-memory-mib 40960 --policy "$policy" --estimator oracle --sharing mps
done
