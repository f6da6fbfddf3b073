#!/usr/bin/env python3
"""Every scheduling result the thesis reports with a number (chapter 6: Tables 6.3-6.6 and the
figures' numbers quoted in its text) beside colo's simulation of the same run, with the error per
row. Prints the Markdown table in docs/SIMULATOR.md ("The thesis, row by row").

    python3 scripts/thesis-table.py [--colo build/colo] [--check]

--check exits 1 unless every row ran (the table is regenerated, not compared to fixed numbers).
Source of the thesis figures: ../shared/seeds/001_beb4868e7a10e869.txt (the thesis), section 6.4.
One row is fitted: Table 6.6's Exclusive energy, to which the power at full SM work is fitted
(scripts/fit-power.py); the sharing models are fitted to chapter 4's pairs, the rest are
assumptions and A100 figures, every one as docs/SIMULATOR.md states it."""
import argparse
import os
import subprocess
import sys

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIX = "data/carma/traces/philly_mix_90_tasks.csv"
HEAVY = "data/carma/traces/philly_heavy_60_tasks.csv"

# Each run: the thesis' policy name, colo sim flags. "GMem >= X" without a margin is the literal
# condition (margin 0); the oracle runs use the thesis' 2 GB margin (colo's default).
NO_EST = ["--estimator", "none"]


def runs():
    """(id, trace, flags) of every simulation the table needs."""
    r = {}
    for trace, tag in ((MIX, "mix"), (HEAVY, "heavy")):
        r[(tag, "exclusive")] = (trace, ["--policy", "exclusive", "--estimator", "oracle"])
        r[(tag, "exclusive-streams")] = (trace, ["--policy", "exclusive", "--estimator", "oracle", "--sharing", "streams"])
    # 90-task, oracle (Fig. 6.5/6.6 text): OWF = MAGM with the exact need, MPS
    r[("mix", "owf")] = (MIX, ["--policy", "magm", "--estimator", "oracle"])
    # 90-task, no estimator (Table 6.3, Fig. 6.7 text)
    r[("mix", "rr-nocond")] = (MIX, ["--policy", "round-robin", "--no-conditions"] + NO_EST)
    r[("mix", "magm-nocond")] = (MIX, ["--policy", "magm", "--no-conditions"] + NO_EST)
    r[("mix", "magm-80")] = (MIX, ["--policy", "magm", "--smact-cap", "80", "--min-free-mib", "0", "--margin-mib", "0"] + NO_EST)
    r[("mix", "magm-80-2g")] = (MIX, ["--policy", "magm", "--smact-cap", "80", "--min-free-mib", "2048"] + NO_EST)
    r[("mix", "magm-80-5g")] = (MIX, ["--policy", "magm", "--smact-cap", "80", "--min-free-mib", "5120"] + NO_EST)
    r[("mix", "lug-80-5g")] = (MIX, ["--policy", "lug", "--smact-cap", "80", "--min-free-mib", "5120"] + NO_EST)
    r[("mix", "magm-75-5g")] = (MIX, ["--policy", "magm", "--smact-cap", "75", "--min-free-mib", "5120"] + NO_EST)
    r[("mix", "magm-85-5g")] = (MIX, ["--policy", "magm", "--smact-cap", "85", "--min-free-mib", "5120"] + NO_EST)
    # 90-task, estimators (Table 6.4, Fig. 6.9 text)
    for est, name in (("horus", "horus"), ("faketensor", "faketensor"), ("gpumemnet-csv", "gpumemnet")):
        r[("mix", f"magm-{name}-nocap")] = (MIX, ["--policy", "magm", "--estimator", est, "--smact-cap", "100", "--margin-mib", "0"])
        r[("mix", f"magm-{name}-80")] = (MIX, ["--policy", "magm", "--estimator", est, "--smact-cap", "80", "--margin-mib", "0"])
    # 60-task (Tables 6.5 and 6.6)
    r[("heavy", "rr-streams")] = (HEAVY, ["--policy", "round-robin", "--no-conditions", "--sharing", "streams"] + NO_EST)
    r[("heavy", "rr-mps")] = (HEAVY, ["--policy", "round-robin", "--no-conditions"] + NO_EST)
    r[("heavy", "magm-2g-80")] = (HEAVY, ["--policy", "magm", "--smact-cap", "80", "--min-free-mib", "2048"] + NO_EST)
    r[("heavy", "lug-2g-80")] = (HEAVY, ["--policy", "lug", "--smact-cap", "80", "--min-free-mib", "2048"] + NO_EST)
    for est, name in (("horus", "horus"), ("faketensor", "faketensor"), ("gpumemnet-csv", "gpumemnet")):
        r[("heavy", f"magm-{name}-80")] = (HEAVY, ["--policy", "magm", "--estimator", est, "--smact-cap", "80", "--margin-mib", "0"])
    return r


# (table, trace, thesis run, metric, thesis value, colo run id, colo baseline id or None)
# metric: "ooms" (count), "makespan_cut" (% vs exclusive), "energy_mj", "energy_cut" (%).
ROWS = [
    ("Fig. 6.5/6.6 (text)", "mix", "OWF (oracle worst fit), MPS", "makespan_cut", -30.13, "owf", "exclusive"),
    ("Table 6.3", "mix", "RR (no condition)", "ooms", 8, "rr-nocond", None),
    ("Table 6.3", "mix", "MAGM (no condition)", "ooms", 5, "magm-nocond", None),
    ("Table 6.3", "mix", "MAGM (SMACT ≤ 80 %)", "ooms", 4, "magm-80", None),
    ("Table 6.3", "mix", "MAGM (SMACT ≤ 80 %, GMem ≥ 2 GB)", "ooms", 2, "magm-80-2g", None),
    ("Table 6.3", "mix", "MAGM (SMACT ≤ 80 %, GMem ≥ 5 GB)", "ooms", 2, "magm-80-5g", None),
    ("Table 6.3", "mix", "LUG (SMACT ≤ 80 %, GMem ≥ 5 GB)", "ooms", 2, "lug-80-5g", None),
    ("Table 6.3", "mix", "MAGM (SMACT ≤ 75 %, GMem ≥ 5 GB)", "ooms", 1, "magm-75-5g", None),
    ("Table 6.3", "mix", "MAGM (SMACT ≤ 85 %, GMem ≥ 5 GB)", "ooms", 2, "magm-85-5g", None),
    ("Fig. 6.7 (text)", "mix", "LUG (SMACT ≤ 80 %, GMem ≥ 5 GB), best without estimates", "makespan_cut", -28.0, "lug-80-5g", "exclusive"),
    ("Table 6.4", "mix", "MAGM (GMem ≥ Horus)", "ooms", 1, "magm-horus-nocap", None),
    ("Table 6.4", "mix", "MAGM (GMem ≥ FakeTensor)", "ooms", 0, "magm-faketensor-nocap", None),
    ("Table 6.4", "mix", "MAGM (GMem ≥ GPUMemNet)", "ooms", 1, "magm-gpumemnet-nocap", None),
    ("Table 6.4", "mix", "MAGM (SMACT ≤ 80, GMem ≥ Horus)", "ooms", 0, "magm-horus-80", None),
    ("Table 6.4", "mix", "MAGM (SMACT ≤ 80, GMem ≥ FakeTensor)", "ooms", 0, "magm-faketensor-80", None),
    ("Table 6.4", "mix", "MAGM (SMACT ≤ 80, GMem ≥ GPUMemNet)", "ooms", 0, "magm-gpumemnet-80", None),
    ("Fig. 6.9 (text)", "mix", "MAGM + GPUMemNet, MPS (\"around 25 %\")", "makespan_cut", -25.0, "magm-gpumemnet-80", "exclusive"),
    ("Table 6.5", "heavy", "Exclusive", "ooms", 0, "exclusive", None),
    ("Table 6.5", "heavy", "Round Robin on streams + recovery", "ooms", 9, "rr-streams", None),
    ("Table 6.5", "heavy", "Round Robin on MPS + recovery", "ooms", 6, "rr-mps", None),
    ("Table 6.5", "heavy", "MAGM (2 GB, 80 %) + recovery", "ooms", 4, "magm-2g-80", None),
    ("Table 6.5", "heavy", "LUG (2 GB, 80 %) + recovery", "ooms", 4, "lug-2g-80", None),
    ("Table 6.5", "heavy", "MAGM + Horus (80 %)", "ooms", 2, "magm-horus-80", None),
    ("Table 6.5", "heavy", "MAGM + FakeTensor (80 %)", "ooms", 3, "magm-faketensor-80", None),
    ("Table 6.5", "heavy", "MAGM + GPUMemNet (80 %)", "ooms", 1, "magm-gpumemnet-80", None),
    ("Table 6.6", "heavy", "Exclusive (fitted: scripts/fit-power.py)", "energy_mj", 33.198, "exclusive", None),
    ("Table 6.6", "heavy", "Round Robin on streams", "energy_mj", 34.745, "rr-streams", None),
    ("Table 6.6", "heavy", "Round Robin on MPS", "energy_mj", 29.601, "rr-mps", None),
    ("Table 6.6", "heavy", "MAGM on MPS", "energy_mj", 28.781, "magm-2g-80", None),
    ("Table 6.6", "heavy", "MAGM + Horus on MPS", "energy_mj", 29.042, "magm-horus-80", None),
    ("Table 6.6", "heavy", "MAGM + FakeTensor on MPS", "energy_mj", 30.306, "magm-faketensor-80", None),
    ("Table 6.6", "heavy", "MAGM + GPUMemNet on MPS", "energy_mj", 28.502, "magm-gpumemnet-80", None),
    ("Table 6.6 (text)", "heavy", "MAGM + GPUMemNet on MPS vs exclusive", "energy_cut", -13.25, "magm-gpumemnet-80", "exclusive"),
]


def simulate(colo, trace, flags):
    cmd = [colo, "sim", "--trace", os.path.join(ROOT, trace), "--json"] + flags
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"thesis-table: {' '.join(cmd)} failed: {p.stdout.strip()} {p.stderr.strip()}")
    return script_errors.colo_json(cmd, p.stdout)


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    script_errors.need_program("thesis-table", a.colo)
    res = {}
    for key, (trace, flags) in runs().items():
        res[key] = simulate(a.colo, trace, flags)
    print("| source | trace | run | metric | thesis | colo sim | error |")
    print("|---|---|---|---|---:|---:|---:|")
    for src, tag, name, metric, thesis, run, base in ROWS:
        r = res[(tag, run)]
        trace = "90-task" if tag == "mix" else "60-task"
        if metric == "ooms":
            colo_v, err = r["oom_crashes"], f"{r['oom_crashes'] - thesis:+d}"
            shown = (f"{thesis}", f"{colo_v}")
            label = "OOM crashes"
        elif metric == "energy_mj":
            colo_v = r["energy_mj"]
            shown, err, label = (f"{thesis:.1f} MJ", f"{colo_v:.1f} MJ"), f"{100 * (colo_v - thesis) / thesis:+.0f} %", "energy"
        else:
            b = res[(tag, base)]
            field = "makespan_s" if metric == "makespan_cut" else "energy_mj"
            cut = 100 * (r[field] - b[field]) / b[field]
            shown, err = (f"{thesis:+.1f} %", f"{cut:+.1f} %"), f"{cut - thesis:+.1f} pt"
            label = "makespan vs exclusive" if metric == "makespan_cut" else "energy vs exclusive"
        print(f"| {src} | {trace} | {name} | {label} | {shown[0]} | {shown[1]} | {err} |")
    if a.check and len(res) != len(runs()):
        sys.exit(1)


if __name__ == "__main__":
    script_errors.run(main, "thesis-table")
