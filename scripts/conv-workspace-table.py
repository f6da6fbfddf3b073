#!/usr/bin/env python3
"""Turns what scripts/gpu-conv-workspace.py measured on a GPU into the workspace table the trace
replay reads (src/estimate/trace/conv_workspace_table.h documents the format):

  python3 scripts/conv-workspace-table.py MEASURED.jsonl[.gz] [MORE.jsonl[.gz] ...] --out calibration/NAME.conv-workspace.tsv

Each key's events become steps: an allocation freed within the call is a transient (+BYTES, and
-I where it is freed), one still held when the call returns is an output (o). Allocations and
frees are paired by address, in order (an address is reused once freed). Keys that failed to
measure are left out and counted. Several measured files (one software stack: the same cuDNN,
PyTorch and CUDA) make one table; a key in more than one keeps the first file's measurement."""
import argparse
import gzip
import json
import os
import re
import sys

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback


MAX_BYTES = 1 << 50  # the most bytes one step may name (colo's kMaxTraceBytes)
KEY = re.compile(r"[A-Za-z0-9:]{1,256}")  # a key colo's table reader takes (valid_conv_key)


def steps(events):
    open_at = {}  # address block -> index of its live alloc in `allocs`
    allocs, frees = [], {}  # alloc index -> (bytes); alloc index -> position of its free
    order = []
    if not isinstance(events, list):
        raise ValueError("events is not a list")
    for e in events:
        if not (isinstance(e, list) and len(e) == 3 and e[0] in ("alloc", "free") and type(e[1]) is int
                and 0 <= e[1] <= MAX_BYTES and type(e[2]) in (int, str)):
            raise ValueError(f"event {json.dumps(e)[:80]} is not [\"alloc\" or \"free\", bytes, block]")
        action, size, block = e
        if action == "alloc":
            open_at[block] = len(allocs)
            allocs.append(size)
            order.append(("a", len(allocs) - 1))
        elif action == "free":
            if block not in open_at:
                raise ValueError("free of a block never allocated in the call")
            order.append(("f", open_at.pop(block)))
    transient = {i for kind, i in order if kind == "f"}
    if len(transient) > 1024:
        raise ValueError("more than 1024 transient allocations (colo's table reader takes at most 1024)")
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


def read_measured(path):
    """(header, [(line number, record)])"""
    opener = gzip.open if path.endswith(".gz") else open
    lines, n = [], 0
    try:
        with opener(path, "rt") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    lines.append((n, json.loads(line)))
    except (OSError, EOFError, UnicodeDecodeError) as e:
        sys.exit(f"conv-workspace-table: cannot read {path}: {e}")
    except json.JSONDecodeError:
        sys.exit(f"conv-workspace-table: {path}:{n}: not a JSON line")
    if not lines or not isinstance(lines[0][1], dict) or "keys" not in lines[0][1]:
        sys.exit(f"conv-workspace-table: {path}: the first line is not gpu-conv-workspace.py's header")
    for n, r in lines[1:]:
        if not isinstance(r, dict) or not isinstance(r.get("key"), str) or not KEY.fullmatch(r["key"]):
            sys.exit(f"conv-workspace-table: {path}:{n}: not a record {{\"key\": a convolution key, ...}}")
    return lines[0][1], lines[1:]


def main():
    ap = argparse.ArgumentParser(description="measured convolution allocations -> colo's workspace table")
    ap.add_argument("measured", nargs="+", help="gpu-conv-workspace.py outputs; a key in several keeps the first's")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    script_errors.need_output("conv-workspace-table", a.out, "--out")
    if os.path.exists(a.out) and any(os.path.exists(p) and os.path.samefile(p, a.out) for p in a.measured):
        sys.exit(f"conv-workspace-table: --out {a.out} is one of the measured files")
    files = [(path, *read_measured(path)) for path in a.measured]
    head = files[0][1]
    # One table is one cuDNN and PyTorch: their algorithms and workspaces differ between versions.
    for path, h, _ in files[1:]:
        for field in ("cudnn", "torch", "cuda"):
            if h.get(field) != head.get(field):
                sys.exit(f"conv-workspace-table: {path}: {field} {h.get(field)} differs from {a.measured[0]}'s "
                         f"{head.get(field)}; one table is one software stack")
    seen, failed, repeated = set(), 0, 0
    text = ["colo-conv-workspace 1\n"]  # (written once every record has been read: never half a table)
    gpus = list(dict.fromkeys(h.get("gpu") for _, h, _ in files))
    header = {"gpu": head.get("gpu"), "cudnn": head.get("cudnn"), "torch": head.get("torch"),
              "cuda": head.get("cuda"), "measured": " + ".join(p.split("/")[-1] for p in a.measured),
              "command": "scripts/gpu-conv-workspace.py, then scripts/conv-workspace-table.py"}
    if len(gpus) > 1:
        header["gpus"] = " + ".join(str(g) for g in gpus)
    text.append("H " + json.dumps(header) + "\n")
    for path, _, rows in files:
        for n, r in rows:
            if "error" in r or not r.get("events"):
                failed += 1
                continue
            if r["key"] in seen:
                repeated += 1
                continue
            seen.add(r["key"])
            try:
                text.append(f"{r['key']}\t{' '.join(steps(r['events']))}\n")
            except ValueError as e:
                sys.exit(f"conv-workspace-table: {path}:{n}: {e}")
    try:
        with open(a.out, "w") as out:
            out.writelines(text)
    except OSError as e:
        sys.exit(f"conv-workspace-table: --out {a.out}: {e.strerror}")
    print(f"conv-workspace-table: {len(seen)} keys, {failed} not measured"
          + (f", {repeated} measured again (the first kept)" if repeated else "") + f" -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
