#!/usr/bin/env bash
# colod on two fake 40 GiB GPUs (no GPU needed): submits fake training jobs that collocate
# under the default MAGM policy, shows `colo queue` and `colo gpus` once they all run, lets them
# finish, then stops the daemon. Every step waits for what colod reports (a job's state, a
# GPU's memory), never for a fixed time, and fails with the reason if it does not come.
# Usage: scripts/daemon-demo.sh [BUILD_DIR] (default: the repository's build/; scripts/demo.sh
# builds it); the report page goes to $COLO_DEMO_OUT (default: the repository's out/), colod's
# state to a new directory under $TMPDIR (default /tmp), kept unless COLO_DEMO_CLEANUP=1 (the
# tests) and the demo went well. Relative paths are the caller's.
set -euo pipefail
demo_name=daemon-demo
source "$(dirname "$0")/demo-paths.sh"  # repo, build, out; checks the build's binaries
state=$(mktemp -d "${TMPDIR:-/tmp}/colod-demo-XXXXXX")
chmod 755 "$state"
export COLO_SOCKET=$state/colo.sock
colo=$build/colo
job=$(readlink -f "$build/colo-fake-job")
release=$state/release  # the fake jobs hold their memory until this file exists

"$build/colod" --fake-gpus 2x40GiB --state-dir "$state" --metrics-listen 127.0.0.1:0 >"$state/colod.log" 2>&1 &
colod_pid=$!
trap 'touch "$release"; kill $colod_pid 2>/dev/null || true; wait $colod_pid 2>/dev/null || true' EXIT

fail() {
  echo "daemon-demo: $*" >&2
  echo "daemon-demo: colod's log ($state/colod.log):" >&2
  tail -n 20 "$state/colod.log" | sed 's/^/   /' >&2
  exit 1
}
# Polls `check` (a command) every 0.2 s until it succeeds; colod exiting, a job ending other than
# done, or 300 s passing is a failure naming `what` (the bound only ends a demo that went wrong:
# nothing waits for it).
wait_for() {
  local what=$1; shift
  local deadline=$((SECONDS + 300))
  until "$@"; do
    kill -0 "$colod_pid" 2>/dev/null || fail "colod exited while waiting for $what"
    if [ -n "${ids[*]:-}" ]; then
      local s; s=$(demo_status)
      [[ $s == *failed=* || $s == *cancelled=* || $s == *oom=* ]] && fail "a job did not end well while waiting for $what ($s)"
    fi
    [ "$SECONDS" -lt "$deadline" ] || fail "no $what after 300 s ($(demo_status 2>&1 || true))"
    sleep 0.2
  done
}
colod_answers() { "$colo" gpus >/dev/null 2>&1; }
# One line of what colod reports: jobs per state, memory used on the GPUs, most jobs on one GPU.
demo_status() {
  { "$colo" queue --all --json; echo; "$colo" gpus --json; } | python3 -c '
import json, sys
queue, gpus = [json.loads(part) for part in sys.stdin.read().split("\n\n", 1)]
states = {}
for j in queue: states[j["state"]] = states.get(j["state"], 0) + 1
print(" ".join(f"{k}={v}" for k, v in sorted(states.items())),
      "used_mib=%d" % sum(g["used_mib"] for g in gpus), "most_on_one_gpu=%d" % max(len(g["jobs"]) for g in gpus))'
}
status_has() { demo_status | grep -q -- "$1"; }
all_ramped() {  # six running, their 52 GiB allocated (the fake jobs' own --mem below)
  local s; s=$(demo_status)
  [[ $s == *running=6* ]] && (( $(sed 's/.*used_mib=\([0-9]*\).*/\1/' <<<"$s") >= 52 * 1024 ))
}

ids=()
wait_for "answer from colod on $COLO_SOCKET" colod_answers
echo "== colod on 2 fake 40 GiB GPUs, state in $state"
sed 's/^/   /' "$state/colod.log"

echo "== submitting 6 fake training jobs (memory declared with --mem; MAGM places each on the GPU with most free memory)"
# Their SM activities add up to 0.8 (the default SMACT cap) only all six together, which their
# memory (58 GiB) never puts on one GPU: however placements and samples interleave, all six run.
for spec in "resnet50 10GiB 9GiB 0.15" "bert-base 14GiB 13GiB 0.20" "vgg16 8GiB 7GiB 0.10" \
            "mobilenet 5GiB 4GiB 0.10" "xception 12GiB 11GiB 0.15" "inception 9GiB 8GiB 0.10"; do
  set -- $spec
  id=$("$colo" submit --name "$1" --mem "$2" -- "$job" --mem "$3" --ramp 1 --until-file "$release" --sm-activity "$4")
  echo "   colo submit --name $1 --mem $2 -- colo-fake-job --mem $3 …  -> job $id"
  ids+=("$id")
done
wait_for "six jobs running with their memory allocated" all_ramped
echo "== colo queue"
"$colo" queue
echo "== colo gpus"
"$colo" gpus
wait_for "dashboard address in $state/web.addr" test -s "$state/web.addr"
web=$(cat "$state/web.addr")
echo "== curl http://$web/metrics (the dashboard is at http://$web/ while colod runs)"
metrics=$(curl -sf "http://$web/metrics") || fail "no answer from http://$web/metrics"
grep -E '^(colo_jobs\{state="running"\}|colo_gpu_jobs|DCGM_FI_DEV_FB_USED)' <<<"$metrics" | sed 's/,UUID="[^"]*"//' ||
  fail "http://$web/metrics has none of colo_jobs, colo_gpu_jobs, DCGM_FI_DEV_FB_USED"
echo "== the jobs finish (each holds its memory until $release exists)"
touch "$release"
wait_for "end of all six jobs" status_has "^done=6 "
echo "== colo queue --all"
"$colo" queue --all
echo "== colo show ${ids[0]}"
"$colo" show "${ids[0]}"
mkdir -p "$out"
"$colo" report --state-dir "$state" --report "$out/colod-report.html"
kill "$colod_pid"; wait "$colod_pid" 2>/dev/null || true
trap - EXIT
if [ "${COLO_DEMO_CLEANUP:-0}" = 1 ]; then
  rm -rf "$state"
  echo "== colod stopped; state removed"
else
  echo "== colod stopped; state kept in $state"
fi
