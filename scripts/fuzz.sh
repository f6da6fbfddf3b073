#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, Clang 14 + ASan + UBSan) in their own build directory and
# runs each for a bounded time:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR]      defaults: 30, build-fuzz
#
# For every target it first replays fuzz/regressions/<target>/* (every crash found so far), then
# fuzzes a fresh copy of fuzz/corpus/<target>/ for SECONDS_PER_TARGET. It exits non-zero when any
# input crashes, leaks, times out (>10 s) or exceeds 2 GiB, printing the reproducer's path
# (replay it with BUILD_DIR/fuzz/<target>_fuzz PATH). A reproducer belongs in
# fuzz/regressions/<target>/ once the parser is fixed (tests/fuzz/ replays those in the GCC build).
#
# Environment: FUZZ_TARGETS="keras job_file" runs a subset; JOBS (default: nproc) build jobs;
# FUZZ_JOBS (default: JOBS) targets fuzzed at once, one core each;
# FUZZ_SEED=N fixes libFuzzer's seed (default: a new one each run); FUZZ_RUNS=N fuzzes N inputs
# per target instead of SECONDS_PER_TARGET.
# `ctest -R fuzz_smoke` runs FUZZ_SEED=1 FUZZ_RUNS=60000: (nearly) the same inputs on every run and
# machine — not bit-for-bit, as a target's coverage can depend on its temporary path — so the gate
# does not turn red by the luck of a new random seed or the speed of the machine; open-ended
# campaigns (run them after parser changes) keep random seeds and time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-30}
build=${2:-build-fuzz}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
jobs=${JOBS:-$(nproc)}
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, not '$secs'" >&2; exit 2; }
fuzz_jobs=${FUZZ_JOBS:-$jobs}
[[ "$fuzz_jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_JOBS must be a positive whole number, not '$fuzz_jobs'" >&2; exit 2; }

# Clang 14 with libFuzzer's runtime (install-deps.sh installs them on a fresh machine).
# The status is read whole, then compared: `| grep -q` would end the pipe early (SIGPIPE under pipefail).
if ! command -v clang++-14 >/dev/null || [ "$(dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null || true)" != "install ok installed" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "fuzz.sh: installing clang-14 libclang-rt-14-dev (apt)"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null; }; then
    echo "fuzz.sh: FAILED: the fuzz targets need clang-14 and libclang-rt-14-dev; run scripts/install-deps.sh as root" >&2
    exit 1
  fi
fi

# -O1 with line tables only, as libFuzzer's documentation builds targets: reproducers still get
# file:line stack traces, and the build takes about a fifth less time than -O2 -g
# (docs/PERFORMANCE.md, "The test command"). NDEBUG as before (Eigen's assertions are slow to build).
fuzz_flags="-O1 -gline-tables-only -DNDEBUG"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$fuzz_flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$fuzz_flags" \
  -DCOLO_BUILD_FUZZ=ON -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target colo_fuzz

targets=${FUZZ_TARGETS:-$(cat "$build/fuzz/targets.txt")}
work="$build/fuzz-work"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
flags=(-rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
seed=${FUZZ_SEED:-}
runs=${FUZZ_RUNS:-}
[ -z "$seed" ] || [[ "$seed" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: FUZZ_SEED must be a whole number, not '$seed'" >&2; exit 2; }
[ -z "$runs" ] || [[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_RUNS must be a positive whole number, not '$runs'" >&2; exit 2; }
[ -n "$seed" ] && flags+=(-seed="$seed")
bound=(-max_total_time="$secs")
[ -n "$runs" ] && bound=(-runs="$runs")
TIMEFORMAT='%U %S'
# Each target runs alone in fuzz_one (its own directory under $work): its messages go to
# $work/$t/messages, its report line to $work/$t/report, a failure to $work/$t/failed. Up to
# FUZZ_JOBS targets (default: JOBS) run at once, each fuzzing on one core; what they found is
# printed afterwards in target order, so the output does not depend on which finished first.
fuzz_one() {
  local t=$1 bin="$build/fuzz/${1}_fuzz" cpu=0 rc=0 u s execs
  local dict=() regs=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  exec 2>"$work/$t/messages"

  # 1. Every known reproducer, once each.
  if [ -d "fuzz/regressions/$t" ]; then
    while IFS= read -r -d '' f; do regs+=("$f"); done < <(find "fuzz/regressions/$t" -type f ! -name '*.md' -print0 | sort -z)
  fi
  if [ ${#regs[@]} -gt 0 ]; then
    if ! { time "$bin" "${flags[@]}" -artifact_prefix="$work/$t/artifacts/" "${regs[@]}" >"$work/$t/regressions.log" 2>&1; } 2>"$work/$t/regressions.time"; then
      echo "fuzz.sh: $t: a regression input fails again:" >&2
      grep -E "^Running: |ERROR|SUMMARY|colo fuzz" "$work/$t/regressions.log" | tail -n 8 >&2 || true
      echo "$t (regression; log $work/$t/regressions.log)" >>"$work/$t/failed"
    fi
    read -r u s <"$work/$t/regressions.time"
    cpu=$(awk -v a="$cpu" -v b="$u" -v c="$s" 'BEGIN{print a+b+c}')
  fi

  # 2. Bounded fuzzing on a copy of the seed corpus.
  [ -d "fuzz/corpus/$t" ] && cp -r "fuzz/corpus/$t/." "$work/$t/corpus/"
  { time "$bin" "${flags[@]}" "${dict[@]}" "${bound[@]}" -artifact_prefix="$work/$t/artifacts/" \
      "$work/$t/corpus" >"$work/$t/fuzz.log" 2>&1; } 2>"$work/$t/fuzz.time" || rc=$?
  read -r u s <"$work/$t/fuzz.time"
  cpu=$(awk -v a="$cpu" -v b="$u" -v c="$s" 'BEGIN{print a+b+c}')
  execs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$work/$t/fuzz.log" | awk '{print $2}' | tail -n 1 || true)
  printf '%-20s %8.1f CPU-s %10s execs\n' "$t" "$cpu" "${execs:-?}" >"$work/$t/report"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: $t: FOUND A FAILURE (exit $rc):" >&2
    grep -E "ERROR|SUMMARY|colo fuzz|uncaught|deadly signal" "$work/$t/fuzz.log" | head -n 6 >&2 || true
    for a in "$work/$t/artifacts"/*; do
      [ -e "$a" ] && echo "fuzz.sh:   reproducer: $a   (replay: $bin $a)" >&2
    done
    echo "$t (log $work/$t/fuzz.log)" >>"$work/$t/failed"
  fi
  return 0
}

for t in $targets; do
  [ -x "$build/fuzz/${t}_fuzz" ] || { echo "fuzz.sh: no fuzz target '$t' ($build/fuzz/${t}_fuzz)" >&2; exit 2; }
done
running=0
for t in $targets; do
  rm -rf "${work:?}/$t"
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  if [ "$running" -ge "$fuzz_jobs" ]; then
    wait -n || true  # a target that stopped early has no report: found below
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

failed=()
total_cpu=0
report=()
for t in $targets; do
  [ -s "$work/$t/messages" ] && cat "$work/$t/messages" >&2
  if [ -f "$work/$t/report" ]; then
    report+=("$(cat "$work/$t/report")")
    total_cpu=$(awk -v a="$total_cpu" -v b="$(awk '{print $2}' "$work/$t/report")" 'BEGIN{print a+b}')
  else
    echo "$t (fuzz.sh stopped before its report; see $work/$t/messages)" >>"$work/$t/failed"
  fi
  if [ -f "$work/$t/failed" ]; then
    while IFS= read -r l; do failed+=("$l"); done <"$work/$t/failed"
  fi
done

if [ -n "$runs" ]; then echo "fuzz.sh: $runs inputs per target, seed ${seed:-random}"; else echo "fuzz.sh: ${secs}s per target, seed ${seed:-random}"; fi
for l in "${report[@]}"; do echo "  $l"; done
printf '  %-20s %8.1f CPU-s\n' total "$total_cpu"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no crashes"
