#!/usr/bin/env bash
# The README's first command: install, build, and run colo's main job on embedded defaults
# (no GPU needed): the simulator and colod on fake GPUs, as scripts/demo-run.sh says.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
cmake --build build --target colo colod colo-fake-job
bash scripts/demo-run.sh build
