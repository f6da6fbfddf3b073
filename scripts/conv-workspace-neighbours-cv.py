#!/usr/bin/env python3
"""Chooses a profile's trace_conv_workspace_neighbours (k) by cross-validation on the workspace
table's own GPUMemNet rows (docs/ESTIMATION.md, "Shapes the table lacks").

A convolution shape the GPU's workspace table lacks replays its k nearest measured shapes' steps,
one replay per neighbour, and the estimate keeps the largest peak (src/estimate/trace/conv/
conv_workspace_neighbours.h). Which k? The table was measured for the convolutions of some GPUMemNet
rows (docs/gpu-validation/conv-shapes.jsonl names each key's sources) whose memory was measured on
the same GPU. Those rows are split into folds; for each fold, the table loses every key that only
the fold's rows had, and the fold's rows are estimated with k = 0 (the profile's ratios) .. --max-k
by colo itself. Rule: the k with the fewest rows under-estimated by more than 5 % among those whose
median |error| stays within --median-limit (the issue's 8 %). Rows outside the table's sources are
never used here: they are the held-out report (scripts/gpu-validate-gpumemnet.py).

  /usr/bin/python3 scripts/conv-workspace-neighbours-cv.py --csv cnn.csv \\
      --measured docs/gpu-validation/measured-gpumemnet-cnn-h100.jsonl --gpu h100-80gb [--colo build/colo] \\
      [--max-k 6] [--folds 2] [--limit-rows N] [--json OUT]
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
SOURCE = "gpumemnet-cnn:"


def shape_records(path):
    """(key, [source, ...]) of each line of a scripts/conv-shapes.py output; ValueError naming PATH:LINE."""
    for n, r in script_errors.read_jsonl(path):
        if not (isinstance(r, dict) and isinstance(r.get("key"), str) and isinstance(r.get("sources"), list)
                and all(isinstance(x, str) for x in r["sources"])
                and all(re.fullmatch(SOURCE + "[0-9]+", x) for x in r["sources"] if x.startswith(SOURCE))):
            raise ValueError(f"{path}:{n}: not a line of scripts/conv-shapes.py "
                             '({"key": ..., "sources": [...], a GPUMemNet source as gpumemnet-cnn:ROW})')
        yield r["key"], r["sources"]


def measured_mib(v, where):
    """`v`, a measured max_memory_reserved (MiB); ValueError naming `where` unless a number > 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
        raise ValueError(f"{where}: max_reserved_mib {json.dumps(v)[:40]} is not a number > 0")
    return v


def read_table(path):
    """(header lines, {key: steps line})"""
    head, rows = [], {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "\t" in line:
                key, steps = line.split("\t", 1)
                rows[key] = steps
            else:
                head.append(line)
    return head, rows


def write_fold(d, head, keep, profile, max_k, prefix):
    """DIR/t.tsv: the table's `keep` keys; DIR/PREFIXk.json: the profile naming it with k = 0..max_k."""
    os.makedirs(d)
    with open(os.path.join(d, "t.tsv"), "w") as out:
        out.write("\n".join(head) + "\n")
        out.writelines(f"{key}\t{steps}\n" for key, steps in keep.items())
    for k in range(max_k + 1):
        with open(os.path.join(d, f"{prefix}{k}.json"), "w") as out:
            json.dump(dict(profile, gpu=f"{prefix}{k}", conv_workspace_table="t.tsv",
                           trace_conv_workspace_neighbours=k), out)


def estimate_peak(colo, trace, gpu, d, what):
    """colo's replayed peak (MiB) of `trace` with profile `gpu` of directory `d`; exits naming `what`."""
    r = subprocess.run([colo, "estimate", "--trace", trace, "--estimator", "trace", "--gpu", gpu, "--json"],
                       capture_output=True, text=True, env=dict(os.environ, COLO_CALIBRATION_DIR=d))
    if r.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0]).removesuffix('.py')}: {what}: {r.stderr.strip()}")
    return json.loads(r.stdout)["peak_mib"]


def summary(errs):
    errs = sorted(errs)
    n = len(errs)
    return {"rows": n, "median_abs": statistics.median(abs(e) for e in errs), "median": statistics.median(errs),
            "under": sum(e < 0 for e in errs) / n, "under5": sum(e < -5 for e in errs) / n,
            "min": errs[0], "max": errs[-1]}


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--csv", required=True, help="GPUMemNet cnn.csv")
    ap.add_argument("--measured", required=True, help="scripts/gpu-validate-gpumemnet.py measure output")
    ap.add_argument("--gpu", default="h100-80gb", help="calibration profile naming the table")
    ap.add_argument("--shapes", default=os.path.join(ROOT, "docs", "gpu-validation", "conv-shapes.jsonl"))
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--max-k", type=int, default=6)
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--median-limit", type=float, default=8.0)
    ap.add_argument("--limit-rows", type=int, help="only the first N of the table's measured rows (a smoke run)")
    ap.add_argument("--json", help="write the per-k results here")
    a = ap.parse_args()
    if not (1 <= a.max_k <= 16 and a.folds >= 2 and (a.limit_rows is None or a.limit_rows >= a.folds)):
        sys.exit("conv-workspace-neighbours-cv: --max-k must be in [1, 16], --folds >= 2, --limit-rows >= --folds")
    if not 0 <= a.median_limit < math.inf:  # (NaN or a negative limit would leave k = 0 chosen, whatever the errors)
        sys.exit(f"conv-workspace-neighbours-cv: --median-limit {a.median_limit:g}: expected a number of percent >= 0")
    from colo_probe import gpumemnet

    profile_path = os.path.join(ROOT, "calibration", a.gpu + ".json")
    try:
        with open(profile_path) as f:
            profile = json.load(f)
        if not profile.get("conv_workspace_table"):
            sys.exit(f"conv-workspace-neighbours-cv: {profile_path} names no conv_workspace_table")
        head, table = read_table(os.path.join(ROOT, "calibration", profile["conv_workspace_table"]))
        sources = {key: set(srcs) for key, srcs in shape_records(a.shapes)}
        measured = {}
        for n, r in script_errors.read_jsonl(a.measured):
            if isinstance(r, dict) and r.get("status") == "ok":
                if isinstance(r.get("row"), bool) or not isinstance(r.get("row"), int):
                    raise ValueError(f"{a.measured}:{n}: a measured row without its row number")
                measured[r["row"]] = measured_mib(r.get("max_reserved_mib"), f"{a.measured}:{n}")
        csv_rows = gpumemnet.read_rows(a.csv, "cnn")
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"conv-workspace-neighbours-cv: {type(e).__name__}: {e}")
    table_rows = {int(s[len(SOURCE):]) for v in sources.values() for s in v if s.startswith(SOURCE)}
    rows = [r for r in csv_rows if r.index in measured and r.index in table_rows]
    rows = rows[:a.limit_rows] if a.limit_rows else rows
    if not rows:
        sys.exit("conv-workspace-neighbours-cv: no measured row is among the table's sources")
    if a.folds > len(rows):
        sys.exit(f"conv-workspace-neighbours-cv: --folds {a.folds}: more folds than the {len(rows)} rows")
    script_errors.need_program("conv-workspace-neighbours-cv", a.colo)  # (before the probes, not after them)
    if a.json is not None:
        script_errors.need_output("conv-workspace-neighbours-cv", a.json, "--json")
    work = tempfile.mkdtemp(prefix="colo-nbcv-")
    try:
        recs = gpumemnet.run_batch(rows, os.path.join(work, "traces"))
        traces = {r["row"]: os.path.join(work, "traces", r["trace"]) for r in recs if r["status"] == "ok"}
        order = sorted(traces)
        if not order:
            sys.exit(f"conv-workspace-neighbours-cv: none of the {len(rows)} rows could be probed")
        errs = {k: [] for k in range(a.max_k + 1)}
        for fold in range(a.folds):
            held = {row for i, row in enumerate(order) if i % a.folds == fold}
            keep = {key: steps for key, steps in table.items()
                    if not (sources.get(key) and all(s.startswith(SOURCE) and int(s[len(SOURCE):]) in held
                                                     for s in sources[key]))}
            d = os.path.join(work, f"fold{fold}")
            write_fold(d, head, keep, profile, a.max_k, "cv")

            def estimate(job, d=d):
                row, k = job
                return row, k, estimate_peak(a.colo, traces[row], f"cv{k}", d, f"row {row}")
            jobs = [(row, k) for row in sorted(held) for k in range(a.max_k + 1)]
            with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
                for row, k, peak in ex.map(estimate, jobs):
                    errs[k].append((peak - measured[row]) / measured[row] * 100)
            print(f"fold {fold + 1}/{a.folds}: {len(held)} rows, table keeps {len(keep)} of {len(table)} keys", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = {k: summary(v) for k, v in errs.items()}
    print(f"{'k':>3} {'rows':>5} {'median |e|':>11} {'median':>8} {'under':>6} {'under >5 %':>11} {'min':>8} {'max':>8}")
    for k, s in results.items():
        print(f"{k:>3} {s['rows']:>5} {s['median_abs']:>10.1f}% {s['median']:>+7.1f}% {s['under'] * 100:>5.0f}% "
              f"{s['under5'] * 100:>10.0f}% {s['min']:>+7.1f}% {s['max']:>+7.1f}%   {'(the ratios)' if k == 0 else ''}")
    ok = [k for k in range(1, a.max_k + 1) if results[k]["median_abs"] <= a.median_limit]
    chosen = min(ok, key=lambda k: (results[k]["under5"], k)) if ok else 0
    print(f"chosen: trace_conv_workspace_neighbours = {chosen} (fewest rows under by > 5 % with median |error| "
          f"<= {a.median_limit:g} %)")
    if a.json is not None:
        with open(a.json, "w") as out:
            json.dump({"chosen": chosen, "results": results, "gpu": a.gpu, "folds": a.folds}, out, indent=1)


if __name__ == "__main__":
    main()
