#!/bin/bash
# A GPU session for cuDNN's workspace and the allocator settings (docs/GPU-VALIDATION.md §6, §7), on
# a machine with an NVIDIA GPU and PyTorch >= 2.1: what every convolution of
# docs/gpu-validation/conv-shapes.jsonl allocates (scripts/gpu-conv-workspace.py), and the real
# memory and allocation history of scripts/gpu-validate.configs and gpu-validate-alloc.configs
# (scripts/gpu-validate.py measure --snapshot-dir). The three run side by side (each process's
# memory figures are its own); each is time-boxed, and every result lands in OUT as it is made.
#   bash scripts/gpu-workspace-session.sh [OUT]
set -u
O=$(mkdir -p "${1:-gpu-workspace-out}" && cd "${1:-gpu-workspace-out}" && pwd) || { echo "gpu-workspace-session: cannot create ${1:-gpu-workspace-out}" >&2; exit 1; }
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
mkdir -p "$O/history"
{ date; nvidia-smi; python3 -c "import torch,torchvision;b=torch.backends;print('torch',torch.__version__,'tv',torchvision.__version__,'cuda',torch.version.cuda,'cudnn',b.cudnn.version(),'benchmark',b.cudnn.benchmark,'cudnn.allow_tf32',b.cudnn.allow_tf32,'deterministic',b.cudnn.deterministic)"
  command -v python3; nproc; git log -1 --format=%H 2>/dev/null; } > "$O/env.txt" 2>&1
( timeout "${CONV_S:-330}" python3 scripts/gpu-conv-workspace.py --shapes docs/gpu-validation/conv-shapes.jsonl \
    --out "$O/conv-workspace.jsonl" --deadline-s "$(( ${CONV_S:-330} - 30 ))" > "$O/conv.log" 2>&1; echo "exit $?" >> "$O/conv.log" ) &
( timeout 200 python3 scripts/gpu-validate.py measure --configs scripts/gpu-validate-alloc.configs --timeout 60 \
    --out "$O/measured-alloc.jsonl" --snapshot-dir "$O/history" > "$O/alloc.log" 2>&1; echo "exit $?" >> "$O/alloc.log" ) &
( timeout "${MEASURE_S:-330}" python3 scripts/gpu-validate.py measure --configs scripts/gpu-validate.configs --timeout 60 \
    --out "$O/measured.jsonl" --snapshot-dir "$O/history" > "$O/measure.log" 2>&1; echo "exit $?" >> "$O/measure.log" ) &
wait
date >> "$O/env.txt"
tail -n 3 "$O/conv.log" "$O/alloc.log" "$O/measure.log"
