#!/usr/bin/env python3
"""Leave one network out: how well a profile's workspace table serves a network it has never
measured, on configurations whose memory was measured (docs/GPU-VALIDATION.md §9).

For each network (the model a configuration probes: torchvision:NAME or FILE:FUNCTION), the table
loses every key that only that network's configurations ran (a key's sources: the shape files of
scripts/conv-shapes.py; keys other networks, carma rows or GPUMemNet rows also ran stay, as they would
be measured anyway), and the network's configurations are estimated by colo with k = 0 (the ratios)
.. --max-k nearest shapes. The errors are the replay's reserved peak against max_memory_reserved.

  /usr/bin/python3 scripts/conv-workspace-lono.py --configs scripts/gpu-validate-othernets.configs \\
      --measured docs/gpu-validation/measured-othernets-h200.jsonl \\
      --shapes docs/gpu-validation/conv-shapes.jsonl docs/gpu-validation/conv-shapes-othernets.jsonl \\
      --gpu h100-80gb [--colo build/colo] [--max-k 6] [--json OUT]
"""
import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import script_errors  # noqa: E402  scripts/script_errors.py: one-line errors, never a traceback


def load_script(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--configs", required=True, nargs="+", help="scripts/gpu-validate*.configs files")
    ap.add_argument("--measured", required=True, nargs="+", help="scripts/gpu-validate.py measure outputs")
    ap.add_argument("--shapes", required=True, nargs="+", help="scripts/conv-shapes.py outputs (each key's sources)")
    ap.add_argument("--gpu", default="h100-80gb", help="calibration profile naming the table")
    ap.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    ap.add_argument("--max-k", type=int, default=6)
    ap.add_argument("--json", help="write the per-k results here")
    a = ap.parse_args()
    if not 1 <= a.max_k <= 16:
        sys.exit("conv-workspace-lono: --max-k must be in [1, 16]")
    script_errors.need_program("conv-workspace-lono", a.colo)
    if a.json is not None:
        script_errors.need_output("conv-workspace-lono", a.json, "--json")
    gv = load_script("gpu_validate", "gpu-validate.py")
    cv = load_script("conv_workspace_neighbours_cv", "conv-workspace-neighbours-cv.py")
    try:
        with open(os.path.join(ROOT, "calibration", a.gpu + ".json")) as f:
            profile = json.load(f)
        if not profile.get("conv_workspace_table"):
            sys.exit(f"conv-workspace-lono: profile {a.gpu} names no conv_workspace_table")
        head, table = cv.read_table(os.path.join(ROOT, "calibration", profile["conv_workspace_table"]))
        sources = {}
        for path in a.shapes:
            for key, srcs in cv.shape_records(path):
                sources.setdefault(key, set()).update(srcs)
        measured = {}
        for path in a.measured:
            for n, r in script_errors.read_jsonl(path):
                if isinstance(r, dict) and "max_reserved_mib" in r:
                    if not isinstance(r.get("name"), str):
                        raise ValueError(f"{path}:{n}: a measurement without its configuration's name")
                    measured[r["name"]] = cv.measured_mib(r["max_reserved_mib"], f"{path}:{n}")
        configs = {}  # configuration source label -> (name, words, network)
        for path in a.configs:
            for name, words in gv.read_configs(path):  # (its flags checked there: errors name file:line)
                network = gv.parse_flags(gv.split_env(words)[1]).probe
                configs[f"{os.path.basename(path)}:{name}"] = (name, words, network)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"conv-workspace-lono: {type(e).__name__}: {e}")
    network_of = {label: c[2] for label, c in configs.items()}
    runs = [label for label, c in configs.items() if c[0] in measured]
    if not runs:
        sys.exit("conv-workspace-lono: no configuration has a measurement")
    work = tempfile.mkdtemp(prefix="colo-lono-")
    try:
        traces = {}
        for label in runs:  # the probe once per configuration (Debian's PyTorch)
            name, words, _ = configs[label]
            out = os.path.join(work, name + ".trace")
            r = gv.run_probe(words, out, 600)
            if r.returncode != 0:
                sys.exit(f"conv-workspace-lono: probe of {name} failed: {r.stderr.strip().splitlines()[-1:]}")
            traces[label] = out
        errs = {k: [] for k in range(a.max_k + 1)}
        per_config = {}
        networks = sorted({network_of[label] for label in runs})
        for i, net in enumerate(networks):
            own = {label for label, n in network_of.items() if n == net}
            keep = {key: steps for key, steps in table.items()
                    if not (sources.get(key) and sources[key] <= own)}
            d = os.path.join(work, f"net{i}")
            cv.write_fold(d, head, keep, profile, a.max_k, "lono")

            def estimate(job, d=d):
                label, k = job
                return label, k, cv.estimate_peak(a.colo, traces[label], f"lono{k}", d, label)
            jobs = [(label, k) for label in sorted(own & set(runs)) for k in range(a.max_k + 1)]
            with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
                for label, k, peak in ex.map(estimate, jobs):
                    m = measured[configs[label][0]]
                    errs[k].append((peak - m) / m * 100)
                    per_config.setdefault(configs[label][0], {})[k] = round((peak - m) / m * 100, 2)
            print(f"{net}: {len(own & set(runs))} configuration(s), table keeps {len(keep)} of {len(table)} keys",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = {k: cv.summary(v) for k, v in errs.items()}
    print(f"{'k':>3} {'configs':>7} {'median |e|':>11} {'median':>8} {'under':>6} {'under >5 %':>11} {'min':>8} {'max':>8}")
    for k, s in results.items():
        print(f"{k:>3} {s['rows']:>7} {s['median_abs']:>10.1f}% {s['median']:>+7.1f}% {s['under'] * 100:>5.0f}% "
              f"{s['under5'] * 100:>10.0f}% {s['min']:>+7.1f}% {s['max']:>+7.1f}%   {'(the ratios)' if k == 0 else ''}")
    if a.json is not None:
        with open(a.json, "w") as out:
            json.dump({"gpu": a.gpu, "results": results, "per_configuration": per_config}, out, indent=1)


if __name__ == "__main__":
    main()
