#!/usr/bin/env python3
"""Turns what scripts/gpu-conv-workspace.py measured on a GPU into the workspace table the trace
replay reads (src/estimate/trace/conv_workspace_table.h documents the format):

  python3 scripts/conv-workspace-table.py MEASURED.jsonl[.gz] --out calibration/NAME.conv-workspace.tsv

Each key's events become steps: an allocation freed within the call is a transient (+BYTES, and
-I where it is freed), one still held when the call returns is an output (o). Allocations and
frees are paired by address, in order (an address is reused once freed). Keys that failed to
measure are left out and counted."""
import argparse
import gzip
import json
import sys


def steps(events):
    open_at = {}  # address block -> index of its live alloc in `allocs`
    allocs, frees = [], {}  # alloc index -> (bytes); alloc index -> position of its free
    order = []
    for action, size, block in events:
        if action == "alloc":
            open_at[block] = len(allocs)
            allocs.append(size)
            order.append(("a", len(allocs) - 1))
        elif action == "free":
            if block not in open_at:
                raise ValueError("free of a block never allocated in the call")
            order.append(("f", open_at.pop(block)))
    transient = {i for kind, i in order if kind == "f"}
    number, out = {}, []
    for kind, i in order:
        if kind == "a" and i not in transient:
            out.append("o")
        elif kind == "a":
            number[i] = len(number)
            out.append(f"+{allocs[i]}")
        else:
            out.append(f"-{number[i]}")
    return out


def main():
    ap = argparse.ArgumentParser(description="measured convolution allocations -> colo's workspace table")
    ap.add_argument("measured")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    opener = gzip.open if a.measured.endswith(".gz") else open
    with opener(a.measured, "rt") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    head, rows = lines[0], lines[1:]
    failed = 0
    with open(a.out, "w") as out:
        out.write("colo-conv-workspace 1\n")
        out.write("H " + json.dumps({"gpu": head.get("gpu"), "cudnn": head.get("cudnn"), "torch": head.get("torch"),
                                     "cuda": head.get("cuda"), "measured": a.measured.split("/")[-1],
                                     "command": "scripts/gpu-conv-workspace.py, then scripts/conv-workspace-table.py"})
                  + "\n")
        for r in rows:
            if "error" in r or not r.get("events"):
                failed += 1
                continue
            out.write(f"{r['key']}\t{' '.join(steps(r['events']))}\n")
    print(f"conv-workspace-table: {len(rows) - failed} keys, {failed} not measured -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
