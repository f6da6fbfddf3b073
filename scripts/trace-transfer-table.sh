#!/usr/bin/env bash
# An experiment for GPUs without a workspace table of their own (docs/ESTIMATION.md, "Another GPU's
# workspaces"): the a100-40gb profile with another GPU's cuDNN workspace table (default the H100's)
# and k nearest shapes, its trace constants fitted again on the GPUMemNet CNN train split
# (colo estimate calibrate, as scripts/trace-calibrate.sh), then scored on the test split and on the
# carma workloads (never fitted on). Writes nothing in calibration/: the profiles live in a
# temporary directory named by COLO_CALIBRATION_DIR.
# Usage: scripts/trace-transfer-table.sh [TRACE_DIR] [K ...]   (defaults /tmp/colo-gmn-traces, 1 3)
#   TRACE_DIR: scripts/trace-calibrate.sh's traces (probed here when missing, ~2 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/colo-gmn-traces}
shift || true
[ $# -gt 0 ] && ks=("$@") || ks=(1 3)
table=${TABLE:-h100-80gb.conv-workspace.tsv}
colo=${COLO:-build/colo}
python=${COLO_PYTHON:-/usr/bin/python3}
[ -x "$colo" ] || { echo "trace-transfer-table: $colo is missing: build it first (README)" >&2; exit 2; }
[ -f "calibration/$table" ] || { echo "trace-transfer-table: calibration/$table does not exist" >&2; exit 2; }
if [ ! -s "$dir/cnn/index.jsonl" ]; then
  PYTHONPATH=python "$python" -m colo_probe.gpumemnet --csv data/gpumemnet/cnn.csv --kind cnn --out-dir "$dir/cnn"
fi
work=$(mktemp -d /tmp/colo-transfer.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "calibration/$table" "$work/"
for k in "${ks[@]}"; do
  [[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le 16 ] || { echo "trace-transfer-table: K '$k' must be 1..16" >&2; exit 2; }
  "$python" - "$work" "$table" "$k" <<'PY'
import json, sys
work, table, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = json.load(open("calibration/a100-40gb.json"))
p.update(gpu=f"a100-transfer-k{k}", conv_workspace_table=table, trace_conv_workspace_neighbours=k)
json.dump(p, open(f"{work}/a100-transfer-k{k}.json", "w"), indent=1)
PY
  echo "== k = $k ($table)"
  COLO_CALIBRATION_DIR="$work" "$colo" estimate calibrate --dataset data/gpumemnet/cnn.csv --format gpumemnet-cnn \
    --split train --gpu "a100-transfer-k$k" --out "$work/a100-transfer-k$k.json" --estimator trace \
    --traces "$dir/cnn" --max-under-rate 0.15
  COLO_CALIBRATION_DIR="$work" "$colo" estimate eval --dataset data/gpumemnet/cnn.csv --format gpumemnet-cnn \
    --estimator trace --traces "$dir/cnn" --split test --gpu "a100-transfer-k$k" --rows > "$work/gmn.txt"
  COLO_CALIBRATION_DIR="$work" "$colo" estimate eval --dataset data/carma/workloads.csv --format carma-workloads \
    --estimator trace --gpu "a100-transfer-k$k" --rows > "$work/carma.txt"
  for f in gmn carma; do
    tail -n 1 "$work/$f.txt"
    # rows under by more than 5 % (per-row lines: NAME measured M est E; out-of-memory rows end in "(OOM)")
    awk '$2 == "measured" && NF == 5 && $3 > 0 { e = ($5 - $3) / $3 * 100; if (e < -5) { n++; s = s sprintf(" %s %+.1f%%", $1, e) } }
         END { printf "  under by > 5 %%: %d%s\n", n, (n && n <= 6 ? ":" s : "") }' "$work/$f.txt"
  done
done
