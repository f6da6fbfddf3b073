#!/usr/bin/env bash
# colod on two fake 40 GiB GPUs (no GPU needed): submits fake training jobs that collocate
# under the default MAGM policy, shows `colo queue` and `colo gpus` while they run, waits for
# them, then stops the daemon. Usage: scripts/daemon-demo.sh [BUILD_DIR] (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [ ! -x "$build/colod" ] || [ ! -x "$build/colo" ] || [ ! -x "$build/colo-fake-job" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF -DCOLO_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" --target colod colo colo-fake-job
fi
state=$(mktemp -d /tmp/colod-demo-XXXXXX)
chmod 755 "$state"
export COLO_SOCKET=$state/colo.sock
colo=$build/colo
job=$(readlink -f "$build/colo-fake-job")

"$build/colod" --fake-gpus 2x40GiB --state-dir "$state" --metrics-listen 127.0.0.1:0 >"$state/colod.log" 2>&1 &
colod_pid=$!
trap 'kill $colod_pid 2>/dev/null || true; wait $colod_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do "$colo" gpus >/dev/null 2>&1 && break; sleep 0.1; done
echo "== colod on 2 fake 40 GiB GPUs, state in $state"
sed 's/^/   /' "$state/colod.log"

echo "== submitting 6 fake training jobs (memory declared with --mem; MAGM places each on the GPU with most free memory)"
ids=()
for spec in "resnet50 10GiB 9GiB 0.30" "bert-base 14GiB 13GiB 0.35" "vgg16 8GiB 7GiB 0.20" \
            "mobilenet 5GiB 4GiB 0.15" "xception 12GiB 11GiB 0.25" "inception 9GiB 8GiB 0.20"; do
  set -- $spec
  id=$("$colo" submit --name "$1" --mem "$2" -- "$job" --mem "$3" --ramp 1 --hold 8 --sm-activity "$4")
  echo "   colo submit --name $1 --mem $2 -- colo-fake-job --mem $3 …  -> job $id"
  ids+=("$id")
done
sleep 3
echo "== colo queue"
"$colo" queue
echo "== colo gpus"
"$colo" gpus
for _ in $(seq 100); do [ -s "$state/web.addr" ] && break; sleep 0.1; done
web=$(cat "$state/web.addr")
echo "== curl http://$web/metrics (the dashboard is at http://$web/ while colod runs)"
curl -s "http://$web/metrics" | grep -E '^(colo_jobs\{state="running"\}|colo_gpu_jobs|DCGM_FI_DEV_FB_USED)' | sed 's/,UUID="[^"]*"//'
echo "== waiting for the jobs to finish"
for id in "${ids[@]}"; do
  while :; do
    state_now=$("$colo" show "$id" --json | sed -n 's/^  "state": "\(.*\)",$/\1/p')
    case "$state_now" in done|failed|cancelled) break ;; esac
    sleep 0.5
  done
done
echo "== colo queue --all"
"$colo" queue --all
echo "== colo show ${ids[0]}"
"$colo" show "${ids[0]}"
mkdir -p out
"$build/colo" report --state-dir "$state" --report out/colod-report.html
kill "$colod_pid"; wait "$colod_pid" 2>/dev/null || true
trap - EXIT
echo "== colod stopped; state kept in $state"
