#!/usr/bin/env bash
# The README's first command: install, build, and run colo's main job on embedded defaults
# (no GPU needed):
#  1. the simulator: a 4×A100-40GB server replaying the 90-task Philly-derived trace, exclusive
#     vs MAGM+MPS with oracle estimates, through the same scheduler core colod runs;
#  2. the daemon: colod on two fake 40 GiB GPUs (in-tree fake NVML), fake training jobs submitted,
#     shown running and collocated (colo queue, colo gpus), then drained.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
cmake --build build --target colo colod colo-fake-job
data=data/carma
mkdir -p out  # report pages (open them in a browser): out/sim-*.html, out/colod-report.html
for policy in exclusive magm; do
  echo "== build/colo sim --policy $policy --estimator oracle --sharing mps (4 x A100 40 GiB, philly_mix_90_tasks)"
  build/colo sim --workloads "$data/workloads.csv" --trace "$data/traces/philly_mix_90_tasks.csv" \
    --gpus 4 --gpu-memory-mib 40960 --policy "$policy" --estimator oracle --sharing mps \
    --report "out/sim-$policy.html"
done
echo
bash scripts/daemon-demo.sh build
