#!/usr/bin/env bash
# A repeatable sweep of bad inputs against every input surface of colo and colod.
#
#   scripts/bad-inputs.sh [BUILD_DIR]        (default build-test; the ASan+UBSan build)
#
# Environment: COLO_DATA (default the repository's data/), BAD_INPUTS_TIMEOUT
# (seconds per case, default 30), BAD_INPUTS_VERBOSE=1 (print every case, not only failures),
# BAD_INPUTS_ONLY="sweep_toml sweep_api" (run only these surfaces; the names are the sweep_*
# functions below; the published numbers come from a run of all of them).
#
# The quality bar: a bad input (flags, job files, model summaries, CSV rows, API requests,
# numbers at the edges of their type) gets a clear ONE-LINE error naming the problem, never a
# crash and never a silent acceptance. Every case below is wrong in exactly one way (the rest of
# the command line is a valid baseline, checked first), and is classified by running it:
#
#   clear      exit 1..127, stderr is exactly one non-empty line, no sanitizer report
#              (API: HTTP 4xx with a JSON body {"error": "<one line>"})
#   multi      non-zero exit, but the message is more than one line
#   no-msg     non-zero exit with an empty stderr (API: 4xx without a one-line JSON error,
#              or the connection closed without any response)
#   crash      exit >= 128 (a signal), a sanitizer report (AddressSanitizer, LeakSanitizer,
#              "runtime error:") in the output or in colod's log, a timeout, colod dying,
#              an "internal error" (an exception other than colo's UserError reached main),
#              or HTTP 5xx other than 501/505 (which RFC 9110 prescribes for an unsupported
#              Transfer-Encoding / HTTP version: with a one-line JSON error they count as clear)
#   silent     exit 0 (API: HTTP 2xx): the bad input was accepted
#
# One line is printed per case that is not "clear", then a table per surface. The exit status
# is 1 if any case crashed or was silently accepted, 0 otherwise (2: the sweep could not run).
# Everything is created under one mktemp directory, removed at exit together with the colod
# this script starts.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build-test}"
[[ "$build" = /* ]] || build="$root/$build"
colo="$build/colo"
colod="$build/colod"
data="${COLO_DATA:-$root/data}"
carma="$data/carma"
case_timeout="${BAD_INPUTS_TIMEOUT:-30}"
verbose="${BAD_INPUTS_VERBOSE:-0}"

for b in "$colo" "$colod"; do
  [[ -x "$b" ]] || { echo "bad-inputs: $b is not built" >&2; exit 2; }
done
for f in "$carma/workloads.csv" "$carma/traces/philly_mix_90_tasks.csv" "$carma/summaries/resnet50_32.model" \
         "$carma/summaries/BERT_base.model" "$carma/rad/resnet.rad" "$data/gpumemnet/cnn.csv" "$data/gpumemnet/mlp.csv"; do
  [[ -r "$f" ]] || { echo "bad-inputs: missing input $f (set COLO_DATA)" >&2; exit 2; }
done

work="$(mktemp -d /tmp/colo-bad-inputs-XXXXXX)"
state="$work/state"
sock="$state/colo.sock"
colod_log="$work/colod.log"
colod_pid=""

cleanup() {
  if [[ -n "$colod_pid" ]]; then
    kill "$colod_pid" 2>/dev/null
    wait "$colod_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Accepted jobs run from here and accepted `--out` files land here, never in the repository.
cd "$work" || exit 2

# ---------------------------------------------------------------------------------------------
# Bookkeeping
# ---------------------------------------------------------------------------------------------
surfaces=()           # in the order first seen
declare -A n_tried n_clear n_multi n_nomsg n_crash n_silent n_accepted n_refused
failures=()           # one printable line per case that is not "clear"

sanitizer_re='AddressSanitizer|LeakSanitizer|runtime error:'

# record SURFACE CASE VERDICT DETAIL MESSAGE
record() {
  local surface=$1 name=$2 verdict=$3 detail=$4 msg=$5
  if [[ -z "${n_tried[$surface]+x}" ]]; then
    surfaces+=("$surface")
    n_tried[$surface]=0 n_clear[$surface]=0 n_multi[$surface]=0 n_nomsg[$surface]=0 n_crash[$surface]=0 n_silent[$surface]=0
    n_accepted[$surface]=0 n_refused[$surface]=0
  fi
  n_tried[$surface]=$((n_tried[$surface] + 1))
  case "$verdict" in
    clear) n_clear[$surface]=$((n_clear[$surface] + 1)) ;;
    multi) n_multi[$surface]=$((n_multi[$surface] + 1)) ;;
    no-msg) n_nomsg[$surface]=$((n_nomsg[$surface] + 1)) ;;
    crash) n_crash[$surface]=$((n_crash[$surface] + 1)) ;;
    silent) n_silent[$surface]=$((n_silent[$surface] + 1)) ;;
    accepted) n_accepted[$surface]=$((n_accepted[$surface] + 1)) ;;
    refused) n_refused[$surface]=$((n_refused[$surface] + 1)) ;;
  esac
  # Control characters (NULs, escapes from binary inputs) would garble the report.
  name=$(printf '%s' "$name" | tr -c '[:print:]' '?' | cut -c1-70)
  msg=$(printf '%s' "$msg" | tr -c '[:print:]' '?' | cut -c1-220)
  local line
  line=$(printf '%-14s %-7s %-44s %s | %s' "$surface" "$verdict" "$name" "$detail" "$msg")
  if [[ "$verdict" != clear && "$verdict" != accepted ]]; then
    failures+=("$line")
    echo "$line"
  elif [[ "$verbose" == 1 ]]; then
    echo "$line"
  fi
}

# classify RC STDERR STDOUT: sets verdict, detail and msg (the first non-empty stderr line).
classify() {
  local rc=$1 err=$2 out=$3 lines
  msg=$(grep -a -m1 -v '^[[:space:]]*$' "$err")
  lines=$(grep -a -c '' "$err")
  if grep -aqE "$sanitizer_re" "$err" "$out"; then
    verdict=crash detail="sanitizer report (exit $rc)"
    msg=$(grep -a -h -m1 -E "$sanitizer_re" "$err" "$out" | head -1)
  elif ((rc == 124 || rc == 137)); then
    verdict=crash detail="timeout after ${case_timeout} s"
  elif ((rc >= 128)); then
    verdict=crash detail="killed by signal $((rc - 128))"
  elif ((rc == 0)); then
    verdict=silent detail="exit 0"
    [[ -n "$msg" ]] || msg="(stdout) $(grep -a -m1 -v '^[[:space:]]*$' "$out")"
  elif [[ -z "$msg" ]]; then
    verdict=no-msg detail="exit $rc, empty stderr"
  elif ((lines > 1)); then
    verdict=multi detail="exit $rc, $lines stderr lines"
    msg="$msg // last line: $(grep -a -v '^[[:space:]]*$' "$err" | tail -1)"
  elif grep -aqiE "internal error" <<<"$msg"; then
    # An exception that is not colo's UserError reached main: a path nobody wrote an error for.
    verdict=crash detail="internal error (exit $rc)"
  else
    verdict=clear detail="exit $rc"
  fi
}

# run_case SURFACE CASE COMMAND...: one bad input through a command that must refuse it.
run_case() {
  local surface=$1 name=$2
  shift 2
  if [[ "${as_baseline:-0}" == 1 ]]; then baseline "$surface" "$@"; return; fi
  timeout -k 5 "$case_timeout" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  classify $? "$work/stderr" "$work/stdout"
  record "$surface" "$name" "$verdict" "$detail" "$msg"
}

# run_ok SURFACE CASE COMMAND...: an odd but valid input that must be accepted: exit 0 and no
# sanitizer report (a refusal is as wrong here as a crash).
run_ok() {
  local surface=$1 name=$2 rc
  shift 2
  if [[ "${as_baseline:-0}" == 1 ]]; then baseline "$surface" "$@"; return; fi
  timeout -k 5 "$case_timeout" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  rc=$?
  msg=$(grep -a -m1 -v '^[[:space:]]*$' "$work/stderr")
  if grep -aqE "$sanitizer_re" "$work/stderr" "$work/stdout"; then
    verdict=crash detail="sanitizer report (exit $rc)"
  elif ((rc != 0)); then
    verdict=refused detail="exit $rc (must be accepted)"
  else
    verdict=accepted detail="exit 0"
  fi
  record "$surface" "$name" "$verdict" "$detail" "$msg"
}

# baseline SURFACE COMMAND...: the valid command the cases of a surface deviate from. If it
# fails, every case would fail for the baseline's reason and prove nothing, so say so loudly.
baseline() {
  local surface=$1
  shift
  timeout -k 5 "$case_timeout" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  local rc=$?
  if ((rc != 0)); then
    echo "bad-inputs: WARNING: the $surface baseline fails (exit $rc$( ((rc == 124)) && echo ", timeout")), its cases prove nothing: $*" >&2
    head -3 "$work/stderr" >&2
  fi
}

# ---------------------------------------------------------------------------------------------
# colod: one daemon on a fake 40 GiB GPU serves every case that needs one. After each such case
# it must still be alive and its log must be free of sanitizer reports; if it died it is
# restarted on the same state directory so that the sweep goes on.
# ---------------------------------------------------------------------------------------------
start_colod() {
  mkdir -p "$state"
  "$colod" --fake-gpus 1x40GiB --state-dir "$state" >>"$colod_log" 2>&1 &
  colod_pid=$!
  local i
  for i in $(seq 1 600); do
    "$colo" --socket "$sock" gpus >/dev/null 2>&1 && return 0
    kill -0 "$colod_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bad-inputs: colod does not start:" >&2
  tail -5 "$colod_log" >&2
  exit 2
}

colod_alive() {  # a zombie is not alive
  local st
  st=$(awk '{print $3}' "/proc/$colod_pid/stat" 2>/dev/null) || return 1
  [[ -n "$st" && "$st" != Z ]]
}

log_size() { stat -c %s "$colod_log" 2>/dev/null || echo 0; }

# run_daemon_case SURFACE CASE COMMAND...: run_case, plus colod must survive it untouched.
run_daemon_case() {
  local surface=$1 name=$2 off
  shift 2
  off=$(log_size)
  timeout -k 5 "$case_timeout" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  classify $? "$work/stderr" "$work/stdout"
  if ! colod_alive; then
    verdict=crash detail="colod died ($detail)"
    msg=$(tail -c +"$((off + 1))" "$colod_log" | grep -a -m1 -v '^[[:space:]]*$')
    wait "$colod_pid" 2>/dev/null
    start_colod
  elif tail -c +"$((off + 1))" "$colod_log" | grep -aqE "$sanitizer_re"; then
    verdict=crash detail="sanitizer report in colod's log ($detail)"
    msg=$(tail -c +"$((off + 1))" "$colod_log" | grep -a -m1 -E "$sanitizer_re")
  fi
  record "$surface" "$name" "$verdict" "$detail" "$msg"
}

# ---------------------------------------------------------------------------------------------
# Numeric flag families: every numeric flag gets the same bad spellings plus its own edges.
# ---------------------------------------------------------------------------------------------
# drop_flag FLAG ARGS...: ARGS without "FLAG VALUE", into args_out (baselines are FLAG VALUE
# pairs, so each case has its flag exactly once).
drop_flag() {
  local flag=$1
  shift
  args_out=()
  while (($#)); do
    if [[ "$1" == "$flag" ]]; then shift 2; else args_out+=("$1"); shift; fi
  done
}

# number_sweep RUNNER SURFACE FLAG KIND [EXTRA_BAD_VALUE...]
#   uses the caller's arrays: prefix (the command), defaults (valid FLAG VALUE pairs), suffix.
#   KIND: int | uint | real | mib | seconds; decides which generic spellings are wrong for it.
number_sweep() {
  local runner=$1 surface=$2 flag=$3 kind=$4
  shift 4
  local values=(-1 1e309 nan inf -inf 99999999999999999999 "" 12abc 0x10 "1 2")
  case "$kind" in
    int) values+=(9223372036854775807 1.5 1e3) ;;
    uint) values+=(18446744073709551616 1.5) ;;  # 2^63-1 is a valid uint64
    real | seconds) values+=(9223372036854775807) ;;
    mib) values+=(9223372036854775807 12XB -1GiB nanGiB 99999999999999999999GiB GiB) ;;
  esac
  values+=("$@")
  drop_flag "$flag" "${defaults[@]}"
  local v
  for v in "${values[@]}"; do
    "$runner" "$surface" "$flag '$v'" "${prefix[@]}" "${args_out[@]}" "$flag" "$v" "${suffix[@]}"
  done
}

# ---------------------------------------------------------------------------------------------
# Input file generator (python3 stdlib only; random data is seeded, so every run is the same).
# ---------------------------------------------------------------------------------------------
cat >"$work/gen.py" <<'PY'
import csv, io, os, random, re, sys

def rd(p): return open(p, 'rb').read()
def wr(p, b): open(p, 'wb').write(b)
def arg(s): return os.fsencode(s)  # raw bytes as bash passed them (invalid UTF-8 included)

op, out, a = sys.argv[1], sys.argv[2], sys.argv[3:]
if op == 'garbage':            # OUT NBYTES SEED: binary noise
    wr(out, random.Random(int(a[1])).randbytes(int(a[0])))
elif op == 'sub':              # OUT IN OLD NEW [all]: replace the first (or every) occurrence
    t, old, new = rd(a[0]), arg(a[1]), arg(a[2])
    if old not in t: sys.exit(f'gen.py sub: {a[1]!r} not found in {a[0]}')
    wr(out, t.replace(old, new) if len(a) > 3 else t.replace(old, new, 1))
elif op == 'half':             # OUT IN: the first half of the file
    t = rd(a[0]); wr(out, t[:len(t) // 2])
elif op in ('table-grow', 'table-header-only', 'table-drop-params', 'table-drop-shape'):
    # torchsummary tables: header, '====', rows, '====', footer
    lines = rd(a[0]).split(b'\n')
    eq = [i for i, l in enumerate(lines) if l.startswith(b'====')]
    head, body, tail = lines[:eq[0] + 1], lines[eq[0] + 1:eq[1]], lines[eq[1]:]
    if op == 'table-grow':     # OUT IN BYTES: rows repeated until the file is BYTES long
        per = sum(len(l) + 1 for l in body)
        body = body * (int(a[1]) // per + 1)
    elif op == 'table-header-only':
        body = []
    elif op == 'table-drop-params':
        body = [re.sub(rb'\s+\S+\s*$', b'', l) for l in body]
    else:
        body = [re.sub(rb'\[[^\]]*\]', b'', l) for l in body]
    wr(out, b'\n'.join(head + body + tail))
elif op == 'deep-repr':        # OUT N: a module repr nested N levels deep
    n = int(a[0])
    wr(out, b'Net(\n' + b'(m): Sequential(\n' * n +
       b'(fc): Linear(in_features=8, out_features=8, bias=True), 72 params\n' + b'), 72 params\n' * n + b')\n')
elif op == 'toml-deep-array':  # OUT N
    n = int(a[0]); wr(out, b'command = ["/bin/true"]\na = ' + b'[' * n + b']' * n + b'\n')
elif op == 'toml-deep-table':  # OUT N
    n = int(a[0]); wr(out, b'command = ["/bin/true"]\na = ' + b'{b = ' * n + b'1' + b'}' * n + b'\n')
elif op == 'toml-big':         # OUT BYTES: a valid job file padded with comments
    n = int(a[0]); line = b'# ' + b'x' * 98 + b'\n'
    wr(out, b'command = ["/bin/true"]\n' + line * (n // len(line) + 1))
elif op == 'csv':              # OUT IN ACTION [ARGS]: one change to a CSV file
    text = rd(a[0]).decode('utf-8', 'surrogateescape')
    rows = list(csv.reader(io.StringIO(text)))
    act, hdr = a[1], rows[0]
    col = lambda name: hdr.index(name)
    tail = ''
    if act == 'head':          rows = rows[:1 + int(a[2])]
    elif act == 'header-only': rows = rows[:1]
    elif act == 'set':         rows[1][col(a[2])] = a[3]     # first data row, column := value
    elif act == 'deep-list':   n = int(a[3]); rows[1][col(a[2])] = '[' * n + ']' * n  # too long for argv
    elif act == 'drop-col':    c = col(a[2]); rows = [r[:c] + r[c + 1:] for r in rows]
    elif act == 'dup-col':     c = col(a[2]); rows = [r + [r[c]] for r in rows]
    elif act == 'dup-row':     rows.append(rows[1])       # the first data row again, at the end
    elif act == 'short-row':   rows[1] = rows[1][:-1]
    elif act == 'long-row':    rows[1] = rows[1] + ['extra']
    elif act == 'unterminated':  # the last cell of the last row opens a quote that never closes
        last = rows.pop(); buf = io.StringIO(); csv.writer(buf, lineterminator='').writerow(last[:-1])
        tail = buf.getvalue() + ',"unterminated\n'
    else: sys.exit(f'gen.py csv: unknown action {act}')
    buf = io.StringIO(); csv.writer(buf, lineterminator='\n').writerows(rows)
    wr(out, (buf.getvalue() + tail).encode('utf-8', 'surrogateescape'))
else:
    sys.exit(f'gen.py: unknown op {op}')
PY
gen() { python3 "$work/gen.py" "$@" || { echo "bad-inputs: input generation failed: $*" >&2; exit 2; }; }

mkdir -p "$work/in"
in="$work/in"
resnet="$carma/summaries/resnet50_32.model"
bert="$carma/summaries/BERT_base.model"
workloads="$carma/workloads.csv"
trace="$carma/traces/philly_mix_90_tasks.csv"
# Small valid GPUMemNet sets keep the cases fast and make a silently accepted case end quickly.
gen csv "$in/cnn.csv" "$data/gpumemnet/cnn.csv" head 20
gen csv "$in/mlp.csv" "$data/gpumemnet/mlp.csv" head 40
gen garbage "$in/garbage.bin" 65536 1
# Past the 256 MiB data-set cap. Sparse (NUL bytes): the tools stat a file before reading it
# (estimate/input_file.cpp, check_input_size), so this costs no disk and no reading.
truncate -s 300M "$in/huge-300MiB.csv"

# =============================================================================================
# Surface 1: CLI flags
# =============================================================================================
sweep_cli_sim() {
  local s=cli:sim
  prefix=("$colo" sim)
  defaults=(--workloads "$workloads" --trace "$trace" --gpus 4 --gpu-memory-mib 40960 --policy magm
            --estimator oracle --sharing mps)
  suffix=(--json)
  baseline "$s" "${prefix[@]}" "${defaults[@]}" "${suffix[@]}"
  number_sweep run_case $s --gpus int 0 100001
  number_sweep run_case $s --gpu-memory-mib mib 0 1048577
  number_sweep run_case $s --smact-cap real 0 0.5 100.5
  number_sweep run_case $s --margin-mib mib 1048577 40961
  number_sweep run_case $s --min-free-mib mib 1048577 40961
  number_sweep run_case $s --recovery-step-mib mib 0 1048577
  number_sweep run_case $s --seed uint
  number_sweep run_case $s --duration-jitter real 1 1.5
  number_sweep run_case $s --ramp-s seconds -1s 31536001 1e309s 5fortnights
  number_sweep run_case $s --oom-detect-s seconds -1s 31536001
  local name val
  for name in --policy --estimator --sharing --recovery; do
    for val in bogus ""; do
      drop_flag "$name" "${defaults[@]}"
      run_case $s "$name '$val'" "${prefix[@]}" "${args_out[@]}" "$name" "$val" --json
    done
  done
  drop_flag --workloads "${defaults[@]}"
  run_case $s "--workloads missing file" "${prefix[@]}" "${args_out[@]}" --workloads "$work/nope.csv" --json
  run_case $s "--workloads a directory" "${prefix[@]}" "${args_out[@]}" --workloads "$work" --json
  run_case $s "--workloads /dev/zero" "${prefix[@]}" "${args_out[@]}" --workloads /dev/zero --json
  drop_flag --trace "${defaults[@]}"
  run_case $s "--trace missing file" "${prefix[@]}" "${args_out[@]}" --trace "$work/nope.csv" --json
  run_case $s "--compare with --policy" "${prefix[@]}" "${defaults[@]}" --compare --json
  run_case $s "unknown flag --gpu" "${prefix[@]}" "${defaults[@]}" --gpu 4 --json
  run_case $s "--gpus without a value" "${prefix[@]}" "${defaults[@]}" --json --gpus
  run_case $s "stray positional argument" "${prefix[@]}" "${defaults[@]}" --json extra
}

sweep_cli_estimate() {
  local s=cli:estimate
  prefix=("$colo" estimate)
  defaults=(--summary "$resnet" --batch 32 --optimizer adam --estimator allocsim)
  suffix=(--json)
  baseline "$s" "${prefix[@]}" "${defaults[@]}" "${suffix[@]}"
  number_sweep run_case $s --batch int 0 1048577
  number_sweep run_case $s --seq-len int 0 1048577
  number_sweep run_case $s --stated-mib int 0 1048577
  local name val
  for name in --estimator --optimizer --gpu; do
    for val in bogus ""; do
      drop_flag "$name" "${defaults[@]}"
      run_case $s "$name '$val'" "${prefix[@]}" "${args_out[@]}" "$name" "$val" --json
    done
  done
  drop_flag --gpu "${defaults[@]}"
  run_case $s "--gpu ../calibration/a100-40gb" "${prefix[@]}" "${args_out[@]}" --gpu ../calibration/a100-40gb --json
  drop_flag --summary "${defaults[@]}"
  run_case $s "--summary missing file" "${prefix[@]}" "${args_out[@]}" --summary "$work/nope.model" --json
  run_case $s "--summary a directory" "${prefix[@]}" "${args_out[@]}" --summary "$work" --json
  run_case $s "--summary /dev/zero" "${prefix[@]}" "${args_out[@]}" --summary /dev/zero --json
  run_case $s "no --summary" "${prefix[@]}" "${args_out[@]}" --json
  drop_flag --batch "${defaults[@]}"
  run_case $s "no --batch" "${prefix[@]}" "${args_out[@]}" --json
  run_case $s "oracle without --stated-mib" "$colo" estimate --estimator oracle --batch 32 --json
  # An empty value is an error, not "not given" (which fell back to a default).
  run_case $s "--summary ''" "${prefix[@]}" "${args_out[@]}" --summary "" --json
  run_case $s "--trace ''" "$colo" estimate --trace "" --estimator trace --json
  run_case $s "--python ''" "$colo" estimate --probe torchvision:resnet18 --batch 2 --estimator trace --python "" --json
  run_case $s "smact --model ''" "$colo" estimate smact --summary "$resnet" --batch 32 --model "" --json
}

# PYTORCH_CUDA_ALLOC_CONF: the job's allocator settings, read from a trace header (alloc_conf),
# from colo estimate's environment (recorded by the probe) and from colo submit --env.
sweep_alloc_conf() {
  local s=alloc-conf t="$work/alloc.trace" v
  alloc_trace() {  # CONF [BODY]
    printf 'colo-probe-trace 2\nH {"model":"t","batch":4,"alloc_conf":"%s"}\n%bM 1 31457280 0 forward a\nF 1\nS 1\nE {}\n' "$1" "${2:-}" >"$t"
  }
  alloc_trace "expandable_segments:True,max_split_size_mb:64,roundup_power2_divisions:[1:2,>:4]"
  baseline $s "$colo" estimate --trace "$t" --estimator trace --json
  for v in "expandable_segments:yes" "expandable_segments" "max_split_size_mb:19" "max_split_size_mb:x" \
           "max_split_size_mb:99999999999999999999" "max_non_split_rounding_mb:2" "roundup_power2_divisions:3" \
           "roundup_power2_divisions:[100:2]" "roundup_power2_divisions:[64:2" "roundup_power2_divisions:[64:3]" \
           "garbage_collection_threshold:1" "garbage_collection_threshold:-0.5" "backend:cudaMallocAsync" "backend:other" \
           "bogus_option:1" "," "large_segment_size_mb:64" "release_lock_on_cudamalloc:1"; do
    alloc_trace "$v"
    run_case $s "header alloc_conf '$v'" "$colo" estimate --trace "$t" --estimator trace --json
  done
  alloc_trace "garbage_collection_threshold:0.5" "L 0.5\n"
  run_case $s "GC threshold under a memory fraction" "$colo" estimate --trace "$t" --estimator trace --json
  local probe=(estimate --probe torchvision:resnet18 --input 3x32x32 --num-classes 10 --batch 2 --estimator trace --json)
  baseline $s env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$colo" "${probe[@]}"
  for v in "expandable_segments:maybe" "max_split_size_mb:1"; do
    run_case $s "env PYTORCH_CUDA_ALLOC_CONF='$v'" env PYTORCH_CUDA_ALLOC_CONF="$v" "$colo" "${probe[@]}"
  done
  run_case $s "env PYTORCH_ALLOC_CONF=backend:cudaMallocAsync" env -u PYTORCH_CUDA_ALLOC_CONF \
    PYTORCH_ALLOC_CONF=backend:cudaMallocAsync "$colo" "${probe[@]}"
  for v in "expandable_segments:maybe" "roundup_power2_divisions:5"; do
    run_daemon_case $s "submit --env PYTORCH_CUDA_ALLOC_CONF='$v'" "$colo" --socket "$sock" submit \
      --probe torchvision:resnet18 --batch 2 --env "PYTORCH_CUDA_ALLOC_CONF=$v" -- /bin/true
  done
}

# A GPU profile's measured convolution workspace table (calibration/<gpu>.json names it): read by
# colo estimate --gpu and by colod's estimator.probe_gpu; a profile directory may be any path
# ($COLO_CALIBRATION_DIR), so a bad table or a bad name in the profile is a one-line error.
sweep_conv_table() {
  local s=conv-table d="$work/conv-table" t="$work/keyed.trace" v
  mkdir -p "$d"
  printf 'colo-probe-trace 1\nH {"model":"t","batch":1}\nC forward convolution 4 4 0 f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0\nM 1 4 0 forward convolution\nS 1\nE {}\n' >"$t"
  profile() {  # TABLE-FIELD-JSON
    printf '{"gpu":"gpu-t","gpu_total_mib":81559,"context_mib":742%s}' "$1" >"$d/gpu-t.json"
  }
  table() {  # BODY
    printf 'colo-conv-workspace 1\nH {}\n%b' "$1" >"$d/t.tsv"
  }
  profile ',"conv_workspace_table":"t.tsv"'
  table 'f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0\to +1048576 -0\n'
  baseline $s env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  for v in 'k\to +5\n' 'k\to -0\n' 'k\t+5 -0 -0\n' 'k\to q\n' 'k\t\n' 'k o\n' 'a$b\to\n' 'k\to\nk\to\n' \
           'k\t+99999999999999999999 -0\n' 'k\t+-1 -0\n' 'H {}\n' 'H [\n'; do
    table "$v"
    run_case $s "table line '$v'" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  done
  printf 'colo-conv-workspace 9\n' >"$d/t.tsv"
  run_case $s "table version 9" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  : >"$d/t.tsv"
  run_case $s "empty table" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  rm -f "$d/t.tsv"
  run_case $s "missing table" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  for v in '"../t.tsv"' '"/etc/passwd"' '""' '7' '".t.tsv"'; do
    profile ",\"conv_workspace_table\":$v"
    run_case $s "profile conv_workspace_table $v" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  done
  # Neighbours for shapes the table lacks: a count in [0, 16], and only with a table.
  table 'f:1x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0\to +1048576 -0\n'
  for v in '-1' '17' '2.5' '"3"' 'true' '18446744073709551615' '1e400'; do
    profile ",\"conv_workspace_table\":\"t.tsv\",\"trace_conv_workspace_neighbours\":$v"
    run_case $s "profile trace_conv_workspace_neighbours $v" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  done
  profile ',"trace_conv_workspace_neighbours":3'
  run_case $s "profile trace_conv_workspace_neighbours without a table" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  # A trace key that is no convolution shape, or an impossible one, with neighbours on: the ratios
  # replace it (what the estimate says), never a crash.
  profile ',"conv_workspace_table":"t.tsv","trace_conv_workspace_neighbours":3'
  for v in 'f:1x1' 'f:0x1x1x1:1x1x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0' \
           'f:1x1x1x1:1x1x9x9:s1x1:p0x0:d1x1:g1:t0:float32:b0' \
           'b:1099511627776x1099511627776x1x1:1099511627776x1099511627776x1x1:s1x1:p0x0:d1x1:g1:t0:float64:m111' \
           'f:1099511627776x1099511627776x1x1:1099511627776x1099511627776x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b0'; do
    printf 'colo-probe-trace 1\nH {"model":"t","batch":1}\nC forward convolution 4 4 0 %s\nM 1 4 0 forward convolution\nS 1\nE {}\n' "$v" >"$t"
    run_ok $s "trace C key '$v' with neighbours" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
  done
  printf 'colo-probe-trace 1\nH {"model":"t","batch":1}\nC forward convolution 4 4 0 a$b\nS 1\nE {}\n' >"$t"
  profile ''
  run_case $s "trace C key 'a\$b'" env COLO_CALIBRATION_DIR="$d" "$colo" estimate --trace "$t" --estimator trace --gpu gpu-t --json
}

sweep_cli_eval() {
  local s=cli:eval
  prefix=("$colo" estimate eval)
  defaults=(--dataset "$workloads" --format carma-workloads --estimator horus --split all)
  suffix=(--json)
  baseline "$s" "${prefix[@]}" "${defaults[@]}" "${suffix[@]}"
  local name val
  for name in --format --estimator --split --gpu --optimizer; do
    for val in bogus ""; do
      drop_flag "$name" "${defaults[@]}"
      run_case $s "$name '$val'" "${prefix[@]}" "${args_out[@]}" "$name" "$val" --json
    done
  done
  drop_flag --dataset "${defaults[@]}"
  run_case $s "--dataset missing file" "${prefix[@]}" "${args_out[@]}" --dataset "$work/nope.csv" --json
  run_case $s "--dataset binary garbage" "${prefix[@]}" "${args_out[@]}" --dataset "$in/garbage.bin" --json
  run_case $s "--dataset a directory" "${prefix[@]}" "${args_out[@]}" --dataset "$work" --json
  run_case $s "no --dataset" "${prefix[@]}" "${args_out[@]}" --json
  drop_flag --format "${defaults[@]}"
  run_case $s "no --format" "${prefix[@]}" "${args_out[@]}" --json
  run_case $s "carma file as gpumemnet-cnn" "${prefix[@]}" "${args_out[@]}" --format gpumemnet-cnn --json
  run_case $s "cnn file as carma-workloads" "$colo" estimate eval --dataset "$in/cnn.csv" --format carma-workloads --estimator horus --json
  # --keep-traces: only where rows are probed, into a directory that is not a file or an earlier set.
  run_case $s "--keep-traces with horus" "${prefix[@]}" "${defaults[@]}" --keep-traces "$work/kept" --json
  run_case $s "--keep-traces a file" "$colo" estimate eval --dataset "$workloads" --format carma-workloads --estimator trace --keep-traces "$in/garbage.bin" --json
  mkdir -p "$work/kept-old" && : > "$work/kept-old/index.jsonl"
  run_case $s "--keep-traces an earlier set" "$colo" estimate eval --dataset "$workloads" --format carma-workloads --estimator trace --keep-traces "$work/kept-old" --json
  # calibrate writes a profile: --out always points into the temporary directory.
  mkdir -p "$work/cal"
  prefix=("$colo" estimate calibrate)
  defaults=(--dataset "$in/cnn.csv" --format gpumemnet-cnn --split all --out "$work/cal/p.json")
  suffix=()
  s=cli:calibrate
  baseline "$s" "${prefix[@]}" "${defaults[@]}"
  number_sweep run_case $s --max-under-rate real 1.5
  run_case $s "--format carma-workloads" "$colo" estimate calibrate --dataset "$workloads" --format carma-workloads --out "$work/cal/p.json"
  run_case $s "--split bogus" "$colo" estimate calibrate --dataset "$in/cnn.csv" --format gpumemnet-cnn --split bogus --out "$work/cal/p.json"
}

sweep_cli_gpumemnet() {
  local s=cli:gpumemnet
  prefix=("$colo" gpumemnet train)
  mkdir -p "$work/gmn"
  defaults=(--dataset "$in/mlp.csv" --format gpumemnet-mlp --folds 0 --epochs 1 --out "$work/gmn/m.json")
  suffix=()
  baseline "$s" "${prefix[@]}" "${defaults[@]}"
  number_sweep run_case $s --bucket-gib real 0 0.0001 1025
  number_sweep run_case $s --folds int 1 1001
  number_sweep run_case $s --epochs int 0 100001
  number_sweep run_case $s --lr real 0 1e-13 11
  number_sweep run_case $s --seed uint
  drop_flag --format "${defaults[@]}"
  run_case $s "--format bogus" "${prefix[@]}" "${args_out[@]}" --format bogus
  run_case $s "--format carma-workloads" "${prefix[@]}" "${args_out[@]}" --format carma-workloads
  drop_flag --dataset "${defaults[@]}"
  run_case $s "--dataset missing file" "${prefix[@]}" "${args_out[@]}" --dataset "$work/nope.csv"
  run_case $s "--dataset binary garbage" "${prefix[@]}" "${args_out[@]}" --dataset "$in/garbage.bin"
  run_case $s "no subcommand" "$colo" gpumemnet --dataset "$in/mlp.csv" --format gpumemnet-mlp
  run_case $s "cv: no --dataset" "$colo" gpumemnet cv --format gpumemnet-mlp
}

sweep_cli_daemon() {
  local s=cli:submit
  prefix=("$colo" --socket "$sock" submit)
  defaults=(--gpus 1 --mem 1GiB --name bad-input)
  suffix=(-- /bin/true)
  baseline "$s" "${prefix[@]}" "${defaults[@]}" "${suffix[@]}"
  number_sweep run_daemon_case $s --gpus int 0 65
  number_sweep run_daemon_case $s --mem mib 0 2TiB 1.5.5GiB
  # --batch and --seq-len only matter with --estimate
  defaults=(--gpus 1 --estimate allocsim --summary "$resnet" --batch 32)
  number_sweep run_daemon_case $s --batch int 0 1048577
  number_sweep run_daemon_case $s --seq-len int 0 1048577
  local c=("$colo" --socket "$sock" submit)
  run_daemon_case $s "no command" "${c[@]}" --gpus 1
  run_daemon_case $s "empty command after --" "${c[@]}" --gpus 1 --
  run_daemon_case $s "empty program name" "${c[@]}" --gpus 1 -- ""
  run_daemon_case $s "--env without =" "${c[@]}" --env NOEQUALS -- /bin/true
  run_daemon_case $s "--env bad name 1BAD" "${c[@]}" --env 1BAD=x -- /bin/true
  run_daemon_case $s "--env empty name" "${c[@]}" --env =x -- /bin/true
  run_daemon_case $s "--env reserved CUDA_VISIBLE_DEVICES" "${c[@]}" --env CUDA_VISIBLE_DEVICES=0 -- /bin/true
  run_daemon_case $s "--estimate bogus" "${c[@]}" --estimate bogus --summary "$resnet" --batch 32 -- /bin/true
  run_daemon_case $s "--estimate without --summary" "${c[@]}" --estimate allocsim --batch 32 -- /bin/true
  run_daemon_case $s "--estimate without --batch" "${c[@]}" --estimate allocsim --summary "$resnet" -- /bin/true
  run_daemon_case $s "--estimate, --summary missing" "${c[@]}" --estimate allocsim --summary "$work/nope.model" --batch 32 -- /bin/true
  run_daemon_case $s "--estimate, --optimizer bogus" "${c[@]}" --estimate allocsim --summary "$resnet" --batch 32 --optimizer bogus -- /bin/true
  run_daemon_case $s "--mem and --estimate" "${c[@]}" --mem 1GiB --estimate allocsim --summary "$resnet" --batch 32 -- /bin/true
  run_daemon_case $s "--name of 300 characters" "${c[@]}" --name "$(printf 'n%.0s' {1..300})" -- /bin/true
  run_daemon_case $s "--rad-memory bogus" "${c[@]}" --rad "$carma/rad/resnet.rad" --rad-memory bogus -- /bin/true
  run_daemon_case $s "missing job file x.toml" "${c[@]}" "$work/nope.toml"
  run_daemon_case $s "unknown flag --gpu" "${c[@]}" --gpu 1 -- /bin/true
  run_case cli:client "--socket missing" "$colo" --socket "$work/nope.sock" gpus
  run_case cli:client "--socket a regular file" "$colo" --socket "$in/garbage.bin" gpus
  run_case cli:client "--socket empty" "$colo" --socket "" gpus
  run_case cli:client "unknown subcommand" "$colo" frobnicate
  run_case cli:client "no subcommand" "$colo"

  # Job ids: show/cancel/logs take 1..2^63-1.
  local id cmd
  for cmd in show cancel logs; do
    for id in -1 abc 0 18446744073709551616 18446744073709551615 9223372036854775808 "" 1.5 1e3 0x10 99999999999999999999; do
      run_daemon_case cli:ids "$cmd '$id'" "$colo" --socket "$sock" "$cmd" "$id"
    done
  done
  run_daemon_case cli:ids "show 9223372036854775807 (no such job)" "$colo" --socket "$sock" show 9223372036854775807
  run_daemon_case cli:ids "cancel 1 abc" "$colo" --socket "$sock" cancel 1 abc
  for id in 99 -1 abc "" 18446744073709551616; do
    run_daemon_case cli:ids "drain '$id'" "$colo" --socket "$sock" drain "$id"
  done
  run_daemon_case cli:ids "resume 99" "$colo" --socket "$sock" resume 99
}

# =============================================================================================
# Surface 2: job files (TOML for `colo submit FILE.toml`, and the prototype's .rad files)
# =============================================================================================
# toml_case CASE TEXT: TEXT (printf %b escapes) as a job file; every other key is valid.
toml_case() {
  local name=$1 text=$2 f
  f="$in/toml/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_-' '_').toml"
  mkdir -p "$in/toml"
  printf '%b' "$text" >"$f"
  run_daemon_case jobfile:toml "$name" "$colo" --socket "$sock" submit "$f"
}

sweep_toml() {
  local ok='command = ["/bin/true"]\n'
  mkdir -p "$in/toml"
  printf '%b' "name = \"ok\"\n${ok}gpus = 1\nmem = \"1GiB\"\n" >"$in/toml/baseline.toml"
  baseline jobfile:toml "$colo" --socket "$sock" submit "$in/toml/baseline.toml"
  toml_case "empty file" ''
  toml_case "missing command" 'name = "x"\ngpus = 1\n'
  toml_case "command = 5" 'command = 5\n'
  toml_case "command = []" 'command = []\n'
  toml_case "command = \"\"" 'command = ""\n'
  toml_case "command = [1, 2]" 'command = [1, 2]\n'
  toml_case "command = [\"/bin/true\", 5]" 'command = ["/bin/true", 5]\n'
  toml_case "command = [\"\"]" 'command = [""]\n'
  toml_case "command is a table" '[command]\na = 1\n'
  toml_case "command with NUL escape" 'command = ["/bin/true\\u0000x"]\n'
  toml_case "name = 5" "name = 5\n$ok"
  toml_case "name of 300 characters" "name = \"$(printf 'n%.0s' {1..300})\"\n$ok"
  toml_case "name with invalid UTF-8" "name = \"\xff\xfe\"\n$ok"
  toml_case "gpus = \"1\"" "${ok}gpus = \"1\"\n"
  toml_case "gpus = 1.5" "${ok}gpus = 1.5\n"
  toml_case "gpus = true" "${ok}gpus = true\n"
  local v
  for v in 0 -1 65 9223372036854775807 9223372036854775808 99999999999999999999 nan inf 1e309 -0x1; do
    toml_case "gpus = $v" "${ok}gpus = $v\n"
  done
  toml_case "gpus twice" "${ok}gpus = 1\ngpus = 2\n"
  for v in 12 '"12XB"' '"-1GiB"' '"0"' '""' '"nan"' '"1e309"' '"99999999999999999999"' '"2TiB"' '"1025TiB"'; do
    toml_case "mem = $v" "${ok}mem = $v\n"
  done
  toml_case "workdir = 5" "${ok}workdir = 5\n"
  toml_case "env = \"x\"" "${ok}env = \"x\"\n"
  toml_case "env value 5" "${ok}[env]\nA = 5\n"
  toml_case "env name 1BAD" "${ok}[env]\n1BAD = \"x\"\n"
  toml_case "env name with a dash" "${ok}[env]\n\"A-B\" = \"x\"\n"
  toml_case "env CUDA_VISIBLE_DEVICES" "${ok}[env]\nCUDA_VISIBLE_DEVICES = \"0\"\n"
  toml_case "env value with NUL escape" "${ok}[env]\nA = \"x\\\\u0000y\"\n"
  toml_case "[[env]] array of tables" "${ok}[[env]]\nA = \"x\"\n"
  local est="[estimate]\nsummary = \"$resnet\"\n"
  toml_case "estimate = 5" "${ok}estimate = 5\n"
  toml_case "estimate without summary" "${ok}[estimate]\nbatch = 32\n"
  toml_case "estimate without batch" "${ok}${est}"
  for v in '"32"' 0 -1 1048577 9223372036854775807 99999999999999999999 1.5 nan; do
    toml_case "estimate.batch = $v" "${ok}${est}batch = $v\n"
  done
  for v in 0 -5 1048577 '"512"'; do
    toml_case "estimate.seq_len = $v" "${ok}${est}batch = 32\nseq_len = $v\n"
  done
  toml_case "estimate.estimator = \"bogus\"" "${ok}${est}batch = 32\nestimator = \"bogus\"\n"
  toml_case "estimate.optimizer = \"bogus\"" "${ok}${est}batch = 32\noptimizer = \"bogus\"\n"
  toml_case "estimate.summary missing file" "${ok}[estimate]\nsummary = \"nope.model\"\nbatch = 32\n"
  toml_case "estimate.unknown key" "${ok}${est}batch = 32\nbacth = 32\n"
  toml_case "mem and [estimate]" "${ok}mem = \"1GiB\"\n${est}batch = 32\n"
  toml_case "unknown key nmae" "${ok}nmae = \"x\"\n"
  toml_case "unknown table [jobs]" "${ok}[jobs]\na = 1\n"
  toml_case "unterminated string" 'command = ["/bin/true]\n'
  toml_case "key without value" "${ok}name =\n"
  toml_case "line without =" "${ok}gpus\n"
  toml_case "NUL byte in the file" "${ok}name = \"a\x00b\"\n"
  # Generated ones: deep nesting, a 2 MiB file (the cap is 1 MiB), binary noise.
  gen toml-deep-array "$in/toml/deep-array.toml" 10000
  run_daemon_case jobfile:toml "a = [[[...]]] 10000 deep" "$colo" --socket "$sock" submit "$in/toml/deep-array.toml"
  gen toml-deep-table "$in/toml/deep-table.toml" 10000
  run_daemon_case jobfile:toml "a = {b = {b = ...}} 10000 deep" "$colo" --socket "$sock" submit "$in/toml/deep-table.toml"
  gen toml-big "$in/toml/big.toml" $((2 << 20))
  run_daemon_case jobfile:toml "2 MiB job file" "$colo" --socket "$sock" submit "$in/toml/big.toml"
  cp "$in/garbage.bin" "$in/toml/garbage.toml"
  run_daemon_case jobfile:toml "binary garbage" "$colo" --socket "$sock" submit "$in/toml/garbage.toml"
  mkdir -p "$in/toml/dir.toml"
  run_daemon_case jobfile:toml "a directory named x.toml" "$colo" --socket "$sock" submit "$in/toml/dir.toml"
}

# rad_case CASE FIELD... : a .rad file from its lines (next to a copy of the summaries, as in
# data/carma); the command after -- replaces the file's (prototype paths).
rad_case() {
  local name=$1 f
  shift
  f="$in/rad/rad/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_-' '_').rad"
  printf '%s\n' "$@" >"$f"
  run_daemon_case jobfile:rad "$name" "$colo" --socket "$sock" submit --rad "$f" -- /bin/true
}

sweep_rad() {
  mkdir -p "$in/rad/rad" "$in/rad/summaries"
  cp "$resnet" "$in/rad/summaries/"
  local head=("conda activate tf" "python train.py --batch_size 32" "resnet50_32.model" "/raid/datasets/imagenet")
  printf '%s\n' "${head[@]}" 32 exclusive 1 5262 7903.9316 2672.516029 16000 >"$in/rad/rad/baseline.rad"
  baseline jobfile:rad "$colo" --socket "$sock" submit --rad "$in/rad/rad/baseline.rad" -- /bin/true
  rad_case "empty file"
  rad_case "only a comment" "# nothing"
  rad_case "truncated after 3 lines" "${head[@]:0:3}"
  rad_case "truncated after 6 lines" "${head[@]}" 32 exclusive
  local v
  for v in abc 0 -1 32.5 1e309 nan 99999999999999999999 9223372036854775807 1048577; do
    rad_case "batch '$v'" "${head[@]}" "$v" exclusive 1
  done
  for v in -1 0 65 abc 1.5 99999999999999999999; do
    rad_case "GPUs '$v'" "${head[@]}" 32 exclusive "$v"
  done
  rad_case "placement mode bogus" "${head[@]}" 32 bogus 1
  for v in -5 0 nan inf 1e400 abc 1048577 99999999999999999999; do
    rad_case "measured MiB '$v'" "${head[@]}" 32 exclusive 1 "$v"
  done
  rad_case "12 fields" "${head[@]}" 32 exclusive 1 1 2 3 4 5
  printf 'conda activate tf\npython a\x00b\nresnet50_32.model\nd\n32\nexclusive\n1\n' >"$in/rad/rad/nul.rad"
  run_daemon_case jobfile:rad "NUL byte" "$colo" --socket "$sock" submit --rad "$in/rad/rad/nul.rad" -- /bin/true
  cp "$in/garbage.bin" "$in/rad/rad/garbage.rad"
  run_daemon_case jobfile:rad "binary garbage" "$colo" --socket "$sock" submit --rad "$in/rad/rad/garbage.rad" -- /bin/true
  truncate -s 2M "$in/rad/rad/big.rad"
  run_daemon_case jobfile:rad "2 MiB file" "$colo" --socket "$sock" submit --rad "$in/rad/rad/big.rad" -- /bin/true
  run_daemon_case jobfile:rad "missing file" "$colo" --socket "$sock" submit --rad "$work/nope.rad" -- /bin/true
  run_daemon_case jobfile:rad "a directory" "$colo" --socket "$sock" submit --rad "$in/rad" -- /bin/true
  printf '%s\n' "${head[0]}" "${head[1]}" "no-such.model" "${head[3]}" 32 exclusive 1 >"$in/rad/rad/nosummary.rad"
  run_daemon_case jobfile:rad "--estimate, summary file missing" "$colo" --socket "$sock" submit --rad "$in/rad/rad/nosummary.rad" --estimate allocsim -- /bin/true
}

# =============================================================================================
# Surface 3: model summaries (colo estimate --summary FILE --batch 32 --optimizer adam --estimator allocsim)
# =============================================================================================
summary_case() {  # CASE FILE
  run_case summary "$1" "$colo" estimate --summary "$2" --batch 32 --optimizer adam --estimator allocsim --json
}

sweep_summaries() {
  local d="$in/sum"
  mkdir -p "$d"
  baseline summary "$colo" estimate --summary "$resnet" --batch 32 --optimizer adam --estimator allocsim --json
  baseline summary "$colo" estimate --summary "$bert" --batch 32 --optimizer adam --estimator allocsim --json
  # torchsummary table (resnet50_32.model): first row is "Conv2d-1  [32, 64, 112, 112]  9,408"
  local row='[32, 64, 112, 112]           9,408'
  gen sub "$d/neg-params" "$resnet" "$row" '[32, 64, 112, 112]           -9,408';        summary_case "table: negative params" "$d/neg-params"
  gen sub "$d/1e400-params" "$resnet" "$row" '[32, 64, 112, 112]           1e400';       summary_case "table: 1e400 params" "$d/1e400-params"
  gen sub "$d/nan-params" "$resnet" "$row" '[32, 64, 112, 112]           nan';           summary_case "table: nan params" "$d/nan-params"
  gen sub "$d/big-params" "$resnet" "$row" '[32, 64, 112, 112]           99,999,999,999,999,999,999'; summary_case "table: 10^20 params" "$d/big-params"
  gen sub "$d/i64-params" "$resnet" "$row" '[32, 64, 112, 112]           9,223,372,036,854,775,807'; summary_case "table: 2^63-1 params" "$d/i64-params"
  gen sub "$d/frac-params" "$resnet" "$row" '[32, 64, 112, 112]           9.5';         summary_case "table: 9.5 params" "$d/frac-params"
  gen sub "$d/neg-shape" "$resnet" '[32, 64, 112, 112]' '[32, -64, 112, 112]';          summary_case "table: negative dimension" "$d/neg-shape"
  gen sub "$d/huge-shape" "$resnet" '[32, 64, 112, 112]' '[32, 999999999, 999999999, 999999999]'; summary_case "table: 10^27-element output" "$d/huge-shape"
  gen sub "$d/i64-shape" "$resnet" '[32, 64, 112, 112]' '[32, 9223372036854775807, 112, 112]'; summary_case "table: 2^63-1 dimension" "$d/i64-shape"
  gen sub "$d/text-shape" "$resnet" '[32, 64, 112, 112]' '[32, abc, 112, 112]';         summary_case "table: non-numeric dimension" "$d/text-shape"
  gen sub "$d/open-shape" "$resnet" '[32, 64, 112, 112]' '[32, 64, 112, 112';           summary_case "table: unterminated [" "$d/open-shape"
  gen sub "$d/total-1e400" "$resnet" 'Total params: 25,557,032' 'Total params: 1e400';    summary_case "table: Total params 1e400" "$d/total-1e400"
  gen sub "$d/total-neg" "$resnet" 'Total params: 25,557,032' 'Total params: -5';         summary_case "table: Total params -5" "$d/total-neg"
  gen table-drop-params "$d/no-params" "$resnet";   summary_case "table: param column missing" "$d/no-params"
  gen table-drop-shape "$d/no-shape" "$resnet";     summary_case "table: shape column missing" "$d/no-shape"
  gen table-header-only "$d/header-only" "$resnet"; summary_case "table: header, no rows" "$d/header-only"
  gen half "$d/half" "$resnet";                     summary_case "table: truncated in the middle" "$d/half"
  gen sub "$d/bad-utf8" "$resnet" 'Conv2d-1' $'Conv\xff\xfe2d-1';                          summary_case "table: invalid UTF-8 layer name" "$d/bad-utf8"
  gen sub "$d/nul" "$resnet" 'Conv2d-1' $'Conv2d\x01-1';                                   summary_case "table: control byte in a row" "$d/nul"
  gen table-grow "$d/20MiB" "$resnet" $((20 << 20));                                       summary_case "table: 20 MiB (rows repeated)" "$d/20MiB"
  # Keras summaries are recognised by "Layer (type)" together with "(None".
  printf 'Model: "m"\n_____\n Layer (type)  Output Shape  Param #\n=====\n dense (Dense)  (None, -5)  -10\n=====\nTotal params: 1e400\n' >"$d/keras"
  summary_case "keras: negative shape and params" "$d/keras"
  # module repr (BERT_base.model): "(query): Linear(in_features=768, out_features=768, bias=True), 590,592 params"
  local lin='Linear(in_features=768, out_features=768, bias=True), 590,592 params'
  gen sub "$d/repr-neg" "$bert" "$lin" 'Linear(in_features=768, out_features=768, bias=True), -590,592 params'; summary_case "repr: negative params" "$d/repr-neg"
  gen sub "$d/repr-1e400" "$bert" "$lin" 'Linear(in_features=768, out_features=768, bias=True), 1e400 params'; summary_case "repr: 1e400 params" "$d/repr-1e400"
  gen sub "$d/repr-negin" "$bert" "$lin" 'Linear(in_features=-768, out_features=768, bias=True), 590,592 params'; summary_case "repr: in_features=-768" "$d/repr-negin"
  gen sub "$d/repr-hugein" "$bert" "$lin" 'Linear(in_features=99999999999999999999, out_features=768, bias=True), 590,592 params'; summary_case "repr: in_features=10^20" "$d/repr-hugein"
  gen sub "$d/repr-emb" "$bert" 'Embedding(28996, 768, padding_idx=0)' 'Embedding(28996, 1e400, padding_idx=0)'; summary_case "repr: Embedding(28996, 1e400)" "$d/repr-emb"
  gen sub "$d/repr-i64emb" "$bert" 'Embedding(28996, 768, padding_idx=0)' 'Embedding(9223372036854775807, 9223372036854775807, padding_idx=0)'; summary_case "repr: Embedding(2^63-1, 2^63-1)" "$d/repr-i64emb"
  gen half "$d/repr-half" "$bert";               summary_case "repr: truncated (unbalanced parens)" "$d/repr-half"
  gen sub "$d/repr-close" "$bert" ')' '))' all;   summary_case "repr: every ) doubled" "$d/repr-close"
  gen deep-repr "$d/repr-deep" 100000;           summary_case "repr: 100 000-deep nesting" "$d/repr-deep"
  printf 'hello world\nthis is not a model summary\n' >"$d/prose"; summary_case "prose, no layers" "$d/prose"
  printf 'Total params: 5\n' >"$d/total-only";   summary_case "only a Total params line" "$d/total-only"
  : >"$d/empty";                                 summary_case "empty file" "$d/empty"
  printf '\n   \n\t\n' >"$d/blank";               summary_case "whitespace only" "$d/blank"
  summary_case "binary garbage" "$in/garbage.bin"
  printf 'Layer (type)\x00\x00\x00' >"$d/nul-head"; summary_case "header then NUL bytes" "$d/nul-head"
  summary_case "a directory" "$d"
  summary_case "missing file" "$d/nope"
}

# =============================================================================================
# Surface 4: CSV data sets (estimate eval, sim --workloads / --trace)
# =============================================================================================
# csv_family RUNNER_FN TAG BASE_CSV TEXT_COLUMN NUMERIC_COLUMN... : the shared CSV faults, each
# applied to a copy of BASE_CSV (first data row) and handed to RUNNER_FN CASE FILE. The first
# numeric column must be a required one: only it also gets an empty cell (others may be
# optional, where empty is valid).
csv_family() {
  local fn=$1 tag=$2 base=$3 textcol=$4
  shift 4
  local d="$in/csv/$tag" col v
  mkdir -p "$d"
  # carma-workloads rows name their summaries in a summaries/ folder beside the CSV file.
  ln -sfn "$carma/summaries" "$d/summaries"
  cp "$base" "$d/copy.csv"
  as_baseline=1 "$fn" "$tag: baseline" "$d/copy.csv"
  : >"$d/empty";                                     "$fn" "$tag: empty file" "$d/empty"
  gen csv "$d/header-only" "$base" header-only;      "$fn" "$tag: header only" "$d/header-only"
  gen csv "$d/short-row" "$base" short-row;          "$fn" "$tag: row with a cell missing" "$d/short-row"
  gen csv "$d/long-row" "$base" long-row;            "$fn" "$tag: row with an extra cell" "$d/long-row"
  gen csv "$d/unterminated" "$base" unterminated;    "$fn" "$tag: unterminated quote" "$d/unterminated"
  gen csv "$d/bad-utf8" "$base" set "$textcol" $'\xff\xfe';  "$fn" "$tag: invalid UTF-8 in '$textcol'" "$d/bad-utf8"
  gen csv "$d/dup-col" "$base" dup-col "$1";         "$fn" "$tag: column '$1' twice" "$d/dup-col"
  # A row given twice: one model measured twice counts double (a trace's repeat is a second job)
  if [[ "$tag" != trace ]]; then gen csv "$d/dup-row" "$base" dup-row; "$fn" "$tag: a row twice" "$d/dup-row"; fi
  for col in "$@"; do
    gen csv "$d/drop" "$base" drop-col "$col";       "$fn" "$tag: column '$col' missing" "$d/drop"
    local values=(9e300 -1 nan inf abc 99999999999999999999)
    [[ "$col" == "$1" ]] && values+=("")
    for v in "${values[@]}"; do
      gen csv "$d/set" "$base" set "$col" "$v";      "$fn" "$tag: '$col' = '$v'" "$d/set"
    done
  done
  "$fn" "$tag: binary garbage" "$in/garbage.bin"
  "$fn" "$tag: 300 MiB (sparse)" "$in/huge-300MiB.csv"
}

eval_carma() { run_case csv:eval "$1" "$colo" estimate eval --dataset "$2" --format carma-workloads --estimator horus --json; }
eval_cnn() { run_case csv:eval "$1" "$colo" estimate eval --dataset "$2" --format gpumemnet-cnn --estimator horus --json; }
eval_mlp() { run_case csv:eval "$1" "$colo" estimate eval --dataset "$2" --format gpumemnet-mlp --estimator horus --json; }
sim_workloads() { run_case csv:sim "$1" "$colo" sim --workloads "$2" --trace "$trace" --gpus 4 --gpu-memory-mib 40960 --policy magm --estimator oracle --sharing mps --json; }
sim_trace() { run_case csv:sim "$1" "$colo" sim --workloads "$workloads" --trace "$2" --gpus 4 --gpu-memory-mib 40960 --policy magm --estimator oracle --sharing mps --json; }

sweep_csv() {
  baseline csv:eval "$colo" estimate eval --dataset "$workloads" --format carma-workloads --estimator horus --json
  baseline csv:eval "$colo" estimate eval --dataset "$in/cnn.csv" --format gpumemnet-cnn --estimator horus --json
  baseline csv:eval "$colo" estimate eval --dataset "$in/mlp.csv" --format gpumemnet-mlp --estimator horus --json
  csv_family eval_carma carma "$workloads" workload batch_size measured_mib
  csv_family eval_cnn cnn "$in/cnn.csv" Filename "Batch Size" "Max GPU Memory (MiB)"
  csv_family eval_mlp mlp "$in/mlp.csv" Filename "Batch Size" "Max GPU Memory (MiB)"
  # GPUMemNet rows describe the network in a Python-literal list.
  local d="$in/csv/cnn"
  gen csv "$d/ap" "$in/cnn.csv" set Activations-Params "[('conv2d', -5, 3)]";           eval_cnn "cnn: negative activations" "$d/ap"
  gen csv "$d/ap" "$in/cnn.csv" set Activations-Params "[('conv2d', 1e400, 3)]";        eval_cnn "cnn: 1e400 activations" "$d/ap"
  gen csv "$d/ap" "$in/cnn.csv" set Activations-Params "[('conv2d', 30276, 2744)";       eval_cnn "cnn: unterminated layer list" "$d/ap"
  gen csv "$d/ap" "$in/cnn.csv" set Activations-Params "garbage";                         eval_cnn "cnn: layer list 'garbage'" "$d/ap"
  gen csv "$d/ap" "$in/cnn.csv" deep-list Activations-Params 100000;                     eval_cnn "cnn: 100 000-deep [[...]] layer list" "$d/ap"

  # --rows prints every row's id: an id that is not UTF-8 must not break the JSON output.
  run_case csv:eval "carma: invalid UTF-8 in 'workload', --rows" "$colo" estimate eval --dataset "$in/csv/carma/bad-utf8" --format carma-workloads --estimator horus --rows --json
  baseline csv:sim "$colo" sim --workloads "$workloads" --trace "$trace" --gpus 4 --gpu-memory-mib 40960 --policy magm --estimator oracle --sharing mps --json
  csv_family sim_workloads workloads "$workloads" workload gpus measured_mib epoch_minutes
  csv_family sim_trace trace "$trace" workload submit_offset_s
  d="$in/csv/trace"
  gen csv "$d/x" "$trace" set workload no_such_workload;  sim_trace "trace: unknown workload" "$d/x"
  gen csv "$d/x" "$trace" set submit_offset_s 1e15;       sim_trace "trace: offset 1e15 s" "$d/x"
}

# =============================================================================================
# Surface 4b: colod's own inputs (flags, the TOML configuration of packaging/colod.toml)
# =============================================================================================
# A daemon has no "exit 0 = accepted": colod that is still running after colod_wait seconds has
# accepted its input (silent); one that refuses it must exit at once with one line.
colod_wait=8
run_colod_case() {  # SURFACE CASE ARGS...
  local surface=$1 name=$2 dir rc
  shift 2
  dir=$(mktemp -d "$work/colod-case-XXXXXX")
  local state_args=(--state-dir "$dir")
  [[ " $* " == *" --state-dir "* ]] && state_args=()   # the case is about --state-dir itself
  timeout -k 5 "$colod_wait" "$colod" "${state_args[@]}" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  rc=$?
  classify "$rc" "$work/stderr" "$work/stdout"
  if ((rc == 124)) && [[ "$verdict" != crash || "$detail" == timeout* ]]; then
    verdict=silent detail="colod started and ran for ${colod_wait} s"
  fi
  if [[ "${as_baseline:-0}" == 1 ]]; then
    [[ "$verdict" == silent ]] || echo "bad-inputs: WARNING: the $surface baseline does not run ($detail): $msg" >&2
    return
  fi
  record "$surface" "$name" "$verdict" "$detail" "$msg"
}

config_case() {  # CASE TEXT (printf %b): a configuration file with one bad entry
  local f
  f="$in/conf/$(printf '%s' "$1" | tr -c 'A-Za-z0-9_-' '_').toml"
  printf '%b' "$2" >"$f"
  run_colod_case colod:config "$1" --fake-gpus 1x40GiB --config "$f"
}

sweep_colod_inputs() {
  mkdir -p "$in/conf"
  printf '[policy]\nname = "magm"\nsmact_cap = 0.8\n' >"$in/conf/baseline.toml"
  as_baseline=1 run_colod_case colod:config baseline --fake-gpus 1x40GiB --config "$in/conf/baseline.toml"
  config_case "unknown key policy.nmae" '[policy]\nnmae = "magm"\n'
  config_case "unknown section [frobnicate]" '[frobnicate]\na = 1\n'
  config_case "top-level key, not a table" 'policy = "magm"\n'
  config_case "policy.name bogus" '[policy]\nname = "bogus"\n'
  config_case "policy.name = 5" '[policy]\nname = 5\n'
  config_case "policy.name = node-weight (ranks Slurm nodes)" '[policy]\nname = "node-weight"\n'
  config_case "policy.conditions = \"yes\"" '[policy]\nconditions = "yes"\n'
  local v
  for v in 1.5 -0.1 nan inf '"0.8"'; do config_case "policy.smact_cap = $v" "[policy]\nsmact_cap = $v\n"; done
  for v in '"-1GiB"' '"12XB"' -1 '"2TiB"' 9223372036854775807 '""'; do config_case "policy.margin = $v" "[policy]\nmargin = $v\n"; done
  config_case "policy.min_free_unknown = 9223372036854775807" '[policy]\nmin_free_unknown = 9223372036854775807\n'
  config_case "recovery.mode bogus" '[recovery]\nmode = "bogus"\n'
  for v in 0 -1 2.5 nan 1001 9223372036854775807; do config_case "recovery.max_attempts = $v" "[recovery]\nmax_attempts = $v\n"; done
  config_case "recovery.step = \"0\"" '[recovery]\nstep = "0"\n'
  config_case "recovery.step = 0" '[recovery]\nstep = 0\n'
  config_case "recovery.lost bogus" '[recovery]\nlost = "bogus"\n'
  for v in -1 nan 1e309; do config_case "estimator.history_margin = $v" "[estimator]\nhistory_margin = $v\n"; done
  config_case "sharing.mode bogus" '[sharing]\nmode = "bogus"\n'
  for v in 0 -1 nan inf; do config_case "sampling.interval_s = $v" "[sampling]\ninterval_s = $v\n"; done
  for v in 0 nan; do config_case "sampling.window_s = $v" "[sampling]\nwindow_s = $v\n"; done
  for v in -1 nan; do config_case "jobs.cancel_grace_s = $v" "[jobs]\ncancel_grace_s = $v\n"; done
  for v in 0 -1 nan 1e300; do config_case "jobs.max_request_bytes = $v" "[jobs]\nmax_request_bytes = $v\n"; done
  for v in -1 '"-1GiB"' '"2TiB"' 9223372036854775807 '"lots"' 1.5; do config_case "jobs.max_log = $v" "[jobs]\nmax_log = $v\n"; done
  for v in -1 nan inf 36501 '"30"'; do config_case "jobs.keep_logs_days = $v" "[jobs]\nkeep_logs_days = $v\n"; done
  config_case "gpus.managed = \"0\"" '[gpus]\nmanaged = "0"\n'
  config_case "gpus.managed = [99]" '[gpus]\nmanaged = [99]\n'
  config_case "gpus.managed = [-1]" '[gpus]\nmanaged = [-1]\n'
  config_case "gpus.managed = [1.5]" '[gpus]\nmanaged = [1.5]\n'
  config_case "unterminated string" '[policy]\nname = "magm\n'
  gen toml-deep-array "$in/conf/deep.toml" 10000
  run_colod_case colod:config "a = [[[...]]] 10000 deep" --fake-gpus 1x40GiB --config "$in/conf/deep.toml"
  run_colod_case colod:config "binary garbage" --fake-gpus 1x40GiB --config "$in/garbage.bin"
  run_colod_case colod:config "missing file" --fake-gpus 1x40GiB --config "$work/nope.toml"
  run_colod_case colod:config "a directory" --fake-gpus 1x40GiB --config "$in/conf"
  for v in 0x40GiB 1x0GiB 1x-1GiB abc "" 100001x40GiB 1x99999999999999999999GiB 1x40XB -1x40GiB 99999999999999999999x1GiB; do
    run_colod_case colod:flags "--fake-gpus '$v'" --fake-gpus "$v"
  done
  run_colod_case colod:flags "--policy bogus" --fake-gpus 1x40GiB --policy bogus
  run_colod_case colod:flags "--policy node-weight" --fake-gpus 1x40GiB --policy node-weight
  run_colod_case colod:flags "unknown flag --frobnicate" --fake-gpus 1x40GiB --frobnicate
  run_colod_case colod:flags "--socket in a missing directory" --fake-gpus 1x40GiB --socket "$work/nope/dir/colo.sock"
  run_colod_case colod:flags "--state-dir is a regular file" --fake-gpus 1x40GiB --state-dir "$in/garbage.bin"
}

# =============================================================================================
# Surface 5: colod's HTTP API, raw requests over the Unix socket (python3 stdlib only)
# =============================================================================================
cat >"$work/api.py" <<'PY'
# Sends each case as raw bytes on a fresh connection and classifies colod's answer.
# argv: SOCKET COLOD_PID COLOD_LOG OUT_TSV FIRST_CASE. Exit 3 (next case on stdout) when colod died.
import json, os, re, socket, sys, time

sock_path, pid, log_path, out_path, first = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
SAN = re.compile(rb'AddressSanitizer|LeakSanitizer|runtime error:')

def alive():
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False

def exchange(data, wait=15.0):
    """Sends data; returns (status or None, body bytes, note)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(wait)
    s.connect(sock_path)
    note = ''
    try:
        s.sendall(data)
    except OSError as e:        # colod may answer (413, 431) and close before reading it all
        note = f'send: {e.strerror}'
    out = b''
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        note = f'no complete response in {wait:g} s'
    except OSError as e:
        note = f'recv: {e.strerror}'
    s.close()
    m = re.match(rb'HTTP/1\.[01] (\d{3})', out)
    if not m:
        return None, out, note or 'connection closed without a response'
    return int(m.group(1)), out.partition(b'\r\n\r\n')[2], note

def req(method, target, body=b'', headers=None, length=True):
    h = f'{method} {target} HTTP/1.1\r\nHost: colo\r\n'.encode()
    for k, v in (headers or []):
        h += k + b': ' + v + b'\r\n' if isinstance(k, bytes) else f'{k}: {v}\r\n'.encode()
    if length and body is not None:
        h += f'Content-Length: {len(body)}\r\n'.encode()
    return h + b'\r\n' + (body or b'')

def job(**fields):            # a submission that is valid except for what `fields` change
    j = {'argv': ['/bin/true'], 'gpus': 1, 'mem_mib': 1024, 'name': 'bad-input'}
    for k, v in fields.items():
        if v is KeyError: j.pop(k, None)
        else: j[k] = v
    return req('POST', '/v1/jobs', json.dumps(j).encode())

def raw_job(text):            # a submission body given as JSON text (numbers JSON cannot spell in Python)
    return req('POST', '/v1/jobs', text.encode() if isinstance(text, str) else text)

deep = 100000
J = '{"argv": ["/bin/true"], "gpus": 1, "mem_mib": 1024, '
cases = [
    # request bodies of POST /v1/jobs
    ('body: not JSON', raw_job('{')),
    ('body: empty', raw_job('')),
    ('body: null', raw_job('null')),
    ('body: an array', raw_job('[]')),
    ('body: JSON then garbage', raw_job(J + '"name": "x"} xyz')),
    ('body: duplicate key argv', raw_job(J + '"argv": ["/bin/false"]}')),
    ('body: invalid UTF-8 in name', raw_job(J.encode() + b'"name": "\xff\xfe"}')),
    ('body: lone surrogate \\ud800 in name', raw_job(J + '"name": "\\ud800"}')),
    ('body: 100 000-deep array', raw_job('[' * deep + ']' * deep)),
    ('body: 100 000-deep fingerprint_inputs', raw_job(J + '"fingerprint_inputs": ' + '{"a":' * deep + '1' + '}' * deep + '}')),
    ('body: 2 MiB name', job(name='n' * (2 << 20))),
    ('body: unknown field', job(nmae='x')),
    ('argv missing', job(argv=KeyError)),
    ('argv a string', job(argv='/bin/true')),
    ('argv empty', job(argv=[])),
    ('argv [1, 2]', job(argv=[1, 2])),
    ('argv [""]', job(argv=[''])),
    ('argv with NUL', job(argv=['/bin/true\u0000x'])),
    ('argv 5000 arguments', job(argv=['/bin/true'] * 5000)),
    ('argv null', job(argv=None)),
    ('gpus -1', job(gpus=-1)),
    ('gpus 0', job(gpus=0)),
    ('gpus 65', job(gpus=65)),
    ('gpus 1.5', job(gpus=1.5)),
    ('gpus "1"', job(gpus='1')),
    ('gpus true', job(gpus=True)),
    ('gpus null', job(gpus=None)),
    ('gpus 2^63', raw_job(J.replace('"gpus": 1', '"gpus": 9223372036854775808') + '"name": "x"}')),
    ('gpus 2^64', raw_job(J.replace('"gpus": 1', '"gpus": 18446744073709551616') + '"name": "x"}')),
    ('gpus 4294967297 (2^32+1)', job(gpus=4294967297)),
    ('gpus 1e300', raw_job(J.replace('"gpus": 1', '"gpus": 1e300') + '"name": "x"}')),
    ('mem_mib 1e300', raw_job(J.replace('"mem_mib": 1024', '"mem_mib": 1e300') + '"name": "x"}')),
    ('mem_mib 1e400', raw_job(J.replace('"mem_mib": 1024', '"mem_mib": 1e400') + '"name": "x"}')),
    ('mem_mib -1', job(mem_mib=-1)),
    ('mem_mib 0', job(mem_mib=0)),
    ('mem_mib "1GiB"', job(mem_mib='1GiB')),
    ('mem_mib 2^64-1', raw_job(J.replace('"mem_mib": 1024', '"mem_mib": 18446744073709551615') + '"name": "x"}')),
    ('mem_mib 2^21 (2 TiB)', job(mem_mib=2 ** 21)),
    ('mem_mib 2^30+1', job(mem_mib=2 ** 30 + 1)),
    ('env non-string value', job(env={'A': 1})),
    ('env null value', job(env={'A': None})),
    ('env an array', job(env=['A=1'])),
    ('env name 1A', job(env={'1A': 'x'})),
    ('env name empty', job(env={'': 'x'})),
    ('env CUDA_VISIBLE_DEVICES', job(env={'CUDA_VISIBLE_DEVICES': '0'})),
    ('env value with NUL', job(env={'A': 'x\u0000y'})),
    ('env 1001 variables', job(env={f'V{i}': 'x' for i in range(1001)})),
    ('name 5', job(name=5)),
    ('name 201 characters', job(name='n' * 201)),
    ('name with NUL', job(name='a\u0000b')),
    ('workdir relative', job(workdir='relative/dir')),
    ('workdir 5', job(workdir=5)),
    ('mem_source 5', job(mem_source=5)),
    ('mem_explanation 1001 characters', job(mem_explanation='e' * 1001)),
    ('fingerprint_inputs a string', job(fingerprint_inputs='x')),
    # routes, methods and ids
    ('GET /', req('GET', '/')),
    ('GET /v2/jobs', req('GET', '/v2/jobs')),
    ('GET /v1/nope', req('GET', '/v1/nope')),
    ('GET /v1/jobs/abc', req('GET', '/v1/jobs/abc')),
    ('GET /v1/jobs/-1', req('GET', '/v1/jobs/-1')),
    ('GET /v1/jobs/0', req('GET', '/v1/jobs/0')),
    ('GET /v1/jobs/2^64', req('GET', '/v1/jobs/18446744073709551616')),
    ('GET /v1/jobs/2^64-1 (no such job)', req('GET', '/v1/jobs/18446744073709551615')),
    ('GET /v1/jobs/1.5', req('GET', '/v1/jobs/1.5')),
    ('GET /v1/jobs/%zz (bad percent-escape)', req('GET', '/v1/jobs/%zz')),
    ('GET /v1/jobs/1%00', req('GET', '/v1/jobs/1%00')),
    ('POST /v1/jobs/abc/cancel', req('POST', '/v1/jobs/abc/cancel')),
    ('GET /v1/jobs/1/nope', req('GET', '/v1/jobs/1/nope')),
    ('logs stream=bogus', req('GET', '/v1/jobs/{ID}/logs?stream=bogus')),
    ('logs offset=-1', req('GET', '/v1/jobs/{ID}/logs?offset=-1')),
    ('logs offset=abc', req('GET', '/v1/jobs/{ID}/logs?offset=abc')),
    ('logs offset=2^63', req('GET', '/v1/jobs/{ID}/logs?offset=9223372036854775808')),
    ('logs max=0', req('GET', '/v1/jobs/{ID}/logs?max=0')),
    ('logs max=99999999999999999999', req('GET', '/v1/jobs/{ID}/logs?max=99999999999999999999')),
    ('DELETE /v1/jobs', req('DELETE', '/v1/jobs')),
    ('PUT /v1/status', req('PUT', '/v1/status')),
    ('lowercase method get', req('get', '/v1/status')),
    ('method with NUL', req('GE\x00T', '/v1/status')),
    ('POST /v1/gpus/99/drain', req('POST', '/v1/gpus/99/drain')),
    ('POST /v1/gpus/-1/drain', req('POST', '/v1/gpus/-1/drain')),
    ('drain body not JSON', req('POST', '/v1/gpus/0/drain', b'{')),
    ('drain body unknown field', req('POST', '/v1/gpus/0/drain', b'{"why": "x"}')),
    ('drain reason 5', req('POST', '/v1/gpus/0/drain', b'{"reason": 5}')),
    ('GET /v1/gpus/0/drain', req('GET', '/v1/gpus/0/drain')),
    # HTTP framing
    ('Content-Length -1', req('POST', '/v1/jobs', None, [('Content-Length', '-1')])),
    ('Content-Length 2^64', req('POST', '/v1/jobs', None, [('Content-Length', '18446744073709551616')])),
    ('Content-Length 10^20', req('POST', '/v1/jobs', None, [('Content-Length', '99999999999999999999')])),
    ('Content-Length 2 MiB', req('POST', '/v1/jobs', None, [('Content-Length', str(2 << 20))])),
    ('Content-Length abc', req('POST', '/v1/jobs', None, [('Content-Length', 'abc')])),
    ('Content-Length +5', req('POST', '/v1/jobs', None, [('Content-Length', '+5')]) + b'{"a":'),
    ('Content-Length twice, different', req('POST', '/v1/jobs', None, [('Content-Length', '2'), ('Content-Length', '3')]) + b'{}'),
    ('Content-Length 10, body 5, then silence', req('POST', '/v1/jobs', None, [('Content-Length', '10')]) + b'{"a":'),
    ('body longer than Content-Length', req('POST', '/v1/jobs', None, [('Content-Length', '2')]) + b'{}{}'),
    ('Transfer-Encoding chunked', req('POST', '/v1/jobs', None, [('Transfer-Encoding', 'chunked')]) + b'2\r\n{}\r\n0\r\n\r\n'),
    ('header line without colon', b'GET /v1/status HTTP/1.1\r\nHost colo\r\n\r\n'),
    ('header name with a space', b'GET /v1/status HTTP/1.1\r\nX Y: z\r\n\r\n'),
    ('bare LF line endings', b'GET /v1/status HTTP/1.1\nHost: colo\n\n'),
    ('bare LF inside a header value', b'GET /v1/status HTTP/1.1\r\nX-A: a\nContent-Length: 5\r\n\r\n'),
    ('NUL in the request line', b'GET /v1/sta\x00tus HTTP/1.1\r\nHost: colo\r\n\r\n'),
    ('NUL in a header', b'GET /v1/status HTTP/1.1\r\nX-A: a\x00b\r\n\r\n'),
    ('HTTP/2.0', b'GET /v1/status HTTP/2.0\r\nHost: colo\r\n\r\n'),
    ('no HTTP version', b'GET /v1/status\r\nHost: colo\r\n\r\n'),
    ('request line of spaces', b'   \r\n\r\n'),
    ('absolute-form target', b'GET http://colo/v1/status HTTP/1.1\r\nHost: colo\r\n\r\n'),
    ('20 KiB path', req('GET', '/v1/' + 'a' * 20480)),
    ('65 header fields', req('GET', '/v1/status', None, [(f'X-{i}', 'y') for i in range(65)])),
    ('20 KiB header value', req('GET', '/v1/status', None, [('X-Big', 'y' * 20480)])),
    ('binary garbage', bytes(range(256)) * 16 + b'\r\n\r\n'),
    ('TLS ClientHello bytes', bytes.fromhex('16030100a5010000a10303') + b'\x00' * 64 + b'\r\n\r\n'),
]

# One valid job, so that the logs cases reach the handler's query checks.
status, body, _ = exchange(job())
job_id = json.loads(body)['id'] if status == 201 else 1

log_off = os.path.getsize(log_path) if os.path.exists(log_path) else 0
with open(out_path, 'a') as out:
    for i, (name, data) in enumerate(cases):
        if i < first:
            continue
        data = data.replace(b'{ID}', str(job_id).encode())
        status, body, note = exchange(data)
        verdict, detail, msg = None, '', ''
        new_log = b''
        if os.path.exists(log_path):
            with open(log_path, 'rb') as f:
                f.seek(log_off); new_log = f.read(); log_off += len(new_log)
        # 501 (Transfer-Encoding) and 505 (HTTP version) are the statuses RFC 9110 prescribes for
        # those requests and docs/DAEMON.md lists them: with a one-line JSON error they are clear
        # refusals, not server failures.
        refusal = status is not None and (400 <= status < 500 or status in (501, 505))
        if status is not None:
            detail = f'HTTP {status}'
            try:
                err = json.loads(body).get('error')
            except Exception:
                err = None
            msg = err if isinstance(err, str) else body[:200].decode('utf-8', 'replace')
        else:
            detail = note
        if not alive():
            verdict, detail = 'crash', f'colod died ({detail})'
            msg = new_log.decode('utf-8', 'replace').strip().splitlines()[-1:] or ['']
            msg = msg[0]
        elif SAN.search(new_log):
            verdict, detail = 'crash', f"sanitizer report in colod's log ({detail})"
            msg = next(l for l in new_log.decode('utf-8', 'replace').splitlines() if SAN.search(l.encode()))
        elif status is None:
            verdict = 'no-msg'
        elif 200 <= status < 300:
            verdict = 'silent'
        elif status >= 500 and status not in (501, 505):
            verdict = 'crash'     # 500, 503: the handler failed (501/505 are deliberate refusals, below)
        elif refusal and isinstance(err, str) and err.strip() and '\n' not in err:
            verdict = 'clear'
        elif refusal and isinstance(err, str) and '\n' in err:
            verdict = 'multi'
        else:
            verdict, detail = 'no-msg', detail + ', no one-line JSON error'
        if note and status is not None:
            detail += f' ({note})'
        clean = lambda s: re.sub(r'[\t\r\n]', ' ', s)
        out.write(f'api\t{clean(name)}\t{verdict}\t{clean(detail)}\t{clean(msg)[:300]}\n')
        out.flush()
        if verdict == 'crash' and detail.startswith('colod died'):
            print(i + 1)
            sys.exit(3)
PY

sweep_api() {
  local from=0 rc
  : >"$work/api.tsv"
  while :; do
    python3 "$work/api.py" "$sock" "$colod_pid" "$colod_log" "$work/api.tsv" "$from" >"$work/api.next"
    rc=$?
    if ((rc == 3)); then   # colod died: restart it and go on with the next case
      wait "$colod_pid" 2>/dev/null
      start_colod
      from=$(cat "$work/api.next")
      continue
    fi
    ((rc == 0)) || { echo "bad-inputs: api.py failed (exit $rc)" >&2; exit 2; }
    break
  done
  local surface name verdict detail msg
  while IFS=$'\t' read -r surface name verdict detail msg; do
    record "$surface" "$name" "$verdict" "$detail" "$msg"
  done <"$work/api.tsv"
}

# =============================================================================================
# Run
# =============================================================================================
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
changes=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null || true)
dirty=""
[ -n "$changes" ] && dirty=" (with uncommitted changes)"
echo "bad-inputs: colo $commit${dirty:-}, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), build $build, $case_timeout s per case"
echo "bad-inputs: command: scripts/bad-inputs.sh ${1:-build-test}"
echo "bad-inputs: cases that are not a clear one-line error (surface, verdict, case, what happened | first message line):"

start_colod
all_sweeps="sweep_cli_sim sweep_cli_estimate sweep_alloc_conf sweep_conv_table sweep_cli_eval sweep_cli_gpumemnet sweep_cli_daemon sweep_toml
            sweep_rad sweep_summaries sweep_csv sweep_colod_inputs sweep_api"
for sweep in ${BAD_INPUTS_ONLY:-$all_sweeps}; do
  "$sweep"
done

# colod must still be up and answering after all of it (a check, not a case).
colod_ok=1
if ! colod_alive || ! "$colo" --socket "$sock" gpus >/dev/null 2>&1; then
  colod_ok=0
  echo "colod          crash   after the sweep: colod is down or does not answer colo gpus | $(tail -1 "$colod_log")"
fi

echo
# tried = bad inputs (clear ... silent) + odd but valid ones (run_ok: accepted, or wrongly refused).
printf '%-14s %6s %6s %6s %6s %6s %6s %8s %7s\n' surface tried clear multi no-msg crash silent accepted refused
t_tried=0 t_clear=0 t_multi=0 t_nomsg=0 t_crash=0 t_silent=0 t_accepted=0 t_refused=0
for s in "${surfaces[@]}"; do
  printf '%-14s %6d %6d %6d %6d %6d %6d %8d %7d\n' "$s" "${n_tried[$s]}" "${n_clear[$s]}" "${n_multi[$s]}" "${n_nomsg[$s]}" \
    "${n_crash[$s]}" "${n_silent[$s]}" "${n_accepted[$s]}" "${n_refused[$s]}"
  t_tried=$((t_tried + n_tried[$s])) t_clear=$((t_clear + n_clear[$s])) t_multi=$((t_multi + n_multi[$s]))
  t_nomsg=$((t_nomsg + n_nomsg[$s])) t_crash=$((t_crash + n_crash[$s])) t_silent=$((t_silent + n_silent[$s]))
  t_accepted=$((t_accepted + n_accepted[$s])) t_refused=$((t_refused + n_refused[$s]))
done
printf '%-14s %6d %6d %6d %6d %6d %6d %8d %7d\n' total "$t_tried" "$t_clear" "$t_multi" "$t_nomsg" "$t_crash" "$t_silent" "$t_accepted" "$t_refused"
if ((colod_ok)); then echo "colod: alive after the sweep, answers colo gpus"; else echo "colod: DOWN after the sweep"; fi
t_bad=$((t_tried - t_accepted - t_refused))
echo "bad-inputs: $t_bad bad inputs: $t_clear clear errors, $t_multi multi-line, $t_nomsg without a message, $t_crash crashes, $t_silent silent acceptances; $((t_accepted + t_refused)) odd but valid inputs: $t_accepted accepted, $t_refused refused"
((t_crash == 0 && t_silent == 0 && t_refused == 0 && colod_ok))
