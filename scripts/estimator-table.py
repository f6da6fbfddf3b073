#!/usr/bin/env python3
"""Side-by-side table of estimators on the carma workloads (docs/ESTIMATION.md, "The probe").
Runs `build/colo estimate eval --rows --json` per estimator and prints a Markdown table of the rows
every estimator could take (rows that differ only in epochs are listed once).
    python3 scripts/estimator-table.py [--colo build/colo] [--dataset data/carma/workloads.csv]
        [--estimators trace,faketensor,allocsim]"""
import argparse
import os
import statistics
import subprocess
import sys

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("    python3")[0].split()))
    p.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    p.add_argument("--dataset", default=os.path.join(ROOT, "data", "carma", "workloads.csv"))
    p.add_argument("--estimators", default="trace,faketensor,allocsim", help="comma-separated estimator names")
    a = p.parse_args()
    names = a.estimators.split(",")
    for name in names:
        if names.count(name) > 1:  # (its errors would be counted twice)
            sys.exit(f"estimator-table: --estimators {a.estimators}: {name} is named twice")
    script_errors.need_program("estimator-table", a.colo)
    rows = {}
    for name in names:
        cmd = [a.colo, "estimate", "eval", "--dataset", a.dataset, "--format", "carma-workloads",
               "--estimator", name, "--rows", "--json"]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        for r in script_errors.colo_json(cmd, out)["rows"]:
            if r.get("measured_mib") and not r.get("skipped_because"):
                rows.setdefault(r["id"], {"measured": r["measured_mib"]})[name] = r["estimate_mib"]
    seen = set()
    lines = ["| workload | measured MiB | " + " | ".join(f"{n} MiB (err)" for n in names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    errs = {n: [] for n in names}
    for wid, r in sorted(rows.items()):
        if not all(n in r for n in names):
            continue
        key = (wid.replace("_50e_", "_20e_"), r["measured"])
        if key in seen:
            continue
        seen.add(key)
        cells = []
        for n in names:
            e = (r[n] - r["measured"]) / r["measured"]
            errs[n].append(e)
            cells.append(f"{r[n]} ({100 * e:+.1f} %)")
        lines.append(f"| {wid} | {r['measured']} | " + " | ".join(cells) + " |")
    if not seen:
        sys.exit(f"estimator-table: no row of {a.dataset} was estimated by every one of {', '.join(names)}")
    print("\n".join(lines))
    print()
    for n in names:
        e = errs[n]
        print(f"{n}: n={len(e)} median |err| {100 * statistics.median(abs(x) for x in e):.1f} %, "
              f"under {sum(x < 0 for x in e)}/{len(e)}, under by > 5 %: {sum(x < -0.05 for x in e)}, "
              f"worst under {100 * min(e):+.1f} %")


if __name__ == "__main__":
    script_errors.run(main, "estimator-table")
