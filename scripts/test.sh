#!/usr/bin/env bash
# The README's second command: install, build with AddressSanitizer+UBSan, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCOLO_SANITIZE=ON -DCOLO_BUILD_BENCH=ON >/dev/null
cmake --build build-test -j "$jobs"
cd build-test
ctest --output-on-failure -j "$jobs"
