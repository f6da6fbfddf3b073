#!/usr/bin/env python3
"""Board power under collocation, measured against the simulator's power model (docs/GPU-VALIDATION.md
§5): reads `colo bench collocation --measurements` files (one idle window, each job alone, every pair
under MPS or time-sliced) and prints, per pair, the measured power beside what each job's solo power
scaled by its rate predicts:

    P_pair = B + Σ_j (P_j − B) × rate_j        (P_j: job j alone; rate_j = 1 / slowdown_j)

i.e. each job's dynamic energy is the same wherever it runs, on a floor B. B is the plain least-squares
fit over the pairs (sim/models/power_fit.h fits the same, then bounds it to [idle, lowest solo power]
and needs more leverage; these are analysis numbers, not a model file). B fitted on the other runs is
used unchanged on each run (held out; "-" with one run), and the pairs are also shown at B = that
file's idle (an idle window spoiled by other processes is not used). The `work` column (Σ solo SMACT
× rate, the simulator's measure of SM work done) is printed beside the GPU's own SMACT over the pair's
window. Last, the solo runs about one line busy + k × SMACT at the all-runs floor: how far a single
slope misplaces single jobs.

    python3 scripts/power-table.py --run NAME=FILE.json[,FILE.json] [--run NAME=...] [--markdown]
"""
import argparse
import json
import math
import sys


def die(msg):
    sys.exit("power-table: " + msg)


def number(v, what, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        die(what + ": not a finite number")
    if (lo is not None and not v > lo) or (hi is not None and v > hi):
        die("%s: %g is outside (%g, %g]" % (what, v, lo if lo is not None else -math.inf, hi if hi is not None else math.inf))
    return float(v)


def watts(v, what):
    return number(v, what, 0, 10000)  # a board's power: > 0 and at most the model file's 10 kW


def load(paths):
    pairs, solos, solo_rows = [], {}, []
    for i, p in enumerate(paths.split(",")):
        if not p:
            die("--run: an empty file name in %r" % paths)
        if p in paths.split(",")[:i]:  # (its pairs would count twice in the fits)
            die("%s: the file is given twice in one run" % p)
        try:
            with open(p) as f:
                j = json.load(f)
        except (OSError, ValueError) as e:
            die("%s: %s" % (p, str(e).splitlines()[0] if str(e) else type(e).__name__))
        if not isinstance(j, dict) or j.get("format") != "colo-bench-collocation 1":
            die("%s: not a `colo bench collocation --measurements` file" % p)
        solo = {}
        for key in ("solo", "pairs"):
            if not isinstance(j.get(key, []), list):
                die("%s: '%s' is not a list" % (p, key))
        if not isinstance(j.get("sharing", "?"), str):
            die("%s: 'sharing' is not a string" % p)
        if not isinstance(j.get("idle", {}), (dict, type(None))):
            die("%s: 'idle' is not an object" % p)
        for s in j.get("solo") or []:
            name = s.get("job") if isinstance(s, dict) else None
            if not isinstance(name, str):
                die("%s: a solo run without a job name" % p)
            if s.get("watts") is None:
                die("%s: job %s has no solo power reading" % (p, name))
            if name in solo:  # (the second would replace the first unseen)
                die("%s: job %s has two solo runs" % (p, name))
            smact = number(s.get("smact"), "%s: job %s smact" % (p, name))
            if not 0 <= smact <= 1:
                die("%s: job %s smact %g is outside [0, 1]" % (p, name, smact))
            solo[name] = (smact, watts(s.get("watts"), "%s: job %s watts" % (p, name)))
        idle = j.get("idle") if isinstance(j.get("idle"), dict) else {}
        idle_w = idle.get("watts")
        procs = idle.get("processes", 0)
        if isinstance(procs, bool) or not isinstance(procs, int) or procs < 0:
            die("%s: idle processes: not a count" % p)
        if idle_w is not None and not procs:
            idle_w = watts(idle_w, "%s: idle watts" % p)
        else:
            idle_w = None  # not measured, or spoiled by other processes (the harness does not fit it either)
        for n, (sm, w) in solo.items():
            if n not in solos:  # a --solo-from file repeats the same solo runs
                solo_rows.append((n, sm, w, idle_w))
        solos.update(solo)
        for pr in j.get("pairs") or []:
            jobs = pr.get("jobs") if isinstance(pr, dict) else None
            label = "+".join(jobs) if isinstance(jobs, list) and all(isinstance(x, str) for x in jobs) else "?"
            if label == "?" or len(jobs) < 2:
                die("%s: a pair without its job names" % p)
            if pr.get("watts") is None:
                die("%s: pair %s has no power reading" % (p, label))
            for n in jobs:
                if n not in solo:
                    die("%s: pair %s names job %s, which has no solo run in the file" % (p, label, n))
            slow = pr.get("slowdown")
            if not isinstance(slow, list) or len(slow) != len(jobs):
                die("%s: pair %s: one slowdown per job expected" % (p, label))
            rates = []
            for n, x in zip(jobs, slow):
                x = number(x, "%s: pair %s slowdown of %s" % (p, label, n))
                if not 1e-3 <= x <= 1e6:  # (1 / x must stay a rate the fits can square)
                    die("%s: pair %s: slowdown of %s is %g, outside [0.001, 1e6]" % (p, label, n, x))
                rates.append(1 / x)
            gpu_smact = pr.get("smact")
            if gpu_smact is not None:
                gpu_smact = number(gpu_smact, "%s: pair %s smact" % (p, label))
                if not 0 <= gpu_smact <= 1:
                    die("%s: pair %s smact %g is outside [0, 1]" % (p, label, gpu_smact))
            pairs.append({"sharing": j.get("sharing", "?"), "jobs": jobs, "rates": rates,
                          "solo_w": [solo[n][1] for n in jobs], "smact": [solo[n][0] for n in jobs],
                          "gpu_smact": gpu_smact,
                          "watts": watts(pr["watts"], "%s: pair %s watts" % (p, label)), "idle": idle_w})
    return pairs, solos, solo_rows


def predict(r, b):
    return b + sum((p - b) * q for p, q in zip(r["solo_w"], r["rates"]))


def fit_floor(rows):
    """B and its standard error, or (None, None) when Σ(1 − Σ rates)² is 0."""
    sxy = sxx = 0.0
    for r in rows:
        dx = 1 - sum(r["rates"])
        sxy += dx * (r["watts"] - predict(r, 0))
        sxx += dx * dx
    if sxx <= 0:
        return None, None
    b = sxy / sxx
    se = None
    if len(rows) > 1:
        resid = sum((predict(r, b) - r["watts"]) ** 2 for r in rows)
        se = math.sqrt(resid / (len(rows) - 1) / sxx)
    return b, se


def rms(rows, b):
    return math.sqrt(sum((predict(r, b) - r["watts"]) ** 2 for r in rows) / len(rows))


def cell(r, b):
    if b is None:
        return "-"
    p = predict(r, b)
    return "%.0f W (%+.1f %%)" % (p, 100 * (p / r["watts"] - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, help="NAME=FILE.json[,FILE.json]: one run's files")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    runs, solos, solo_rows = {}, {}, {}
    for spec in a.run:
        name, sep, paths = spec.partition("=")
        if not sep or not name or not paths:
            die("--run %r: expected NAME=FILE.json[,FILE.json]" % spec)
        if name in runs:
            die("--run %s: the name is given twice" % name)
        runs[name], solos[name], solo_rows[name] = load(paths)
        if not runs[name]:
            die("--run %s: no pair measurements" % name)
    sfmt = "| {} | {} | {} | {} | {} |" if a.markdown else "{:8} {:16} {:>7} {:>9} {:>28}"
    print(sfmt.format("run", "job alone", "SMACT", "power", "W per unit SMACT above idle"))
    if a.markdown:
        print("|---|---|---|---|---|")
    for name, rows in solo_rows.items():
        for n, sm, w, idle in rows:
            above = "%.0f" % ((w - idle) / sm) if idle is not None and sm > 0 else "-"
            print(sfmt.format(name, n, "%.3f" % sm, "%.0f W" % w, above))
    print()
    fmt = "| {} | {} | {} | {} | {} | {} | {} | {} |" if a.markdown else "{:8} {:8} {:16} {:>9} {:>9} {:>9} {:>16} {:>16}"
    print(fmt.format("run", "sharing", "pair", "work", "GPU SMACT", "measured", "B = idle", "B held out"))
    if a.markdown:
        print("|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        other = [r for n in runs if n != name for r in runs[n]]
        b_out = fit_floor(other)[0] if other else None
        for r in rows:
            work = sum(s * q for s, q in zip(r["smact"], r["rates"]))
            print(fmt.format(name, r["sharing"], " + ".join(r["jobs"]), "%.3f" % work,
                             "%.3f" % r["gpu_smact"] if r["gpu_smact"] is not None else "-", "%.0f W" % r["watts"],
                             cell(r, r["idle"]), cell(r, b_out)))
    print()
    idles = []
    for name, rows in runs.items():
        idle = sorted({r["idle"] for r in rows if r["idle"] is not None})
        idles += idle
        b, se = fit_floor(rows)
        print("%s: idle %s; floor B fitted on its %d pairs: %s" % (
            name, " / ".join("%.2f W" % i for i in idle) or "-", len(rows),
            "not determined (rates sum to 1)" if b is None else "%.1f W (rms %.1f W)" % (b, rms(rows, b))))
    all_rows = [r for rows in runs.values() for r in rows]
    b, se = fit_floor(all_rows)
    if b is None:
        print("all runs: floor B not determined (rates sum to 1 in every pair)")
        return
    mean_idle = sum(idles) / len(idles) if idles else None
    print("all runs: floor B %.1f W%s over %d pairs, rms %.1f W%s" % (
        b, " ± %.1f W (standard error)" % se if se is not None else "", len(all_rows), rms(all_rows, b),
        "; mean idle %.2f W, B − idle %+.1f W" % (mean_idle, b - mean_idle) if mean_idle is not None else ""))
    for name in runs:
        pts = [v for v in solos[name].items() if v[1][0] >= 0.05]
        if not pts:
            continue
        k = sum(s * (w - b) for _, (s, w) in pts) / sum(s * s for _, (s, w) in pts)
        errs = [(w - (b + k * s), n) for n, (s, w) in pts]
        worst = max(errs, key=lambda e: abs(e[0]))
        print("%s: solo runs about one line B + k × SMACT (B %.1f W): k %.0f W, rms %.1f W, worst %+.1f W (%s)" % (
            name, b, k, math.sqrt(sum(e * e for e, _ in errs) / len(errs)), worst[0], worst[1]))


if __name__ == "__main__":
    main()
