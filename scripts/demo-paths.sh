# Sourced by scripts/demo-run.sh and scripts/daemon-demo.sh (not run on its own): sets repo,
# build (${1:-$repo/build}) and out (${COLO_DEMO_OUT:-$repo/out}) as absolute paths resolved from
# the caller's directory, then enters the repository; refuses a build without colo, colod and
# colo-fake-job (building in place would hide a wrong BUILD_DIR). $demo_name names the caller.
: "${demo_name:?set demo_name before sourcing demo-paths.sh}"
repo=$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "${1:-$repo/build}")
out=$(realpath -m "${COLO_DEMO_OUT:-$repo/out}")
cd "$repo"
for bin in colo colod colo-fake-job; do
  [ -f "$build/$bin" ] && [ -x "$build/$bin" ] || { echo "$demo_name: $build/$bin: not built (scripts/demo.sh builds it)" >&2; exit 1; }
done
