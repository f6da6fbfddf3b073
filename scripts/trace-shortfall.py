#!/usr/bin/env python3
"""How far the trace estimator's margin-free replay falls short of the measured GPUMemNet CNN rows,
per architecture, relative to each network's largest convolution input (docs/ESTIMATION.md,
"Failure modes"). No third-party packages.

    python3 scripts/trace-shortfall.py [TRACE_DIR] [SPLIT]     defaults: /tmp/colo-gmn-traces/cnn, train

TRACE_DIR holds the probe's traces of data/gpumemnet/cnn.csv (scripts/trace-calibrate.sh writes
them; or `python3 -m colo_probe.gpumemnet --csv data/gpumemnet/cnn.csv --kind cnn --out-dir DIR`).
The replay is `colo estimate eval --estimator trace` with the profile's trace_* constants at 0."""
import json
import os
import re
import subprocess
import sys
import tempfile

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(sys.argv) > 3 or any(x.startswith("-") for x in sys.argv[1:]):
        print(__doc__)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    traces = sys.argv[1] if len(sys.argv) > 1 else "/tmp/colo-gmn-traces/cnn"
    split = sys.argv[2] if len(sys.argv) > 2 else "train"
    colo = os.path.join(root, "build", "colo")
    if not os.path.exists(os.path.join(traces, "index.jsonl")):
        sys.exit(f"trace-shortfall: no {traces}/index.jsonl (record the traces first: see the header)")

    with tempfile.TemporaryDirectory() as cal:
        profile = json.load(open(os.path.join(root, "calibration", "a100-40gb.json")))
        for k in profile:
            if k.startswith("trace_") and k != "trace_fitted_on":
                profile[k] = 0.0
        json.dump(profile, open(os.path.join(cal, "margin-free.json"), "w"))
        out = subprocess.run([colo, "estimate", "eval", "--dataset", os.path.join(root, "data/gpumemnet/cnn.csv"),
                              "--format", "gpumemnet-cnn", "--estimator", "trace", "--traces", traces, "--split", split,
                              "--gpu", "margin-free", "--rows", "--json"],
                             env=dict(os.environ, COLO_CALIBRATION_DIR=cal), capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)["rows"]
    index = {}
    for line in open(os.path.join(traces, "index.jsonl")):
        j = json.loads(line)
        index[j["filename"]] = j


    def largest_conv_input_mib(path):
        best = 0
        for line in open(path):
            if line.startswith("C "):
                best = max(best, int(line.split()[3]))
        return best / 2**20


    def pct(values, q):
        v = sorted(values)
        return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


    by_arch = {}
    for r in rows:
        j = index.get(r["id"])
        if r.get("oom") or not r.get("estimate_mib") or not j or j.get("status") != "ok":
            continue
        arch = re.search(r"arch:([a-z]+)", r["id"]).group(1)
        gap = r["measured_mib"] - r["estimate_mib"]
        by_arch.setdefault(arch, []).append(gap / max(1.0, largest_conv_input_mib(os.path.join(traces, j["trace"]))))
    print(f"GPUMemNet CNN, {split} split: (measured - margin-free replay) / largest convolution input")
    print(f"{'architecture':<12} {'rows':>5} {'p10':>7} {'median':>7} {'p90':>7} {'max':>7}")
    for arch in sorted(by_arch):
        v = by_arch[arch]
        print(f"{arch:<12} {len(v):>5} {pct(v, .1):>7.2f} {pct(v, .5):>7.2f} {pct(v, .9):>7.2f} {max(v):>7.2f}")


if __name__ == "__main__":
    script_errors.run(main, "trace-shortfall")
