#!/usr/bin/env python3
"""What colo adds to Slurm, in the simulator (docs/SLURM.md, issue 12 item 6).

Replays two traces on a cluster of identical servers through `colo sim --nodes`, under:
  slurm-whole   Slurm as most sites run it: every job asks for whole GPUs (--gres=gpu:N);
  slurm-shards  Slurm as-is with gres/shard: every job asks for the same share (the user's
                guess; here a quarter of a 40 GiB GPU, 10 GiB), Slurm places by memory alone
                (first GPU with room), no SM activity, and an OOM crash fails the job;
  slurm-shards+resubmit  the same, but users resubmit a failed job for a whole GPU an hour
                later (assumption), which the simulator models as strict recovery noticed after 3600 s;
  slurm+colo    shards sized by colo's estimate + margin (colo sbatch), Slurm's placement
                (first fit by memory, no SM activity), OOM requeue with loose escalation
                (colo run + colo slurm recover);
  slurm+colo+weights  the same, with `colo slurm node-weight` on every node: Slurm takes the
                server colo ranks best (MAGM order under the SMACT cap), first fit inside it;
  colo          colo's own per-server policy: MAGM with the SMACT cap, the same estimate and
                recovery.
Traces: the 90-task Philly-derived trace scaled up (K copies submitted at the same offsets on K
servers of 4 GPUs), and a synthetic trace of N jobs drawn from the same workload mix (Poisson
arrivals at an offered load of LOAD times what the cluster runs with whole GPUs) on S servers
of 8 GPUs. Everything is seeded: the same command prints the same table.

  python3 scripts/slurm-compare.py [--colo build/colo] [--scale 8] [--jobs 100000]
                                   [--servers 250] [--load 2.0] [--estimator allocsim] [--quick]
"""
import argparse
import csv
import json
import math
import os
import random
import subprocess
import sys
import time

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scenarios(estimator):
    return [
        ("slurm-whole", ["--policy", "exclusive", "--estimator", "oracle", "--recovery", "strict"]),
        ("slurm-shards", ["--policy", "first-fit", "--smact-cap", "100", "--margin-mib", "0",
                          "--estimator", "fixed:10GiB", "--recovery", "none"]),
        # Users notice the failed job and resubmit it for a whole GPU (assumption: an hour later).
        ("slurm-shards+resubmit", ["--policy", "first-fit", "--smact-cap", "100", "--margin-mib", "0",
                                   "--estimator", "fixed:10GiB", "--recovery", "strict", "--oom-detect-s", "3600"]),
        ("slurm+colo", ["--policy", "first-fit", "--smact-cap", "100", "--estimator", estimator,
                        "--recovery", "loose"]),
        # The same, with colo slurm node-weight on every node: Slurm takes the best-ranked
        # server (MAGM order, SMACT cap) and first fit inside it.
        ("slurm+colo+weights", ["--policy", "node-weight", "--estimator", estimator, "--recovery", "loose"]),
        ("colo", ["--policy", "magm", "--estimator", estimator, "--recovery", "loose"]),
    ]


def read_trace(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"slurm-compare: {path}: {e}")
    if not rows:
        sys.exit(f"slurm-compare: {path}: empty (expected a header and rows of offset_s,workload)")
    if rows[0] != ["submit_offset_s", "workload"]:  # (read by position here, copied to the traces made)
        sys.exit(f"slurm-compare: {path}:1: expected the header submit_offset_s,workload")
    out = []
    for n, r in enumerate(rows[1:], start=2):
        if not r:
            continue
        try:
            off = float(r[0])
            if len(r) < 2 or not math.isfinite(off) or off < 0:
                raise ValueError
        except ValueError:
            sys.exit(f"slurm-compare: {path}:{n}: expected offset_s,workload with a finite offset >= 0")
        out.append((off, r[1]))
    if not out:
        sys.exit(f"slurm-compare: {path}: no job rows")
    return rows[0], out


def write_trace(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for off, wl in rows:
            w.writerow([f"{off:.3f}".rstrip("0").rstrip("."), wl])


def scaled_trace(src, k, out):
    header, rows = read_trace(src)
    scaled = sorted(((off, wl) for off, wl in rows for _ in range(k)), key=lambda r: r[0])
    write_trace(out, header, scaled)
    return len(scaled)


def solo_gpu_seconds(workloads_csv):
    """Workload name -> (GPUs, solo seconds), as the simulator reads the catalog."""
    out = {}
    with open(workloads_csv, newline="") as f:
        for r in csv.DictReader(f):
            try:
                out[r["workload"]] = (int(r["gpus"]), float(r["epochs"]) * float(r["epoch_minutes"]) * 60)
            except (KeyError, ValueError):
                continue  # rows whose duration is an assumption of the simulator's own
    return out


def synthetic_trace(src, workloads_csv, jobs, gpus, load, seed, out):
    header, rows = read_trace(src)
    solo = solo_gpu_seconds(workloads_csv)
    mix = [wl for _, wl in rows]
    known = [w for w in mix if w in solo]  # (a workload whose duration is the simulator's assumption is left out of the mean)
    if not known:
        sys.exit(f"slurm-compare: no workload of {src} has a duration in {workloads_csv}")
    mean_gpu_s = sum(solo[w][0] * solo[w][1] for w in known) / len(known)
    gap = mean_gpu_s / (gpus * load)  # offered load = load × the cluster's whole-GPU capacity
    rng = random.Random(seed)
    t, made = 0.0, []
    for _ in range(jobs):
        made.append((t, rng.choice(mix)))
        t += rng.expovariate(1.0 / gap)
    write_trace(out, header, made)
    return gap


def run(colo, workloads, trace, gpus, nodes, args):
    cmd = [colo, "sim", "--workloads", workloads, "--trace", trace, "--gpus", str(gpus), "--nodes", str(nodes),
           "--sharing", "mps", "--json", *args]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"slurm-compare: {' '.join(cmd)} failed: {r.stderr.strip()}")
    res = script_errors.colo_json(cmd, r.stdout)
    res["seconds"] = time.monotonic() - t0
    return res


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--workloads", default=os.path.join(ROOT, "data", "carma", "workloads.csv"))
    ap.add_argument("--trace", default=os.path.join(ROOT, "data", "carma", "traces", "philly_mix_90_tasks.csv"))
    ap.add_argument("--scale", type=int, help="copies of the trace = servers of 4 GPUs (default 8)")
    ap.add_argument("--jobs", type=int, help="synthetic trace length (default 100000)")
    ap.add_argument("--servers", type=int, help="8-GPU servers for the synthetic trace (default 250)")
    ap.add_argument("--load", type=float, default=2.0, help="synthetic offered load (× whole-GPU capacity)")
    ap.add_argument("--estimator", default="allocsim", help="colo's estimator for slurm+colo and colo")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "slurm-compare"))
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    ap.add_argument("--quick", action="store_true", help="a small run for the tests (2 copies; 2000 jobs on 4 servers)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless what the scenarios guarantee holds (whole GPUs never OOM; colo's loses no job)")
    a = ap.parse_args()
    if a.quick and (a.scale, a.jobs, a.servers) != (None, None, None):
        sys.exit("slurm-compare: --quick sets --scale, --jobs and --servers itself; give one or the others")
    for name, default, quick in (("scale", 8, 2), ("jobs", 100000, 2000), ("servers", 250, 4)):
        if getattr(a, name) is None:
            setattr(a, name, quick if a.quick else default)
    if a.scale < 1 or a.jobs < 1 or a.servers < 1 or not (1e-6 <= a.load <= 1e6):
        sys.exit("slurm-compare: --scale, --jobs and --servers must be positive, --load within [1e-6, 1e6]")
    if a.scale > 25000 or a.servers > 12500:  # colo sim's --gpus: at most 100000 (4 and 8 per server)
        sys.exit("slurm-compare: --scale at most 25000 and --servers at most 12500 (colo sim's 100000 GPUs)")
    if a.jobs > 5000000:  # a row of the carma names is at most ~46 bytes; colo sim reads traces up to 256 MiB
        sys.exit("slurm-compare: --jobs at most 5000000 (colo sim reads a trace of at most 256 MiB)")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        sys.exit(f"slurm-compare: --out {a.out}: not a directory")
    script_errors.need_program("slurm-compare", a.colo)
    os.makedirs(a.out, exist_ok=True)

    header, rows = read_trace(a.trace)
    # The trace itself through colo once (whole GPUs, its jobs alone): what colo finds wrong in it is
    # reported at its own line, not at the line of a copy below.
    run(a.colo, a.workloads, a.trace, 4, 1, scenarios(a.estimator)[0][1])
    # Every scenario's flags on the trace's first job, before any long run: a bad --estimator
    # (or colo binary) is reported now, not after the scenarios before it have run.
    probe = os.path.join(a.out, "first_job.csv")
    write_trace(probe, header, rows[:1])
    for _, flags in scenarios(a.estimator):
        run(a.colo, a.workloads, probe, 4, 1, flags)
    stem = os.path.splitext(os.path.basename(a.trace))[0]
    scaled = os.path.join(a.out, f"{stem}_x{a.scale}.csv")
    n_scaled = scaled_trace(a.trace, a.scale, scaled)
    synth = os.path.join(a.out, f"synthetic_{a.jobs}.csv")
    gap = synthetic_trace(a.trace, a.workloads, a.jobs, a.servers * 8, a.load, a.seed, synth)
    for path in (scaled, synth):  # longer workload names than the carma ones could pass the bound above
        if os.path.getsize(path) > 256 << 20:
            sys.exit(f"slurm-compare: {path} is larger than the 256 MiB colo sim reads: fewer --jobs or --scale")

    runs = [
        (f"{stem} ×{a.scale} ({n_scaled} jobs, {a.scale}×4 GPUs)", scaled, 4 * a.scale, a.scale),
        (f"synthetic ({a.jobs} jobs, {a.servers}×8 GPUs, load {a.load:g}, mean gap {gap:.1f} s)", synth,
         8 * a.servers, a.servers),
    ]
    results = []
    for title, trace, gpus, nodes in runs:
        for name, flags in scenarios(a.estimator):
            r = run(a.colo, a.workloads, trace, gpus, nodes, flags)
            r.update(trace=title, scenario=name)
            results.append(r)
            print(f"slurm-compare: {title}: {name} done in {r['seconds']:.1f} s", file=sys.stderr)
    problems = []
    for r in results:
        where = f"{r['trace']}: {r['scenario']}"
        if r["completed"] + r["failed"] != r["jobs"]:
            problems.append(f"{where}: {r['completed']} completed + {r['failed']} failed != {r['jobs']} jobs")
        if r["scenario"] == "slurm-whole" and r["oom_crashes"] != 0:
            problems.append(f"{where}: {r['oom_crashes']} OOM crashes on whole GPUs")
        if r["scenario"] in ("slurm-shards+resubmit", "slurm+colo", "slurm+colo+weights", "colo") and r["failed"] != 0:
            problems.append(f"{where}: {r['failed']} jobs lost although OOMs are recovered")
        if r["scenario"] == "slurm-shards" and r["failed"] != r["oom_crashes"]:
            problems.append(f"{where}: {r['oom_crashes']} OOM crashes but {r['failed']} failed jobs without recovery")
    if a.check and problems:
        sys.exit("slurm-compare: " + "; ".join(problems))
    if a.json:
        print(json.dumps(results, indent=1))
        return
    for title, *_ in runs:
        rows = [r for r in results if r["trace"] == title]
        base = next(r for r in rows if r["scenario"] == "slurm-whole")
        print(f"\n{title}\n")
        print("| scenario | completed | failed (OOM, no retry) | OOM crashes | makespan (h) | vs whole GPUs | avg wait (h) "
              "| avg JCT (h) | SMACT avg | memory used avg |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['scenario']} | {r['completed']} | {r['failed']} | {r['oom_crashes']} | {r['makespan_s'] / 3600:.2f} "
                  f"| {100 * (r['makespan_s'] / base['makespan_s'] - 1):+.1f} % | {r['avg_wait_s'] / 3600:.2f} "
                  f"| {r['avg_jct_s'] / 3600:.2f} | {100 * r['smact_avg']:.1f} % | {100 * r['mem_util_avg']:.1f} % |")


if __name__ == "__main__":
    script_errors.run(main, "slurm-compare")
