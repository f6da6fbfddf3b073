#!/usr/bin/env python3
"""Searches colo's policy settings for the one closest to each trace's lower bound (docs/SIMULATOR.md,
"Against the published numbers"): every combination of --policy, --smact-cap, --backfill,
--margin-mib, --floor and --adds-progress (off or on),
replayed by `colo sim --json` with a non-oracle estimator on each trace. Prints each trace's best
setting and the setting whose worse trace is closest to its bound (one setting for all traces,
so nothing is tuned to one trace).

  python3 scripts/policy-sweep.py [--colo build/colo] [--estimator allocsim] \\
      [--trace data/carma/traces/philly_mix_90_tasks.csv ...] [--policies magm,lug,...] \\
      [--caps 80,90,100] [--backfill 0,10,100] [--margins 2048] [--floors unknown] [--progress off] [--json OUT]
"""
import argparse
import functools
import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACES = [os.path.join(ROOT, "data", "carma", "traces", t) for t in ("philly_mix_90_tasks.csv",
                                                                       "philly_heavy_60_tasks.csv")]


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--trace", nargs="+", default=TRACES)
    ap.add_argument("--estimator", default="allocsim")
    ap.add_argument("--policies", default="magm,lug,first-fit,best-fit,round-robin")
    ap.add_argument("--caps", default="80,90,100")
    ap.add_argument("--backfill", default="0,10,100")
    ap.add_argument("--margins", default="2048", help="--margin-mib values (MiB)")
    ap.add_argument("--floors", default="unknown", help="--floor values: unknown, always")
    ap.add_argument("--progress", default="off", help="--adds-progress: off, on (docs/SIMULATOR.md)")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    if a.estimator == "oracle":
        sys.exit("policy-sweep: --estimator oracle knows each job's true memory; the comparison needs a real estimator")
    script_errors.need_program("policy-sweep", a.colo)
    if a.json is not None:
        script_errors.need_output("policy-sweep", a.json, "--json")
    names = [os.path.basename(t) for t in a.trace]
    for t in a.trace:
        if names.count(os.path.basename(t)) > 1:  # (the runs are told apart by the trace's file name)
            sys.exit(f"policy-sweep: --trace: more than one trace named {os.path.basename(t)}")
    names_of = functools.partial(script_errors.name_list, "policy-sweep")
    ints_of = functools.partial(script_errors.int_list, "policy-sweep")
    grid = list(itertools.product(names_of("--policies", a.policies), ints_of("--caps", a.caps),
                                  ints_of("--backfill", a.backfill), ints_of("--margins", a.margins),
                                  names_of("--floors", a.floors), names_of("--progress", a.progress)))
    for p in {g[5] for g in grid}:
        if p not in ("off", "on"):
            sys.exit(f"policy-sweep: --progress '{a.progress}': expected off, on or off,on")

    def run(job):
        trace, (policy, cap, backfill, margin, floor, progress) = job
        args = [a.colo, "sim", "--trace", trace, "--policy", policy, "--estimator", a.estimator,
                "--smact-cap", str(cap), "--backfill", str(backfill), "--margin-mib", str(margin), "--floor", floor,
                *(["--adds-progress"] if progress == "on" else []), "--json"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"policy-sweep: {' '.join(args[1:])}: {r.stderr.strip()}")
        try:
            d = script_errors.colo_json(args, r.stdout)
        except ValueError as e:
            sys.exit(f"policy-sweep: {e}")
        return {"trace": os.path.basename(trace), "policy": policy, "smact_cap": cap, "backfill": backfill,
                "margin_mib": margin, "floor": floor, "adds_progress": progress == "on",
                "makespan_s": d["makespan_s"], "lower_bound_s": d["lower_bound_s"], "oom_crashes": d["oom_crashes"],
                "energy_mj": d["energy_mj"], "completed": d["completed"], "jobs": d["jobs"],
                "above_bound": d["makespan_s"] / d["lower_bound_s"] - 1}
    jobs = [(t, g) for t in a.trace for g in grid]
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        try:
            runs = list(ex.map(run, jobs))
        except BaseException:  # the first failure ends the sweep now, not after every queued run
            ex.shutdown(wait=False, cancel_futures=True)
            raise
    traces = [os.path.basename(t) for t in a.trace]
    print(f"{len(grid)} settings x {len(traces)} traces, estimator {a.estimator}, MPS")
    several_margins, several_floors = len({g[3] for g in grid}) > 1, len({g[4] for g in grid}) > 1
    progress_varies = len({g[5] for g in grid}) > 1

    def describe(r):
        return (f"{r['policy']} cap {r['smact_cap']} % backfill {r['backfill']}"
                + (f" margin {r['margin_mib']} MiB" if several_margins else "")
                + (f" floor {r['floor']}" if several_floors else "")
                + ((" adds-progress" if r["adds_progress"] else " no adds-progress") if progress_varies else
                   (" adds-progress" if r["adds_progress"] else "")))

    def short(r):  # a run that lost a job or crashed one cannot be the best, whatever its makespan
        return r["completed"] < r["jobs"] or r["oom_crashes"] > 0
    for t in traces:
        best = min((r for r in runs if r["trace"] == t), key=lambda r: (short(r), r["makespan_s"]))
        print(f"{t}: best {describe(best)}: "
              f"{best['makespan_s']:.0f} s, {best['above_bound'] * 100:+.1f} % from the bound {best['lower_bound_s']:.0f} s, "
              f"{best['oom_crashes']} OOM, {best['completed']}/{best['jobs']} done")
    by_setting = {}
    for r in runs:
        by_setting.setdefault((r["policy"], r["smact_cap"], r["backfill"], r["margin_mib"], r["floor"],
                               r["adds_progress"]), []).append(r)
    joint = min(by_setting.items(), key=lambda kv: (any(short(r) for r in kv[1]),
                                                    max(r["above_bound"] for r in kv[1]), kv[0]))
    print(f"one setting for all: {describe(joint[1][0])}: "
          + ", ".join(f"{r['trace']} {r['makespan_s']:.0f} s ({r['above_bound'] * 100:+.1f} %, {r['oom_crashes']} OOM)"
                      for r in joint[1]))
    if a.json is not None:
        try:
            with open(a.json, "w") as out:
                json.dump(runs, out, indent=1)
        except OSError as e:
            sys.exit(f"policy-sweep: --json {a.json}: {e.strerror}")


if __name__ == "__main__":
    main()
