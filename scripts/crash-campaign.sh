#!/usr/bin/env bash
# The kill -9 campaign (issue 10, docs/RELIABILITY.md): colod on 2 fake GPUs runs a replay of
# JOBS gated jobs while it is killed KILLS times — on observed state (jobs running, some ending
# while it is down) and inside the launch protocol (a fault point kills it at the N-th
# attempt-committed / shim-spawned / pid-committed / go-sent). Prints jobs lost and run twice;
# exits non-zero if any. The test suite runs the same campaign smaller (60 jobs, 8 kills).
# Usage: scripts/crash-campaign.sh [JOBS=200] [KILLS=50] [SEED=1] [BUILD_DIR=build-test]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-200}
kills=${2:-50}
seed=${3:-1}
build=${4:-build-test}
if [ ! -x "$build/colo_daemon_tests" ]; then
  bash scripts/install-deps.sh
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCOLO_SANITIZE=ON >/dev/null
fi
cmake --build "$build" --target colo_daemon_tests colod colo colo-fake-job
start=$(date +%s)
COLO_CRASH_JOBS=$jobs COLO_CRASH_KILLS=$kills COLO_CRASH_SEED=$seed \
  "$build/colo_daemon_tests" --gtest_filter='ColodCrash.KillNineOnObservedState*' | tee /tmp/crash-campaign.$$.log
rc=${PIPESTATUS[0]}
echo "crash-campaign: seed $seed, $(( $(date +%s) - start )) s wall, $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
grep '^crash-campaign:' /tmp/crash-campaign.$$.log || true
rm -f /tmp/crash-campaign.$$.log
exit "$rc"
