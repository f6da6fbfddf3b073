#!/usr/bin/env bash
# The README's second command: install, build with AddressSanitizer+UBSan, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Run as root, the daemon and Slurm tests submit jobs as `nobody`, and those jobs run this build's
# colo, fake jobs and probe package. A clone nobody can reach (under /root, which is 0700) is
# then seen through a bind mount at a path every user can traverse, in a mount namespace of the
# tests' own: the mount goes with them, and nothing on the host changes (no permission on /root).
view=/run/colo-test/colo
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
  nobody_can() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" 2>/dev/null; }
  if [ "$PWD" != "$view" ] && ! nobody_can test -x "$PWD"; then
    mkdir -p "$view"
    chmod 0755 /run/colo-test
    # Tried first as the run will do it (a namespace, then the mount), to fall back if either is refused.
    if why=$(unshare --mount --propagation private mount --bind "$PWD" "$view" 2>&1); then
      echo "test.sh: user nobody cannot reach $PWD; the tests see it as $view (a private bind mount)"
      exec unshare --mount --propagation private bash -c 'mount --bind "$1" "$2" && cd "$2" && exec bash scripts/test.sh' \
        test.sh "$PWD" "$view"
    fi
    echo "test.sh: warning: user nobody cannot reach $PWD, and no private bind mount can be made here" \
      "(${why:-unshare failed}): the tests whose jobs run as nobody will fail; clone where every user can reach" >&2
  elif ! nobody_can test -r python/colo_probe/__main__.py; then
    echo "test.sh: user nobody cannot read this clone's files (cloned under umask $(umask)?): the daemon" \
      "tests run its jobs as nobody; clone with umask 022" >&2
    exit 2
  fi
fi

bash scripts/install-deps.sh
jobs=$(nproc)
# A build tree configured from another path (the clone moved, or was first tested from where
# nobody could reach it) cannot be reused by CMake: configure it anew.
if [ -f build-test/CMakeCache.txt ] &&
  ! grep -qxF "CMAKE_CACHEFILE_DIR:INTERNAL=$PWD/build-test" build-test/CMakeCache.txt &&
  ! grep -qxF "CMAKE_CACHEFILE_DIR:INTERNAL=$(pwd -P)/build-test" build-test/CMakeCache.txt; then
  echo "test.sh: build-test was configured from another path; configuring it anew"
  rm -rf build-test
fi
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCOLO_SANITIZE=ON -DCOLO_BUILD_BENCH=ON >/dev/null
cmake --build build-test -j "$jobs"
cd build-test
ctest --output-on-failure -j "$jobs"
