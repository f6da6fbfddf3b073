#!/bin/bash
# A GPU session for networks colo's h100-80gb profile has never seen (docs/GPU-VALIDATION.md §9), on a
# machine with an NVIDIA GPU and PyTorch >= 2.1: the real memory of every configuration of
# scripts/gpu-validate-othernets.configs (three measuring processes side by side; each process's
# memory figures are its own), cuDNN's workspace for every convolution those networks run (to say
# afterwards how much of each error the table's missing shapes explain), a sample of the profile's
# table measured again (is this GPU's cuDNN choosing what the table says?), and the probe with its
# tests on this machine's PyTorch. Each step is time-boxed; every result lands in OUT as it is made.
#   bash scripts/gpu-othernets-session.sh [OUT]
set -u
O=$(mkdir -p "${1:-gpu-othernets-out}" && cd "${1:-gpu-othernets-out}" && pwd) || { echo "gpu-othernets-session: cannot create ${1:-gpu-othernets-out}" >&2; exit 1; }
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
CFG=scripts/gpu-validate-othernets.configs
S=${SESSION_S:-300}
{ date; nvidia-smi; python3 -c "import torch,torchvision;b=torch.backends;print('torch',torch.__version__,'tv',torchvision.__version__,'cuda',torch.version.cuda,'cudnn',b.cudnn.version(),'benchmark',b.cudnn.benchmark)"
  nproc; git log -1 --format=%H 2>/dev/null; } > "$O/env.txt" 2>&1
mapfile -t NAMES < <(sed 's/#.*//' "$CFG" | awk 'NF {print $1}')
for g in 0 1 2; do
  group=(); for i in "${!NAMES[@]}"; do (( i % 3 == g )) && group+=("${NAMES[$i]}"); done
  ( timeout "$S" python3 scripts/gpu-validate.py measure --configs "$CFG" --only "${group[@]}" --timeout 120 \
      --out "$O/measured-$g.jsonl" > "$O/measure-$g.log" 2>&1; echo "exit $?" >> "$O/measure-$g.log" ) &
done
# The table sample (TABLE_SAMPLE: a shapes file, one {"key"} per line) first, then the new networks' shapes.
( { [ -n "${TABLE_SAMPLE:-}" ] && timeout 90 python3 scripts/gpu-conv-workspace.py --shapes "$TABLE_SAMPLE" \
      --out "$O/conv-workspace-table-sample.jsonl" --deadline-s 80; echo "sample exit $?"
    timeout 60 python3 scripts/conv-shapes.py --out "$O/shapes.jsonl" --configs "$CFG"; echo "shapes exit $?"
    timeout $(( S - 160 )) python3 scripts/gpu-conv-workspace.py --shapes "$O/shapes.jsonl" \
      --out "$O/conv-workspace.jsonl" --deadline-s $(( S - 180 )); echo "conv exit $?"; } > "$O/conv.log" 2>&1 ) &
( timeout "$S" python3 scripts/gpu-validate.py trace --configs "$CFG" --dir "$O/traces" > "$O/trace.log" 2>&1; echo "exit $?" >> "$O/trace.log" ) &
( cd tests/probe && PYTHONPATH=../../python timeout "$S" python3 -m unittest discover -v -p 'test_*.py' > "$O/probe-tests.log" 2>&1
  echo "exit $?" >> "$O/probe-tests.log" ) &
wait
date >> "$O/env.txt"
tail -n 2 "$O"/measure-*.log "$O/conv.log" "$O/trace.log" "$O/probe-tests.log"
