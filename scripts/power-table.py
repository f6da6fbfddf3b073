#!/usr/bin/env python3
"""Board power under collocation, measured against the simulator's power model (docs/GPU-VALIDATION.md
§5): reads `colo bench collocation --measurements` files (one idle window, each job alone, every pair
under MPS or time-sliced) and prints, per pair, the measured power beside what each job's solo power
scaled by its rate predicts:

    P_pair = B + Σ_j (P_j − B) × rate_j        (P_j: job j alone; rate_j = 1 / slowdown_j)

i.e. each job's dynamic energy is the same wherever it runs, on a floor B. B is fitted by least
squares (as sim/models/power_fit.h does) on the files of one run and used unchanged on the other
(held out), and also shown at B = idle. The `work` column (Σ solo SMACT × rate, the simulator's
measure of SM work done) is printed beside the GPU's own SMACT over the pair's window.

    python3 scripts/power-table.py --run NAME=FILE.json[,FILE.json] --run NAME=... [--markdown]
"""
import argparse
import json
import math
import sys


def load(paths):
    runs = []
    for p in paths.split(","):
        try:
            j = json.load(open(p))
        except (OSError, ValueError) as e:
            sys.exit("power-table: %s: %s" % (p, e))
        if j.get("format") != "colo-bench-collocation 1":
            sys.exit("power-table: %s: not a `colo bench collocation --measurements` file" % p)
        solo = {s["job"]: s for s in j.get("solo", [])}
        for s in solo.values():
            if not isinstance(s.get("watts"), (int, float)):
                sys.exit("power-table: %s: job %s has no solo power reading" % (p, s["job"]))
        idle = (j.get("idle") or {}).get("watts")
        for pr in j.get("pairs", []):
            if not isinstance(pr.get("watts"), (int, float)):
                sys.exit("power-table: %s: pair %s has no power reading" % (p, "+".join(pr["jobs"])))
            runs.append({"sharing": j["sharing"], "jobs": pr["jobs"], "rates": [1 / x for x in pr["slowdown"]],
                         "solo_w": [solo[n]["watts"] for n in pr["jobs"]], "smact": [solo[n]["smact"] for n in pr["jobs"]],
                         "gpu_smact": pr.get("smact"), "watts": pr["watts"], "idle": idle})
    return runs


def predict(r, b):
    return b + sum((p - b) * q for p, q in zip(r["solo_w"], r["rates"]))


def fit_floor(rows):
    sxy = sxx = 0.0
    for r in rows:
        dx = 1 - sum(r["rates"])
        sxy += dx * (r["watts"] - predict(r, 0))
        sxx += dx * dx
    return sxy / sxx


def rms(rows, b):
    return math.sqrt(sum((predict(r, b) - r["watts"]) ** 2 for r in rows) / len(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, help="NAME=FILE.json[,FILE.json]: one run's files")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    runs = {}
    for spec in a.run:
        name, sep, paths = spec.partition("=")
        if not sep or not name or not paths:
            sys.exit("power-table: --run %r: expected NAME=FILE.json[,FILE.json]" % spec)
        runs[name] = load(paths)
        if not runs[name]:
            sys.exit("power-table: --run %s: no pair measurements" % name)
    floors = {n: fit_floor(rows) for n, rows in runs.items()}
    all_rows = [r for rows in runs.values() for r in rows]
    fmt = "| {} | {} | {} | {} | {} | {} | {} | {} |" if a.markdown else "{:8} {:8} {:16} {:>9} {:>9} {:>9} {:>16} {:>16}"
    print(fmt.format("run", "sharing", "pair", "work", "GPU SMACT", "measured", "B = idle", "B held out"))
    if a.markdown:
        print("|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        other = [n for n in runs if n != name]
        b_out = fit_floor([r for n in other for r in runs[n]]) if other else floors[name]
        for r in rows:
            work = sum(s * q for s, q in zip(r["smact"], r["rates"]))
            cells = []
            for b in (r["idle"], b_out):
                p = predict(r, b)
                cells.append("%.0f W (%+.1f %%)" % (p, 100 * (p / r["watts"] - 1)))
            print(fmt.format(name, r["sharing"], " + ".join(r["jobs"]), "%.3f" % work,
                             "%.3f" % r["gpu_smact"] if r["gpu_smact"] is not None else "-", "%.0f W" % r["watts"], *cells))
    print()
    for name, rows in runs.items():
        idle = [r["idle"] for r in rows if r["idle"]]
        print("%s: idle %.1f W; floor B fitted on its %d pairs %.1f W (rms %.1f W)" %
              (name, sum(idle) / len(idle) if idle else float("nan"), len(rows), floors[name], rms(rows, floors[name])))
    b = fit_floor(all_rows)
    print("all runs: floor B %.1f W over %d pairs, rms %.1f W; at B = idle rms %.1f W" %
          (b, len(all_rows), rms(all_rows, b), math.sqrt(sum((predict(r, r["idle"]) - r["watts"]) ** 2 for r in all_rows) / len(all_rows))))


if __name__ == "__main__":
    main()
