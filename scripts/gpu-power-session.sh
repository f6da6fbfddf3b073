#!/bin/bash
# Board power under collocation on a real GPU (docs/GPU-VALIDATION.md §5, issue 14): `colo bench
# collocation` reads the idle power, then three training jobs of different SM activity alone and
# in every pair under MPS, then the same pairs time-sliced ("streams", the solo runs reused), and
# fits the simulator's power model (idle, busy and max watts) to each. nvidia-smi logs power,
# utilisation and SM clock beside it as an independent record. Results land in OUT (default
# ./gpu-power-out), at most 8 files (the job logs packed in one archive).
#   bash scripts/gpu-power-session.sh [OUT]
# COLO (default build/colo), COLO_BENCH_EXTRA (extra bench flags, e.g. "--fake-gpus 1x40GiB") and
# COLO_BENCH_JOBS (NAME=COMMAND lines) let it be tried without a GPU.
set -u
# OUT is relative to where the script is started; it must exist or be creatable.
O=$(mkdir -p "${1:-gpu-power-out}" && cd "${1:-gpu-power-out}" && pwd) || { echo "gpu-power-session: cannot create ${1:-gpu-power-out}" >&2; exit 1; }
cd "$(dirname "$0")/.."
COLO=${COLO:-build/colo}
W=$(mktemp -d /tmp/colo-power-XXXXXX)
export PYTHONUNBUFFERED=1
JOBS=${COLO_BENCH_JOBS:-"r50=python3 examples/collocation_job.py --model resnet50 --batch 64
mnv2=python3 examples/collocation_job.py --model mobilenet_v2 --batch 64
mnv3s=python3 examples/collocation_job.py --model mobilenet_v3_small --batch 32"}
args=()
while IFS= read -r j; do [ -n "$j" ] && args+=(--job "$j"); done <<< "$JOBS"
read -r -a extra <<< "${COLO_BENCH_EXTRA:-}"
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*" >> "$O/env.txt"; }
{ date; nvidia-smi; nvidia-smi -q -d POWER; } > "$O/env.txt" 2>&1
SMI=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,clocks.sm,memory.used --format=csv,nounits -lms 500 \
    > "$O/nvidia-smi-power.csv" 2>&1 &
  SMI=$!
fi
stamp mps
timeout "${MPS_TIMEOUT:-290}" "$COLO" bench collocation --sharing mps "${args[@]}" "${extra[@]}" --idle-s 10 \
  --warmup-s 5 --measure-s 12 --work-dir "$W/mps" --out "$O/power-mps.toml" --measurements "$O/power-mps.json" > "$O/bench.log" 2>&1
echo "mps exit $?" >> "$O/bench.log"
if [ -s "$O/power-mps.json" ]; then
  stamp streams
  timeout "${STREAMS_TIMEOUT:-150}" "$COLO" bench collocation --sharing streams "${args[@]}" "${extra[@]}" --idle-s 10 \
    --warmup-s 5 --measure-s 12 --solo-from "$O/power-mps.json" --work-dir "$W/streams" \
    --out "$O/power-streams.toml" --measurements "$O/power-streams.json" >> "$O/bench.log" 2>&1
  echo "streams exit $?" >> "$O/bench.log"
fi
stamp done
[ -n "$SMI" ] && kill "$SMI"
tar -C "$W" -czf "$O/job-logs.tgz" . 2>/dev/null
cat "$O/bench.log"
