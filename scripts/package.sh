#!/usr/bin/env bash
# Builds the Debian package: a Release build of colo, colod and the fake GPU pieces in its own
# build directory, then `cpack -G DEB`. Prints the .deb's path on the last line.
#   scripts/package.sh [BUILD_DIR]      (default build-pkg)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-pkg}
# The manual pages are made from the programs' --help by help2man: a package without them is not
# built (scripts/install-deps.sh installs it).
command -v help2man >/dev/null || { echo "package.sh: help2man is missing (apt install help2man, or scripts/install-deps.sh)" >&2; exit 1; }
# The prefix the package installs to: the binaries' compiled-in share directory is /usr/share/colo
# (and the private lib/colo, not Debian's multiarch libdir, which GNUInstallDirs picks under /usr).
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=lib \
  -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" --target colo colod colo-fake-job colo_fake_nvml colo_fake_dcgm colo_man
(cd "$dir" && cpack -G DEB >/dev/null)
ls -1t "$dir"/colo_*.deb | head -1 | xargs readlink -f
