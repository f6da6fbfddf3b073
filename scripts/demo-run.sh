#!/usr/bin/env bash
# The README's first command after its install and build (scripts/demo.sh): colo's main job on
# embedded defaults, no GPU needed.
#  1. the simulator: a 4×A100-40GB server replaying the 90-task Philly-derived trace, exclusive
#     vs MAGM+MPS with oracle estimates, through the same scheduler core colod runs;
#  2. the daemon: colod on two fake 40 GiB GPUs (in-tree fake NVML), fake training jobs submitted,
#     shown running and collocated (colo queue, colo gpus), then finished (scripts/daemon-demo.sh).
# Usage: scripts/demo-run.sh [BUILD_DIR] (default: the repository's build/). Report pages go to
# $COLO_DEMO_OUT (default: the repository's out/); relative paths are the caller's. ctest's
# demo_smoke runs it on the test build.
set -euo pipefail
demo_name=demo
source "$(dirname "$0")/demo-paths.sh"  # repo, build, out; checks the build's binaries
data=data/carma
mkdir -p "$out"  # report pages (open them in a browser): sim-*.html, colod-report.html
for policy in exclusive magm; do
  echo "== $build/colo sim --policy $policy --estimator oracle --sharing mps (4 x A100 40 GiB, philly_mix_90_tasks)"
  "$build/colo" sim --workloads "$data/workloads.csv" --trace "$data/traces/philly_mix_90_tasks.csv" \
    --gpus 4 --gpu-memory-mib 40960 --policy "$policy" --estimator oracle --sharing mps \
    --report "$out/sim-$policy.html"
done
echo
COLO_DEMO_OUT=$out bash scripts/daemon-demo.sh "$build"
