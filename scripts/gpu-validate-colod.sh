#!/bin/bash
# colod on the real GPU: NVML discovery and monitoring, jobs of a non-root user, one with --probe.
# As root on a machine with an NVIDIA GPU and PyTorch (docs/GPU-VALIDATION.md §4): starts colod on
# the real NVML backend, has an unprivileged user `val` (created if missing) submit three training
# jobs — two with --mem, one with --probe (colod runs the probe as val) — polls `colo queue` and
# `colo gpus` until they end, then records `colo show` of each and the /metrics lines. Results in
# OUT (default /tmp/colod-validate). Needs build/colo and build/colod; PY (default: python3 on PATH)
# must import torch and torchvision; FAKE="--fake-gpus 1x140GiB" runs the same on the fake NVML.
#   sudo bash scripts/gpu-validate-colod.sh [OUT]
set -u
O=${1:-/tmp/colod-validate}; mkdir -p "$O" || { echo "gpu-validate-colod: cannot create $O" >&2; exit 1; }; O=$(cd "$O" && pwd)
cd "$(dirname "$0")/.."
PY=${PY:-$(command -v python3)}
STEPS=${STEPS:-600}
FAKE=${FAKE:-}
W=/tmp/val-work; rm -rf $W; mkdir -p $W/bin; cp -r examples python calibration $W/
cp build/colo build/colod $W/bin/; [ -d .devlibs ] && cp .devlibs/*.so* $W/bin/  # libraries carried beside a build from elsewhere
chmod -R a+rX $W
export LD_LIBRARY_PATH=$W/bin
id val >/dev/null 2>&1 || useradd -m val
S=/tmp/colod-state; rm -rf $S; mkdir -p $S; chmod 755 $S
export COLO_PYTHON=$PY COLO_PROBE_PATH=$W/python COLO_CALIBRATION_DIR=$W/calibration
R="$O/run.txt"
$W/bin/colod --state-dir $S --metrics-listen 127.0.0.1:0 $FAKE > "$O"/colod.log 2>&1 &
CP=$!
for i in $(seq 150); do $W/bin/colo --socket $S/colo.sock gpus >/dev/null 2>&1 && break; sleep 0.2; done
asval() { su val -s /bin/bash -c "cd $W && LD_LIBRARY_PATH=$W/bin COLO_SOCKET=$S/colo.sock $*"; }
{ echo "== gpus at start"; asval bin/colo gpus; } >> "$R" 2>&1
J="bin/colo submit"
ids=$(
asval $J --name r50 --mem 16GiB -- env COLO_BENCH_PROGRESS=/tmp/val-p1 $PY examples/collocation_job.py --model resnet50 --batch 64 --max-steps $STEPS
asval $J --name r50-probed --probe torchvision:resnet50 --input 3x224x224 --batch 64 --optimizer adam -- env COLO_BENCH_PROGRESS=/tmp/val-p2 $PY examples/collocation_job.py --model resnet50 --batch 64 --max-steps $STEPS
asval $J --name mnv2 --mem 12GiB -- env COLO_BENCH_PROGRESS=/tmp/val-p3 $PY examples/collocation_job.py --model mobilenet_v2 --batch 64 --max-steps $STEPS
)
echo "submitted: $ids" >> "$R"
T0=$(date +%s)
while :; do
  n=0; for id in $ids; do st=$(asval bin/colo show $id --json | sed -n 's/^  "state": "\(.*\)",$/\1/p'); case "$st" in done|failed|cancelled) ;; *) n=$((n+1));; esac; done
  { echo "== $(( $(date +%s) - T0 )) s: $n active"; asval bin/colo queue; asval bin/colo gpus; } >> "$R" 2>&1
  [ $n = 0 ] && break
  [ $(( $(date +%s) - T0 )) -gt ${WAIT_S:-150} ] && { echo "gave up waiting" >> "$R"; break; }
  sleep 4
done
for id in $ids; do { echo "== show $id"; asval bin/colo show $id; echo "== logs $id (tail)"; asval bin/colo logs $id | tail -5; asval bin/colo logs $id --stderr 2>/dev/null | tail -5; } >> "$R" 2>&1; asval bin/colo show $id --json >> "$O"/show.json 2>&1; done
W_ADDR=$(cat $S/web.addr 2>/dev/null); [ -n "$W_ADDR" ] && { echo "== metrics"; curl -s http://$W_ADDR/metrics | grep -E "^(DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_SM_ACTIVE|colo_jobs|DCGM_FI_DEV_POWER)" | head -20; } >> "$R" 2>&1
kill $CP; wait $CP
tail -40 "$R"
