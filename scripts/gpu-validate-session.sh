#!/bin/bash
# A GPU validation session (docs/GPU-VALIDATION.md), on a machine with an NVIDIA GPU, PyTorch and
# colo built: real GPU memory of scripts/gpu-validate.configs, the probe on this machine's PyTorch,
# the probe's unit tests there, NVML discovery through `colo slurm conf`, and `colo bench collocation`
# (streams, then MPS when nvidia-cuda-mps-control is on PATH). Every result lands in OUT (default
# ./gpu-validation-out); each step is time-boxed so a slow one cannot hide the others.
#   bash scripts/gpu-validate-session.sh [OUT]
set -u
# OUT is relative to where the script is started; it must exist or be creatable.
O=$(mkdir -p "${1:-gpu-validation-out}" && cd "${1:-gpu-validation-out}" && pwd) || { echo "gpu-validate-session: cannot create ${1:-gpu-validation-out}" >&2; exit 1; }
cd "$(dirname "$0")/.."
COLO=${COLO:-build/colo}
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*" >> "$O/env.txt"; }
{ date; nvidia-smi; python3 -c "import torch,torchvision;print('torch',torch.__version__,'tv',torchvision.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version())"
  command -v python3 nvidia-cuda-mps-control; nproc; } > "$O/env.txt" 2>&1
# The probe (CPU only) and its tests beside the GPU measurements: they use no GPU.
( timeout 200 python3 scripts/gpu-validate.py trace --configs scripts/gpu-validate.configs --dir "$O/traces" > "$O/trace.log" 2>&1 ) &
( cd tests/probe && PYTHONPATH=../../python timeout 600 python3 -m unittest discover -v -p 'test_*.py' > "$O/probe-tests.log" 2>&1
  echo "exit $?" >> "$O/probe-tests.log" ) &
stamp measure
timeout 300 python3 scripts/gpu-validate.py measure --configs scripts/gpu-validate.configs --out "$O/measured.jsonl" --timeout 60 >> "$O/env.txt" 2>&1
stamp measured
wait
{ "$COLO" slurm conf --out "$O/slurm-conf" --node validate && cat "$O/slurm-conf/gres.conf"; } >> "$O/env.txt" 2>&1
J1='r50=python3 examples/collocation_job.py --model resnet50 --batch 64'
J2='mnv2=python3 examples/collocation_job.py --model mobilenet_v2 --batch 64'
stamp streams
timeout 150 "$COLO" bench collocation --sharing streams --job "$J1" --job "$J2" --warmup-s 8 --measure-s 15 \
  --work-dir "$O/bench-streams" --out "$O/bench-streams.toml" --measurements "$O/bench-streams.json" > "$O/bench.log" 2>&1
echo "streams exit $?" >> "$O/bench.log"
if command -v nvidia-cuda-mps-control >/dev/null && [ -s "$O/bench-streams.json" ]; then
  stamp mps
  timeout 70 "$COLO" bench collocation --sharing mps --job "$J1" --job "$J2" --warmup-s 8 --measure-s 15 \
    --solo-from "$O/bench-streams.json" --work-dir "$O/bench-mps" --out "$O/bench-mps.toml" --measurements "$O/bench-mps.json" >> "$O/bench.log" 2>&1
  echo "mps exit $?" >> "$O/bench.log"
fi
stamp done
tail -30 "$O/env.txt"
