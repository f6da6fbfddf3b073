#!/usr/bin/env python3
"""Asks whether one of colo's scheduling rules helps beyond the settings it was tried on: every
setting of a grid (trace × estimator × policy × SMACT cap × backfill) is replayed by `colo sim
--json` with its solo durations jittered by several seeds, once without and once with the rule's
flag (e.g. --adds-progress), and the makespan change of each pair is summarised overall and per
grid dimension (docs/SIMULATOR.md).

  python3 scripts/paired-compare.py --flag=--adds-progress [--colo build/colo] [--trace T ...] \\
      [--estimators allocsim,oracle,gpumemnet-csv] [--policies magm,lug,first-fit] [--caps 80,90,100] \\
      [--backfill 0,100] [--seeds 4] [--jitter 0.2] [--json OUT]
"""
import argparse
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACES = [os.path.join(ROOT, "data", "carma", "traces", t) for t in ("philly_mix_90_tasks.csv",
                                                                       "philly_heavy_60_tasks.csv")]


def fail(msg):
    sys.exit(f"paired-compare: {msg}")


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--flag", required=True, help="the rule's colo sim flag(s), e.g. --flag=--adds-progress")
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--trace", nargs="+", default=TRACES)
    ap.add_argument("--estimators", default="allocsim,oracle,gpumemnet-csv")
    ap.add_argument("--policies", default="magm,lug,first-fit")
    ap.add_argument("--caps", default="80,90,100")
    ap.add_argument("--backfill", default="0,100")
    ap.add_argument("--seeds", type=int, default=4, help="jittered replays per setting (seeds 1..N)")
    ap.add_argument("--jitter", type=float, default=0.2, help="--duration-jitter of every replay, in [0, 1)")
    ap.add_argument("--json", help="write every pair here")
    a = ap.parse_args()
    flag = shlex.split(a.flag)
    if not flag or not flag[0].startswith("--"):
        fail(f"--flag '{a.flag}': expected colo sim flags, e.g. --flag=--adds-progress")
    if a.seeds < 1:
        fail(f"--seeds {a.seeds}: at least one replay per setting")
    if not 0 <= a.jitter < 1:
        fail(f"--jitter {a.jitter}: expected a number in [0, 1)")
    if a.jitter == 0 and a.seeds > 1:  # (the seed only draws the jitter: every replay would be the same pair)
        fail(f"--seeds {a.seeds} with --jitter 0: the replays would be one pair counted {a.seeds} times")
    script_errors.need_program("paired-compare", a.colo)
    for t in a.trace:
        if not os.path.isfile(t):
            fail(f"--trace {t}: no such file")
        if [os.path.basename(u) for u in a.trace].count(os.path.basename(t)) > 1:
            fail(f"--trace: more than one trace named {os.path.basename(t)}")
    if a.json is not None:
        script_errors.need_output("paired-compare", a.json, "--json")
    est_names = script_errors.name_list("paired-compare", "--estimators", a.estimators)
    policy_names = script_errors.name_list("paired-compare", "--policies", a.policies)
    caps = script_errors.int_list("paired-compare", "--caps", a.caps)
    backfills = script_errors.int_list("paired-compare", "--backfill", a.backfill)
    grid = list(itertools.product(a.trace, est_names, policy_names, caps, backfills, range(1, a.seeds + 1)))

    def run(setting):
        trace, est, policy, cap, backfill, seed = setting
        out = []
        for extra in ([], flag):
            args = [a.colo, "sim", "--trace", trace, "--policy", policy, "--estimator", est, "--smact-cap", str(cap),
                    "--backfill", str(backfill), "--seed", str(seed), "--duration-jitter", str(a.jitter)] + extra + ["--json"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{' '.join(args[1:])}: {r.stderr.strip()}")
            out.append(script_errors.colo_json(args, r.stdout))
        return setting, out

    with ThreadPoolExecutor(os.cpu_count() or 1) as ex:
        try:
            pairs = list(ex.map(run, grid))
        except BaseException:  # the first failure ends the sweep now, not after every queued run
            ex.shutdown(wait=False, cancel_futures=True)
            raise
    # Overall, then per grid dimension in the order given (dicts keep insertion order).
    groups = {"all": []}
    for label, values in (("trace", [os.path.basename(t) for t in a.trace]), ("estimator", est_names),
                          ("policy", policy_names), ("cap", caps), ("backfill", backfills)):
        for v in values:
            groups[f"{label} {v}"] = []
    for (trace, est, policy, cap, backfill, _), (off, on) in pairs:
        change = on["makespan_s"] / off["makespan_s"] - 1
        groups["all"].append(change)
        for key in (f"trace {os.path.basename(trace)}", f"estimator {est}", f"policy {policy}", f"cap {cap}",
                    f"backfill {backfill}"):
            groups[key].append(change)
    print(f"{a.flag}: makespan with the rule vs without, {len(pairs)} pairs (jitter {a.jitter:g}, seeds 1..{a.seeds})")
    for key, v in groups.items():
        print(f"  {key:<36} n={len(v):<4} median {100 * statistics.median(v):+.1f} %  mean {100 * statistics.mean(v):+.1f} %"
              f"  shorter in {100 * sum(c < 0 for c in v) / len(v):.0f} %")
    ooms = [sum(p[i]["oom_crashes"] for _, p in pairs) for i in (0, 1)]
    undone = [sum(p[i]["completed"] != p[i]["jobs"] for _, p in pairs) for i in (0, 1)]
    print(f"  OOM crashes without / with: {ooms[0]} / {ooms[1]}; runs with jobs not done: {undone[0]} / {undone[1]}")
    if a.json:
        rows = [{"trace": s[0], "estimator": s[1], "policy": s[2], "smact_cap": s[3], "backfill": s[4], "seed": s[5],
                 "without": p[0], "with": p[1]} for s, p in pairs]
        try:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        except OSError as e:
            fail(f"--json {a.json}: {e.strerror}")


if __name__ == "__main__":
    script_errors.run(main, "paired-compare")
