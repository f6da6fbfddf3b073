#!/usr/bin/env python3
"""Fits the simulator's power at full SM work (`power.max_watts` of models/sim/a100-thesis.toml) to
the one energy the thesis measured without collocation: Table 6.6, Exclusive, 60-task trace,
33.197904654 MJ (DCGM's total energy of the 4 GPUs of the DGX Station A100; thesis section 6.4.6).

    python3 scripts/fit-power.py [--colo build/colo] [--check]

The exclusive schedule does not depend on the power model, and its energy is linear in max_watts
(busy_watts + (max_watts - busy_watts) x work per GPU-second, docs/SIMULATOR.md "Power"), so two
simulations with different max_watts give the fitted value exactly. Idle and busy-floor power
stay as the model file states them (idle an assumption, the floor measured on an H200: one run
cannot fit three constants). Every
other row of Table 6.6 is reported, not fitted (scripts/thesis-table.py).
--check exits 1 unless the model file's max_watts is the fitted value (within 0.5 W)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "sim", "a100-thesis.toml")
TRACE = os.path.join(ROOT, "data", "carma", "traces", "philly_heavy_60_tasks.csv")
THESIS_EXCLUSIVE_MJ = 33.197904654
MAX_RE = re.compile(r"^(max_watts = \{ value = )([0-9.]+)(,.*)$", re.M)


def shipped_max_watts():
    m = MAX_RE.search(open(MODEL).read())
    if not m:
        sys.exit(f"fit-power: {MODEL}: no 'max_watts = {{ value = N, ... }}' line")
    return float(m.group(2))


def exclusive_energy(colo, max_watts):
    text = MAX_RE.sub(lambda m: f"{m.group(1)}{max_watts:.1f}{m.group(3)}", open(MODEL).read())
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(text)
        f.flush()
        cmd = [colo, "sim", "--model", f.name, "--trace", TRACE, "--policy", "exclusive", "--estimator", "oracle",
               "--json"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit(f"fit-power: {' '.join(cmd)} failed: {p.stdout.strip()} {p.stderr.strip()}")
        return script_errors.colo_json(cmd, p.stdout)["energy_mj"]


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    script_errors.need_program("fit-power", a.colo)
    shipped = shipped_max_watts()  # (first: without the line, both simulations would run one model)
    lo, hi = 200.0, 400.0
    e_lo, e_hi = exclusive_energy(a.colo, lo), exclusive_energy(a.colo, hi)
    if not e_hi > e_lo:
        sys.exit(f"fit-power: the exclusive energy does not grow with max_watts ({e_lo} MJ at {lo:.0f} W, "
                 f"{e_hi} MJ at {hi:.0f} W): nothing to fit")
    fitted = lo + (THESIS_EXCLUSIVE_MJ - e_lo) * (hi - lo) / (e_hi - e_lo)
    print(f"exclusive, 60-task: {e_lo:.3f} MJ at max_watts {lo:.0f}, {e_hi:.3f} MJ at {hi:.0f}; "
          f"thesis Table 6.6: {THESIS_EXCLUSIVE_MJ:.3f} MJ")
    print(f"fitted max_watts = {fitted:.1f} W (model file: {shipped:.1f} W)")
    if a.check and abs(fitted - shipped) > 0.5:
        sys.exit(f"fit-power: {MODEL} says max_watts {shipped:.1f}, the fit gives {fitted:.1f}")


if __name__ == "__main__":
    script_errors.run(main, "fit-power")
