#!/usr/bin/env python3
"""How far the trace estimator's margin-free replay falls short of the measured GPUMemNet CNN rows,
per architecture, relative to each network's largest convolution input (docs/ESTIMATION.md,
"Failure modes"). No third-party packages.

    python3 scripts/trace-shortfall.py [TRACE_DIR] [SPLIT] [--colo build/colo]
        defaults: /tmp/colo-gmn-traces/cnn, train (or test, all)

TRACE_DIR holds the probe's traces of data/gpumemnet/cnn.csv (scripts/trace-calibrate.sh writes
them; or `python3 -m colo_probe.gpumemnet --csv data/gpumemnet/cnn.csv --kind cnn --out-dir DIR`).
The replay is `colo estimate eval --estimator trace` with the profile's trace_* constants at 0."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    head, _, rest = __doc__.partition("\n\n")
    ap = argparse.ArgumentParser(description=head, epilog=rest, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="?", default="/tmp/colo-gmn-traces/cnn", metavar="TRACE_DIR")
    ap.add_argument("split", nargs="?", default="train", choices=("train", "test", "all"), metavar="SPLIT")
    ap.add_argument("--colo", default=os.path.join(root, "build", "colo"))
    a = ap.parse_args()
    traces, split, colo = a.traces, a.split, a.colo
    script_errors.need_program("trace-shortfall", colo)
    index_path = os.path.join(traces, "index.jsonl")
    if not os.path.exists(index_path):
        sys.exit(f"trace-shortfall: no {index_path} (record the traces first: trace-shortfall.py --help)")
    # The index first: a bad line is reported before the long replay, not after it.
    index = script_errors.read_trace_index(index_path)

    with tempfile.TemporaryDirectory() as cal:
        with open(os.path.join(root, "calibration", "a100-40gb.json")) as f:
            profile = json.load(f)
        for k in profile:
            if k.startswith("trace_") and k != "trace_fitted_on":
                profile[k] = 0.0
        with open(os.path.join(cal, "margin-free.json"), "w") as f:
            json.dump(profile, f)
        out = subprocess.run([colo, "estimate", "eval", "--dataset", os.path.join(root, "data/gpumemnet/cnn.csv"),
                              "--format", "gpumemnet-cnn", "--estimator", "trace", "--traces", traces, "--split", split,
                              "--gpu", "margin-free", "--rows", "--json"],
                             env=dict(os.environ, COLO_CALIBRATION_DIR=cal), capture_output=True, text=True, check=True)
    rows = script_errors.colo_json(out.args, out.stdout)["rows"]

    def largest_conv_input_mib(path):
        # The probe's convolution records: "C <phase> <op> <input bytes> <output bytes> <strided>".
        best = 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.startswith("C "):
                    fields = line.split()
                    if len(fields) < 4 or not (fields[3].isascii() and fields[3].isdigit()):
                        raise ValueError(f"{path}:{n}: a convolution record without its input bytes")
                    best = max(best, int(fields[3]))
        return best / 2**20


    def pct(values, q):
        v = sorted(values)
        return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


    by_arch = {}
    for r in rows:
        j = index.get(r["id"])
        if r.get("oom") or not r.get("estimate_mib") or not j or j.get("status") != "ok":
            continue
        m = re.search(r"arch:([a-z]+)", r["id"])
        if not m:
            raise ValueError(f"row {r['id']!r}: its id has no 'arch:NAME' (is this the GPUMemNet CNN data set?)")
        arch = m.group(1)
        gap = r["measured_mib"] - r["estimate_mib"]
        by_arch.setdefault(arch, []).append(gap / max(1.0, largest_conv_input_mib(os.path.join(traces, j["trace"]))))
    print(f"GPUMemNet CNN, {split} split: (measured - margin-free replay) / largest convolution input")
    print(f"{'architecture':<12} {'rows':>5} {'p10':>7} {'median':>7} {'p90':>7} {'max':>7}")
    for arch in sorted(by_arch):
        v = by_arch[arch]
        print(f"{arch:<12} {len(v):>5} {pct(v, .1):>7.2f} {pct(v, .5):>7.2f} {pct(v, .9):>7.2f} {max(v):>7.2f}")


if __name__ == "__main__":
    script_errors.run(main, "trace-shortfall")
