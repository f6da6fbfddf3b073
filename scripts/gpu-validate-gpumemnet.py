#!/usr/bin/env python3
"""GPUMemNet CNN or MLP rows on a real GPU against the probe's prediction (docs/GPU-VALIDATION.md §6):
thousands of networks unlike the torchvision ones, each rebuilt from its row
(python/colo_probe/gpumemnet.py) and trained as the row's generator script did — the torchsummary
pass at batch 2, then Adam (foreach) with zero_grad(set_to_none=True) — the loop the probe records.

  python3 scripts/gpu-validate-gpumemnet.py measure --csv cnn.csv [--kind cnn|mlp] [--start S] --rows N --out measured.jsonl [--deadline-s S]
  /usr/bin/python3 scripts/gpu-validate-gpumemnet.py predict --csv cnn.csv [--kind cnn|mlp] --measured measured.jsonl \\
      --gpu h100-80gb --out predicted.jsonl [--colo build/colo]
  python3 scripts/gpu-validate-gpumemnet.py table measured.jsonl predicted.jsonl [--shapes conv-shapes.jsonl] [--families] [--allocated]

measure: N rows (from the START-th) in the order scripts/conv-shapes.py took them (shuffled with seed 13, so
docs/gpu-validation/conv-shapes.jsonl holds their convolutions), one after the other in one
process, three iterations each, max_memory_reserved/allocated after each; rows the rebuild refuses
are listed with the reason. predict: the same rows probed here (CPU) and replayed by `colo estimate --trace
--estimator trace --gpu PROFILE`. table: per-row errors, the median and the share under."""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
MIB = 1 << 20


def rows_in_order(csv_path, kind, n, start=0):
    from colo_probe import gpumemnet
    rows = gpumemnet.read_rows(csv_path, kind)
    random.Random(13).shuffle(rows)  # scripts/conv-shapes.py's order
    return rows[start:start + n]


def measure_row(torch, row):
    from colo_probe import gpumemnet
    try:
        module, _ = gpumemnet.rebuild(row)
        loss_fn = gpumemnet.loss_fn(row)
    except gpumemnet.RebuildError as e:
        return {"row": row.index, "status": "skipped", "reason": str(e)}
    shape = gpumemnet.input_shape(row)
    batch = row.hp["batch"]
    # Class labels as the generators drew them; a one-output MLP (BCE) takes 0/1 labels.
    classes = row.hp["num_classes"] if row.kind == "cnn" else max(row.hp["output"], 2)
    t0 = time.perf_counter()
    # What the previous row left: nothing but cuBLAS's workspaces (kept by its handle, as in a job
    # after its first matmul; the replay allocates them at the first matmul, in segments of their own).
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_reserved() / MIB
    model = module.to_empty(device="cuda").train()  # rebuilt on the meta device: values do not matter here
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], foreach=True)
    gpumemnet.summary_pass(row)(model)
    steps, live = [], {}
    for step in (1, 2, 3):
        live["batch"] = (torch.randn((batch,) + shape, device="cuda"),
                         torch.randint(0, classes, (batch,), device="cuda"))
        opt.zero_grad(set_to_none=True)
        live["output"] = model(live["batch"][0])
        live["loss"] = loss_fn(live["output"], live["batch"])
        live["loss"].backward()
        opt.step()
        torch.cuda.synchronize()
        steps.append({"step": step, "max_reserved_mib": round(torch.cuda.max_memory_reserved() / MIB, 1),
                      "max_allocated_mib": round(torch.cuda.max_memory_allocated() / MIB, 1)})
    return {"row": row.index, "filename": row.filename, "status": "ok", "a100_measured_mib": row.measured_mib,
            "reserved_before_mib": round(before, 1), "steps": steps, "max_reserved_mib": steps[-1]["max_reserved_mib"],
            "max_allocated_mib": steps[-1]["max_allocated_mib"], "seconds": round(time.perf_counter() - t0, 2)}


def cmd_measure(a):
    # One process for every row (a Python start-up per row would cost ~10 s with a CUDA build of
    # PyTorch): between rows the cache is emptied and the peaks reset, so each row starts from an
    # empty allocator except for cuBLAS's workspaces (reserved_before_mib says how much).
    import torch
    t_end = time.monotonic() + a.deadline_s
    torch.empty(1, device="cuda")
    with open(a.out, "w") as out:
        out.write(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                              "gpu": torch.cuda.get_device_name(0)}) + "\n")
        for row in rows_in_order(a.csv, a.kind, a.rows, a.start):
            if time.monotonic() > t_end:
                break
            if row.oom:
                rec = {"row": row.index, "status": "skipped", "reason": "out of memory on the A100 (no measured figure)"}
            else:
                try:
                    rec = measure_row(torch, row)
                except Exception as e:  # an out-of-memory or a failing row must not stop the others
                    rec = {"row": row.index, "status": "failed", "reason": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
                    torch.cuda.empty_cache()
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(row.index, rec.get("status"), rec.get("max_reserved_mib", rec.get("reason", "")), flush=True)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip().startswith("{")]


def table_keys(gpu):
    """The keys of the workspace table the profile names (empty when it names none)."""
    with open(os.path.join(ROOT, "calibration", gpu + ".json")) as f:
        name = json.load(f).get("conv_workspace_table")
    if not name:
        return set()
    with open(os.path.join(ROOT, "calibration", name)) as f:
        return {line.split("\t", 1)[0] for line in f if "\t" in line}


def unlisted_convs(trace, listed):
    """(convolutions, how many of them have a shape key the table does not list)"""
    convs = unlisted = 0
    with open(trace) as f:
        for line in f:
            if line.startswith("C "):
                p = line.split()
                convs += 1
                unlisted += len(p) < 7 or p[6] not in listed
    return convs, unlisted


def cmd_predict(a):
    from colo_probe import gpumemnet
    listed = table_keys(a.gpu)
    want = {r["row"] for r in load(a.measured) if r.get("status") == "ok"}
    rows = [r for r in gpumemnet.read_rows(a.csv, a.kind) if r.index in want]
    with tempfile.TemporaryDirectory() as d, open(a.out, "w") as out:
        for rec in gpumemnet.run_batch(rows, d):
            res = {"row": rec["row"]}
            if rec["status"] != "ok":
                res["error"] = rec.get("reason")
            else:
                res["convs"], res["convs_unlisted"] = unlisted_convs(os.path.join(d, rec["trace"]), listed)
                r = subprocess.run([a.colo, "estimate", "--trace", os.path.join(d, rec["trace"]), "--estimator", "trace",
                                    "--gpu", a.gpu, "--json"], capture_output=True, text=True)
                if r.returncode == 0:
                    res.update(json.loads(r.stdout))
                else:
                    res["error"] = r.stderr.strip()
            out.write(json.dumps(res) + "\n")


def cmd_table(a):
    measured = {r["row"]: r for r in load(a.measured) if r.get("status") == "ok"}
    sources = set()
    if a.shapes:  # the rows whose convolutions the table was measured for (conv-shapes.jsonl's sources)
        for r in load(a.shapes):
            sources |= {int(s.split(":")[1]) for s in r["sources"] if s.startswith("gpumemnet-cnn:")}
    groups = {"all rows": []}
    what = "allocated peak" if a.allocated else "reserved peak"

    def error(p, m):
        if not a.allocated:
            return (p["peak_mib"] - m["max_reserved_mib"]) / m["max_reserved_mib"] * 100
        # The replay's allocated peak is in its explanation ("... (allocated N, live tensors ...").
        got = re.search(r"\(allocated (\d+)", p.get("explanation", ""))
        return None if got is None else (float(got.group(1)) - m["max_allocated_mib"]) / m["max_allocated_mib"] * 100
    for p in load(a.predicted):
        m = measured.get(p["row"])
        e = None if m is None or "peak_mib" not in p else error(p, m)
        if e is None:
            continue
        groups["all rows"].append(e)
        if p.get("convs"):
            # Rows whose every convolution the table lists replay measured workspaces only; the others
            # are what a new network meets (their shapes were never measured).
            groups.setdefault("every conv in the table" if p.get("convs_unlisted") == 0
                              else "some conv not in the table", []).append(e)
        if a.shapes:
            groups.setdefault("rows the table was measured for" if p["row"] in sources
                              else "held out (not among the table's sources)", []).append(e)
    if not groups["all rows"]:
        sys.exit("gpu-validate-gpumemnet: no row has both a measurement and a prediction")
    if a.families:  # per architecture family (the generator's arch), of the held-out rows when known
        fam_of = {r: m["filename"].split("_arch:")[1].split("_")[0] for r, m in measured.items() if "_arch:" in m.get("filename", "")}
        for p in load(a.predicted):
            m = measured.get(p["row"])
            if m is None or "peak_mib" not in p or (a.shapes and p["row"] in sources):
                continue
            e = error(p, m)
            if e is not None:
                groups.setdefault(f"  {fam_of.get(p['row'], '?')}", []).append(e)
    for name, errs in groups.items():
        errs.sort()
        under = sum(e < 0 for e in errs)
        print(f"{name}: {len(errs)} rows: {what}, predicted vs measured: median |error| "
              f"{statistics.median(abs(e) for e in errs):.1f} %, median {statistics.median(errs):+.1f} %, "
              f"p10 {errs[len(errs) // 10]:+.1f} %, p90 {errs[len(errs) * 9 // 10]:+.1f} %, min {errs[0]:+.1f} %, "
              f"max {errs[-1]:+.1f} %; under: {under} ({under / len(errs) * 100:.0f} %), under by > 5 %: "
              f"{sum(e < -5 for e in errs)} ({sum(e < -5 for e in errs) / len(errs) * 100:.0f} %)")


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--csv", required=True)
    m.add_argument("--rows", type=int, default=300)
    m.add_argument("--kind", choices=("cnn", "mlp"), default="cnn")
    m.add_argument("--start", type=int, default=0, help="skip the first START rows of that order")
    m.add_argument("--out", required=True)
    m.add_argument("--deadline-s", type=float, default=300)
    p = sub.add_parser("predict")
    p.add_argument("--csv", required=True)
    p.add_argument("--measured", required=True)
    p.add_argument("--kind", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--gpu", default="h100-80gb")
    p.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    p.add_argument("--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("measured")
    t.add_argument("predicted")
    t.add_argument("--allocated", action="store_true", help="the allocated peak (max_memory_allocated) instead of the reserved one")
    t.add_argument("--families", action="store_true", help="also one line per architecture family (held-out rows with --shapes)")
    t.add_argument("--shapes", help="the table's conv-shapes.jsonl: also split the rows by whether they were its sources")
    a = ap.parse_args()
    {"measure": cmd_measure, "predict": cmd_predict, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
