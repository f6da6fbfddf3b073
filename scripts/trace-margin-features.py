#!/usr/bin/env python3
"""Could a per-network margin, predicted from what the probe's trace shows, meet issue 13's
GPUMemNet CNN goal (median |error| <= 8 %, <= 5 % of rows under) where one constant margin cannot?
(docs/ESTIMATION.md, "A margin per network from its trace"). Fits a linear quantile regression of
log(measured / replay) on trace features over the train split, for each quantile TAU, and scores
it on the held-out test split (rows no fit saw). `--nearest K` adds a margin with no fitted weights:
each network's tau-quantile of the same log ratio over its K nearest train networks (`--select`
chooses K and the features on the train rows alone, leave-one-out). Needs numpy (Debian: python3-numpy, which
python3-torch brings).

    /usr/bin/python3 scripts/trace-margin-features.py [TRACE_DIR] [--colo build/colo] [--taus 0.9,0.95]
        [--nearest 10,20,40 [--nearest-features in,out,channels,convs,peak] [--select]]

TRACE_DIR holds the probe's traces of data/gpumemnet/cnn.csv (scripts/trace-calibrate.sh writes
them; or `python3 -m colo_probe.gpumemnet --csv data/gpumemnet/cnn.csv --kind cnn --out-dir DIR`).
The replay is `colo estimate eval --estimator trace` with the profile's convolution workspaces
but no margin and no context offset; the regression then supplies the margin on its reserved peak
(estimate = context + peak × e^(x·w), as the trace estimator's constant margin does)."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

FEATURES = ("constant", "largest conv input / peak", "largest conv output / peak",
            "forward conv outputs / peak", "largest conv weight / peak", "cuDNN batch norm",
            "most channels", "strided conv", "convolutions", "peak MiB")
# --nearest-features names the columns of FEATURES after the constant.
SHORT = ("in", "out", "outputs", "weight", "bn", "channels", "strided", "convs", "peak")


def trace_features(path):
    """Convolution figures of the last training step (the trace's section after its first "S"
    line: the summary pass and step 1 come before), and whether cuDNN batch norm ran."""
    largest_in = largest_out = outputs = largest_w = 0
    channels = convs = strided = 0
    batch_norm = False
    step = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("S "):
                step += 1
            elif line.startswith("M ") and "batch_norm" in line:
                batch_norm = True
            elif line.startswith("C ") and step == 1:
                fields = line.split()
                # "C phase op in_bytes out_bytes strided key" (estimate/trace/probe_trace.cpp); the
                # key f:N×C×H×W:O×I×KH×KW:sS×S:… names the shapes.
                if len(fields) != 7 or not (fields[3].isdigit() and fields[4].isdigit()):
                    raise ValueError(f"{path}:{n}: not a convolution record with byte counts and a shape key")
                parts = fields[6].split(":")
                try:
                    x = [int(v) for v in parts[1].split("x")]
                    w = [int(v) for v in parts[2].split("x")]
                    s = [int(v) for v in parts[3].lstrip("s").split("x")]
                except (IndexError, ValueError):
                    raise ValueError(f"{path}:{n}: convolution key {fields[6][:64]!r} is not f:N×C×…:O×I×…:s…") from None
                if fields[1] == "forward":
                    convs += 1
                    outputs += int(fields[4])
                largest_in = max(largest_in, int(fields[3]))
                largest_out = max(largest_out, int(fields[4]))
                largest_w = max(largest_w, math.prod(w) * 4)
                channels = max(channels, x[1] if len(x) > 1 else 0, w[0])
                strided = strided or any(v > 1 for v in s)
    if step < 1:
        raise ValueError(f"{path}: no step marker (\"S 1\"): not a probe trace of a training run")
    return dict(largest_in=largest_in, largest_out=largest_out, outputs=outputs, largest_w=largest_w,
                batch_norm=batch_norm, channels=channels, strided=strided, convs=convs)


def row_vector(f, peak_mib):
    mib = 2.0 ** 20
    rel = lambda b: math.log(max(b / mib, 1e-3) / peak_mib)  # noqa: E731
    return [1.0, rel(f["largest_in"]), rel(f["largest_out"]), rel(f["outputs"]), rel(f["largest_w"]),
            float(f["batch_norm"]), math.log(f["channels"] + 1), float(f["strided"]), math.log(f["convs"] + 1),
            math.log(peak_mib)]


def quantile_fit(np, x, y, tau, rounds=200):
    """Linear quantile regression by iteratively reweighted least squares (each residual weighted
    tau or 1 - tau over its size), started from least squares."""
    w = np.linalg.lstsq(x, y, rcond=None)[0]
    for _ in range(rounds):
        r = y - x @ w
        weight = np.where(r > 0, tau, 1 - tau) / np.maximum(np.abs(r), 1e-4)
        xw = x * weight[:, None]
        w_next = np.linalg.solve(x.T @ xw + 1e-9 * np.eye(x.shape[1]), xw.T @ y)
        if np.max(np.abs(w_next - w)) < 1e-9:
            return w_next
        w = w_next
    return w


def nearest_margins(np, x_fit, y_fit, x_query, k, taus, leave_one_out=False):
    """{tau: log margin of each query row}: the tau-quantile of log(measured / replay) over the k
    fitted rows nearest to it (features scaled by the fitted rows' spread). It never extrapolates:
    a network outside the fitted rows' range gets the margins of the nearest ones. With
    leave_one_out the query rows are the fitted rows and each is left out of its own neighbours."""
    mean, sd = x_fit.mean(axis=0), x_fit.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    a, b = (x_fit - mean) / sd, (x_query - mean) / sd
    dist = (b * b).sum(1)[:, None] - 2 * b @ a.T + (a * a).sum(1)[None, :]
    if leave_one_out:
        np.fill_diagonal(dist, np.inf)
    near = y_fit[np.argsort(dist, axis=1, kind="stable")[:, :k]]
    return {tau: np.quantile(near, tau, axis=1) for tau in taus}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    head, _, rest = __doc__.partition("\n\n")
    ap = argparse.ArgumentParser(description=head, epilog=rest, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="?", default="/tmp/colo-gmn-traces/cnn", metavar="TRACE_DIR")
    ap.add_argument("--colo", default=os.path.join(root, "build", "colo"))
    ap.add_argument("--carma", default="/tmp/colo-carma-traces", metavar="DIR",
                    help="the carma workloads' traces (colo estimate eval --keep-traces DIR; recorded here when DIR has none)")
    ap.add_argument("--bootstrap", type=int, default=5, metavar="N",
                    help="refits on N resamples of the train rows, for the spread of the carma errors (default 5, 0..100)")
    ap.add_argument("--clamp", action="store_true",
                    help="hold each scored row's features to the range of the rows its fit saw (no extrapolation)")
    ap.add_argument("--taus", default="0.85,0.9,0.93,0.95,0.97",
                    help="quantiles to fit, each in (0, 1) (default 0.85,0.9,0.93,0.95,0.97)")
    ap.add_argument("--nearest", default="", metavar="K,...",
                    help="also score the nearest-networks margin (each row's tau-quantile over its K nearest train "
                         "rows) for each K, 1..200; its train columns are leave-one-out")
    ap.add_argument("--nearest-features", default=None, metavar="NAMES",
                    help=f"the features it measures nearness by, of {','.join(SHORT)} (default in,out,channels,convs,peak; "
                         "not with --select, which chooses them)")
    ap.add_argument("--select", action="store_true",
                    help="with --nearest: instead, rank every set of up to five features by its leave-one-out train "
                         "median |error| among those with at most 5 %% of the train rows under (no test or carma row used)")
    a = ap.parse_args()
    taus = []
    for t in a.taus.split(","):
        try:
            v = float(t)
        except ValueError:
            v = math.nan
        if not 0 < v < 1:
            ap.error(f"--taus: '{t}' is not a quantile in (0, 1)")
        taus.append(v)
    if not 0 <= a.bootstrap <= 100:
        ap.error(f"--bootstrap {a.bootstrap}: expected 0..100")
    ks = script_errors.int_list("trace-margin-features", "--nearest", a.nearest) if a.nearest else []
    if any(not 1 <= k <= 200 for k in ks):
        ap.error(f"--nearest {a.nearest}: each K must be 1..200")
    if a.select and a.nearest_features is not None:
        ap.error("--select chooses the features itself: --nearest-features would be ignored")
    if a.nearest_features is None:
        a.nearest_features = "in,out,channels,convs,peak"
    near_cols = []
    for n in script_errors.name_list("trace-margin-features", "--nearest-features", a.nearest_features):
        if n not in SHORT:
            ap.error(f"--nearest-features: '{n}' is not one of {','.join(SHORT)}")
        near_cols.append(1 + SHORT.index(n))
    if a.select and not ks:
        ap.error("--select ranks nearest-networks margins: give --nearest K,...")
    try:
        import numpy as np
    except ImportError:
        sys.exit(f"trace-margin-features: {sys.executable} has no numpy (Debian's /usr/bin/python3 with python3-numpy has)")
    script_errors.need_program("trace-margin-features", a.colo)
    index_path = os.path.join(a.traces, "index.jsonl")
    if not os.path.exists(index_path):
        sys.exit(f"trace-margin-features: no {index_path} (record the traces first: see --help)")

    def replay(cal, split, margin, dataset, fmt, traces):
        """{row id: eval row} of the replay with workspaces, no context offset and this margin."""
        with open(os.path.join(root, "calibration", "a100-40gb.json")) as f:
            profile = json.load(f)
        profile.update(trace_safety_margin=margin, trace_cudnn_safety_margin=margin, trace_context_offset_mib=0.0,
                       trace_cudnn_context_offset_mib=0.0)
        with open(os.path.join(cal, "workspaces-only.json"), "w") as f:
            json.dump(profile, f)
        out = subprocess.run([a.colo, "estimate", "eval", "--dataset", os.path.join(root, dataset), "--format", fmt,
                              "--estimator", "trace", "--traces", traces, "--split", split, "--gpu", "workspaces-only",
                              "--rows", "--json"],
                             env=dict(os.environ, COLO_CALIBRATION_DIR=cal), capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"trace-margin-features: colo estimate eval {fmt} --split {split}: {' '.join(out.stderr.split())}")
        return {r["id"]: r for r in script_errors.colo_json(out.args, out.stdout)["rows"]}

    def rows_of(split, dataset, fmt, traces, index, cnn_only):
        """Feature rows, log-ratio targets (nan where the measurement leaves no peak beside the
        context) and (peak, context, measured) of every estimated row."""
        with tempfile.TemporaryDirectory() as cal:
            # Margin 0 gives peak + context, margin 1 gives 2 × peak + context: the two apart.
            plain, doubled = replay(cal, split, 0.0, dataset, fmt, traces), replay(cal, split, 1.0, dataset, fmt, traces)
        xs, ys, cs, ids = [], [], [], []
        for rid, r in plain.items():
            j = index.get(rid)
            if r.get("oom") or not r.get("estimate_mib") or not j or j.get("status") != "ok":
                continue
            peak = doubled[rid]["estimate_mib"] - r["estimate_mib"]
            context = r["estimate_mib"] - peak
            f = trace_features(os.path.join(traces, j["trace"]))
            if peak <= 0 or (cnn_only and f["convs"] == 0):
                continue
            xs.append(row_vector(f, peak))
            ys.append(math.log((r["measured_mib"] - context) / peak) if r["measured_mib"] > context else math.nan)
            cs.append((peak, context, r["measured_mib"]))
            ids.append(rid)
        return np.array(xs), np.array(ys), np.array(cs), ids

    gmn = script_errors.read_trace_index(index_path)
    carma_index = os.path.join(a.carma, "index.jsonl")
    if not os.path.exists(carma_index):
        print(f"trace-margin-features: probing the carma workloads into {a.carma} (a few minutes)", file=sys.stderr)
        r = subprocess.run([a.colo, "estimate", "eval", "--dataset", os.path.join(root, "data/carma/workloads.csv"),
                            "--format", "carma-workloads", "--estimator", "trace", "--keep-traces", a.carma],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"trace-margin-features: recording the carma traces: {' '.join(r.stderr.split())}")
    data = {split: rows_of(split, "data/gpumemnet/cnn.csv", "gpumemnet-cnn", a.traces, gmn, False)
            for split in ("train", "test")}
    for split, (x, _, _, _) in data.items():
        if len(x) <= len(FEATURES):
            sys.exit(f"trace-margin-features: {len(x)} {split} rows with traces: too few to fit (is {a.traces} "
                     "the GPUMemNet CNN set?)")
    carma = rows_of("all", "data/carma/workloads.csv", "carma-workloads", a.carma, script_errors.read_trace_index(carma_index), True)

    xt, yt, ct, _ = data["train"]
    low, high = xt.min(axis=0), xt.max(axis=0)  # --clamp: the train rows' range of each feature

    def rel_errors(c, log_margin):
        """(estimate - measured) / measured of rows (peak, context, measured) at these log margins."""
        return (c[:, 1] + c[:, 0] * np.exp(log_margin)) / c[:, 2] - 1

    def errors(x, c, w):
        if a.clamp:
            x = np.clip(x, low[:x.shape[1]], high[:x.shape[1]]) if x.shape[1] > 1 else x
        return rel_errors(c, x @ w)

    def fit(x, y, tau):
        keep = ~np.isnan(y)
        return quantile_fit(np, x[keep], y[keep], tau)

    xs, _, cs, _ = data["test"]
    xc, _, cc, cid = carma
    big = [cid.index(rid) for rid in ("resnet3", "vgg3", "Inception3") if rid in cid]
    if not a.select:
        print(f"GPUMemNet CNN rows: {len(yt)} train, {len(xs)} test; carma CNN rows: {len(xc)}; the replay with the "
              f"profile's workspaces, its margin fitted per quantile TAU; {a.bootstrap} bootstrap refits of the train rows")
        print(f"{'margin':<9} {'tau':>4}  {'train med/under':>15}  {'test med/under/>5%':>19}  {'carma med/>5% under':>19}"
              f"  {'bootstrap: carma med, resnet3, vgg3, Inception3 (min..max %)':>60}")
    rng = np.random.default_rng(1)
    draws = [rng.integers(0, len(yt), len(yt)) for _ in range(a.bootstrap)]
    for name, cols in (() if a.select else (("constant", [0]), ("features", list(range(len(FEATURES)))))):
        for tau in taus:
            w = fit(xt[:, cols], yt, tau)
            et, es, ec = errors(xt[:, cols], ct, w), errors(xs[:, cols], cs, w), errors(xc[:, cols], cc, w)
            spread = []
            for d in draws:
                eb = errors(xc[:, cols], cc, fit(xt[d][:, cols], yt[d], tau))
                spread.append([100 * float(np.median(np.abs(eb)))] + [100 * float(eb[i]) for i in big])
            rng_text = ", ".join(f"{min(v):+.0f}..{max(v):+.0f}" if k else f"{min(v):.1f}..{max(v):.1f}"
                                 for k, v in enumerate(zip(*spread))) if spread else "-"
            print(f"{name:<9} {tau:>4.2f}  {100 * np.median(np.abs(et)):>5.1f} / {100 * np.mean(et < 0):>4.1f} %"
                  f"  {100 * np.median(np.abs(es)):>5.1f} / {100 * np.mean(es < 0):>4.1f} % / {int(np.sum(es < -0.05)):>3}"
                  f"  {100 * np.median(np.abs(ec)):>8.1f} % / {int(np.sum(ec < -0.05)):>3}  {rng_text:>60}")
    yk = ~np.isnan(yt)
    xn, yn, cn = xt[yk], yt[yk], ct[yk]  # rows with a measured need beside the context: the neighbours
    for k in ks:
        if k > len(yn) - 1:
            sys.exit(f"trace-margin-features: --nearest {k}: only {len(yn)} train rows with a measurement")

    def near_errors(rows, c, cols, k, fit_rows=None):
        xf, yf = (xn, yn) if fit_rows is None else (xn[fit_rows], yn[fit_rows])
        m = nearest_margins(np, xf[:, cols], yf, rows[:, cols], k, taus)
        return {tau: rel_errors(c, v) for tau, v in m.items()}

    if a.select:
        import itertools
        found = []
        for size in range(1, 6):
            for cols in itertools.combinations(range(1, len(FEATURES)), size):
                for k in ks:
                    loo = nearest_margins(np, xn[:, list(cols)], yn, xn[:, list(cols)], k, taus, leave_one_out=True)
                    for tau, v in loo.items():
                        e = rel_errors(cn, v)
                        if np.mean(e < 0) <= 0.05:
                            found.append((float(np.median(np.abs(e))), float(np.mean(e < 0)), cols, k, tau))
        found.sort(key=lambda f: f[0])
        print(f"nearest-networks margins with <= 5 % of the {len(yn)} train rows under (leave-one-out), best first:")
        for med, under, cols, k, tau in found[:10]:
            print(f"  {','.join(SHORT[c - 1] for c in cols):<36} K {k:>3}  tau {tau:.2f}  train {100 * med:.1f} / {100 * under:.1f} %")
        if not found:
            print("  none")
        return
    for k in ks:
        loo = nearest_margins(np, xn[:, near_cols], yn, xn[:, near_cols], k, taus, leave_one_out=True)
        es, ec = near_errors(xs, cs, near_cols, k), near_errors(xc, cc, near_cols, k)
        boot = [near_errors(xc, cc, near_cols, k, fit_rows=rng.integers(0, len(yn), len(yn)))
                for _ in range(a.bootstrap)]
        for tau in taus:
            el = rel_errors(cn, loo[tau])
            spread = [[100 * float(np.median(np.abs(b[tau])))] + [100 * float(b[tau][i]) for i in big] for b in boot]
            rng_text = ", ".join(f"{min(v):+.0f}..{max(v):+.0f}" if j else f"{min(v):.1f}..{max(v):.1f}"
                                 for j, v in enumerate(zip(*spread))) if spread else "-"
            name = f"nearest{k}"
            print(f"{name:<9} {tau:>4.2f}  {100 * np.median(np.abs(el)):>5.1f} / {100 * np.mean(el < 0):>4.1f} %"
                  f"  {100 * np.median(np.abs(es[tau])):>5.1f} / {100 * np.mean(es[tau] < 0):>4.1f} % / "
                  f"{int(np.sum(es[tau] < -0.05)):>3}  {100 * np.median(np.abs(ec[tau])):>8.1f} % / "
                  f"{int(np.sum(ec[tau] < -0.05)):>3}  {rng_text:>60}")
    print("features: " + ", ".join(FEATURES) + " (logs of the ratios and counts)")
    if ks:
        print(f"nearest K: the tau-quantile over the K nearest train rows by {a.nearest_features} (train columns "
              "leave-one-out); carma rows, each signed % (estimate - measured) / measured:")
        for k in ks:
            ec = near_errors(xc, cc, near_cols, k)
            for tau in taus:
                print(f"  nearest{k} {tau:.2f}: " + ", ".join(f"{rid} {100 * float(ec[tau][i]):+.1f}"
                                                             for i, rid in enumerate(cid)))

if __name__ == "__main__":
    script_errors.run(main, "trace-margin-features")
