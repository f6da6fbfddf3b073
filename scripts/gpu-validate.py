#!/usr/bin/env python3
"""Measure real GPU memory of training configurations and set it beside colo's probe (docs/GPU-VALIDATION.md).

    # on a machine with a GPU (PyTorch 1.13 or 2.x): one fresh process per configuration
    python3 scripts/gpu-validate.py measure --configs scripts/gpu-validate.configs --out measured.jsonl
    # anywhere with colo built: colo's prediction for the same configurations
    python3 scripts/gpu-validate.py predict --configs scripts/gpu-validate.configs --colo build/colo --out predicted.jsonl
    # from traces the probe recorded elsewhere (python3 -m colo_probe ... --out DIR/NAME.trace)
    python3 scripts/gpu-validate.py predict --configs ... --colo build/colo --traces DIR --out predicted-2x.jsonl
    # the probe on this machine's PyTorch, for predict --traces
    python3 scripts/gpu-validate.py trace --configs scripts/gpu-validate.configs --dir DIR
    # the table
    python3 scripts/gpu-validate.py table measured.jsonl predicted.jsonl [predicted-2x.jsonl]
    # a profile's trace margins by its rule (none of the measured configurations under nvidia-smi)
    python3 scripts/gpu-validate.py margins --gpu h100-80gb --measured m1.jsonl m2.jsonl --predicted p1.jsonl p2.jsonl

A configuration line is a name and `colo estimate --probe` flags, e.g.
    r50-adam  --probe torchvision:resnet50 --input 3x224x224 --batch 128 --optimizer adam
The measurement runs the loop colo's probe records (python/colo_probe/train.py): batch to the GPU,
zero_grad(set_to_none=True), forward under autocast when --amp, the loss (cross-entropy of every logits
tensor, Inception's auxiliary at 0.4; a model file's loss_fn), backward (GradScaler for fp16), step;
the previous output and loss stay alive until the next forward replaces them. It records
torch.cuda.max_memory_reserved / max_memory_allocated after steps 2 and 3, the CUDA context
(nvidia-smi before the model is loaded), and nvidia-smi's view of the process after step 3."""
import argparse
import importlib.util
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20
DEVICE = ["cuda"]  # measure --cpu-check: the same loop on the CPU at batch 2 (checks this script, measures nothing)


def read_configs(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                words = shlex.split(line)
            except ValueError as e:
                raise ValueError(f"{path}:{n}: {e}") from None
            env, flags = split_env(words[1:])
            if len(words) < 3 or not flags or not flags[0].startswith("--"):
                raise ValueError(f"{path}:{n}: expected a name, optional NAME=VALUE environment settings, then colo "
                                 "estimate --probe flags")
            try:  # the flags are checked now, not when their configuration's turn comes on the GPU
                parse_flags(flags)
            except ValueError as e:
                raise ValueError(f"{path}:{n}: {words[0]}: {e}") from None
            out.append((words[0], words[1:]))
    if not out:
        raise ValueError(f"{path}: no configurations")
    return out


def split_env(words):
    """Leading NAME=VALUE words (e.g. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) are the
    configuration's environment, for the measured run and for the probe alike; the rest are flags."""
    env = {}
    i = 0
    while i < len(words) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[i]):
        k, v = words[i].split("=", 1)
        env[k] = v
        i += 1
    return env, words[i:]


def with_env(words):
    return dict(os.environ, **split_env(words)[0])


class _FlagParser(argparse.ArgumentParser):
    """argparse that raises ValueError with its one-line message instead of printing its usage."""

    def error(self, message):
        raise ValueError(message)


def parse_flags(words):
    p = _FlagParser(prog="configuration", add_help=False)
    p.add_argument("--probe", required=True)
    p.add_argument("--input")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--num-classes", type=int)
    p.add_argument("--amp", default="none", choices=("none", "fp16", "bf16"))
    p.add_argument("--checkpointing", action="store_true")
    p.add_argument("--foreach", default="auto", choices=("auto", "on", "off"))
    return p.parse_args(words)


# ---------------------------------------------------------------------------------------------
# measure: runs on the GPU

def nvidia_smi(query, fields):
    try:
        r = subprocess.run(["nvidia-smi", f"--query-{query}={fields}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [[c.strip() for c in line.split(",")] for line in r.stdout.splitlines() if line.strip()]


def smi_used_mib():
    rows = nvidia_smi("gpu", "memory.used")
    return int(rows[0][0]) if rows else None


def smi_process_mib(pid):
    for row in nvidia_smi("compute-apps", "pid,used_memory"):
        if len(row) == 2 and row[0] == str(pid) and row[1].isdigit():
            return int(row[1])
    return None


def to_cuda(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.to(DEVICE[0])
    if isinstance(x, dict):
        return {k: to_cuda(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_cuda(v) for v in x)
    return x


def build(cfg):
    """The module, its batch maker and loss, built for real (colo_probe builds them on meta)."""
    import torch
    import torch.nn.functional as F
    spec = cfg.probe
    shape = tuple(int(d) for d in cfg.input.lower().split("x")) if cfg.input else None
    if spec.startswith("torchvision:"):
        import torchvision.models as tvm
        name = spec.split(":", 1)[1]
        kw = {"num_classes": cfg.num_classes} if cfg.num_classes else {}
        if name.startswith("inception"):
            kw["init_weights"] = False
        module = getattr(tvm, name)(**kw)
        shape = shape or ((3, 299, 299) if name.startswith("inception") else (3, 224, 224))
        classes = cfg.num_classes or 1000

        def input_fn(n):
            return (torch.randn((n,) + shape), torch.randint(0, classes, (n,)))
        loss_fn = None
        user_input = False
    else:
        path, fn_name = spec.rsplit(":", 1)
        path = path if os.path.isabs(path) else os.path.join(ROOT, path)
        ms = importlib.util.spec_from_file_location("gpu_validate_model", path)
        user = importlib.util.module_from_spec(ms)
        sys.path.insert(0, os.path.dirname(path))
        ms.loader.exec_module(user)
        module = getattr(user, fn_name)()
        input_fn = (lambda n, _f=user.input_fn: _f(n, shape))
        loss_fn = getattr(user, "loss_fn", None)
        user_input = True

    def default_loss(output, batch):
        logits = [output] if isinstance(output, torch.Tensor) else [t for t in output if isinstance(t, torch.Tensor)]
        loss = None
        for t in logits:
            flat = t.reshape(-1, t.shape[-1])
            term = F.cross_entropy(flat, batch[1])
            loss = term if loss is None else loss + 0.4 * term
        return loss
    return module, input_fn, loss_fn or default_loss, user_input


def make_optimizer(name, params, foreach):
    import torch
    kw = {} if foreach is None else {"foreach": foreach}
    table = {"sgd": (torch.optim.SGD, {"lr": 0.1}), "sgd-momentum": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
             "adam": (torch.optim.Adam, {}), "adamw": (torch.optim.AdamW, {}), "rmsprop": (torch.optim.RMSprop, {}),
             "adagrad": (torch.optim.Adagrad, {}), "adadelta": (torch.optim.Adadelta, {})}
    ctor, args = table[name]
    return ctor(params, **args, **kw)


def checkpoint_children(model):
    """As the probe's --checkpointing: each top-level child with parameters recomputed in backward."""
    import torch.utils.checkpoint as cp
    for child in model.children():
        if any(True for _ in child.parameters()):
            orig = child.forward
            child.forward = (lambda *a, _o=orig, **k: cp.checkpoint(_o, *a, use_reentrant=False, **k))


def reduced_history(torch):
    """The memory history as [action, bytes, block] (alloc / free / segment_alloc / segment_free;
    block: a small integer naming the address), the form scripts/gpu-conv-workspace.py writes."""
    keep = {"alloc": "alloc", "free_completed": "free", "segment_alloc": "segment_alloc", "segment_free": "segment_free"}
    blocks, events = {}, []
    for e in torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]:
        if e["action"] in keep:
            events.append([keep[e["action"]], e["size"], blocks.setdefault(e["addr"], len(blocks))])
    return events


def measure_one(name, words, snapshot_dir=None):
    import torch
    cfg = parse_flags(split_env(words)[1])
    pid = os.getpid()
    gpu = DEVICE[0] == "cuda"
    if gpu:
        before = smi_used_mib()
        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        context = smi_process_mib(pid)
        if snapshot_dir:  # every allocation of the run, in order (sizes only: no stacks)
            torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2000000)
    else:
        cfg.batch = 2
        # A check of the loop, not a measurement: the same weights and batches every run (unseeded,
        # three Adam steps of a random network on two random samples gave a NaN loss now and then).
        torch.manual_seed(0)
    t0 = time.perf_counter()
    module, input_fn, loss_fn, user_input = build(cfg)
    model = module.to(DEVICE[0]).train()
    if cfg.checkpointing:
        checkpoint_children(model)
    foreach = {"auto": None, "on": True, "off": False}[cfg.foreach]
    opt = make_optimizer(cfg.optimizer, [p for p in model.parameters() if p.requires_grad], foreach)
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.amp)
    scaler = None
    if cfg.amp == "fp16" and gpu:
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler") \
            else torch.cuda.amp.GradScaler()
    live = {}
    per_step = []
    for step in (1, 2, 3):
        with torch.no_grad():
            host = input_fn(cfg.batch)
        live["batch"] = to_cuda(host)
        del host
        opt.zero_grad(set_to_none=True)
        ctx = torch.autocast(DEVICE[0], dtype=amp_dtype if gpu else torch.bfloat16) if amp_dtype else torch.enable_grad()
        with ctx:
            b = live["batch"]
            if not user_input:
                live["output"] = model(b[0])
            elif isinstance(b, dict):
                live["output"] = model(**b)
            else:
                live["output"] = model(*b)
            live["loss"] = loss_fn(live["output"], b)
        (scaler.scale(live["loss"]) if scaler else live["loss"]).backward()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        if not gpu:
            continue
        torch.cuda.synchronize()
        per_step.append({"step": step, "max_reserved_mib": round(torch.cuda.max_memory_reserved() / MIB, 1),
                         "max_allocated_mib": round(torch.cuda.max_memory_allocated() / MIB, 1)})
        if snapshot_dir:
            per_step[-1]["history_events"] = len(reduced_history(torch))
    if gpu and snapshot_dir:
        import gzip
        with gzip.open(os.path.join(snapshot_dir, name + ".history.json.gz"), "wt") as f:
            json.dump(reduced_history(torch), f)
    if not gpu:
        return {"name": name, "flags": " ".join(words), "cpu_check": "ok", "loss": float(live["loss"].detach().float())}
    return {"name": name, "flags": " ".join(words), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0), "cudnn": torch.backends.cudnn.version(),
            "steps": per_step, "max_reserved_mib_2": per_step[1]["max_reserved_mib"],
            "max_reserved_mib": per_step[2]["max_reserved_mib"], "max_allocated_mib": per_step[2]["max_allocated_mib"],
            "context_mib": context, "smi_process_mib": smi_process_mib(pid),
            "smi_used_delta_mib": (smi_used_mib() - before) if before is not None else None,
            "seconds": round(time.perf_counter() - t0, 2)}


def cmd_measure(a):
    if a.cpu_check:
        DEVICE[0] = "cpu"
    if a.one is not None:  # the child: one configuration, one JSON line on stdout
        name, words = read_configs(a.configs)[a.one]
        print(json.dumps(measure_one(name, words, a.snapshot_dir)), flush=True)
        return
    with open(a.out, "a", encoding="utf-8") as out:
        for i, (name, words) in enumerate(read_configs(a.configs)):
            if a.only and name not in a.only:
                continue
            try:
                r = subprocess.run([sys.executable, os.path.abspath(__file__), "measure", "--configs", a.configs,
                                    "--one", str(i)] + (["--cpu-check"] if a.cpu_check else [])
                                   + (["--snapshot-dir", a.snapshot_dir] if a.snapshot_dir else []),
                                   capture_output=True, text=True, timeout=a.timeout, env=with_env(words))
            except subprocess.TimeoutExpired:
                r = subprocess.CompletedProcess([], 124, "", f"timed out after {a.timeout:g} s")
            lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
            if r.returncode == 0 and lines:
                rec = json.loads(lines[-1])
            else:
                rec = {"name": name, "flags": " ".join(words), "error": (r.stderr.strip().splitlines() or ["?"])[-1]}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(name, rec.get("max_reserved_mib"), rec.get("smi_process_mib"), rec.get("error", ""), flush=True)


# ---------------------------------------------------------------------------------------------
# predict: colo estimate on the same configurations

def cmd_predict(a):
    with open(a.out, "w", encoding="utf-8") as out:
        for name, words in read_configs(a.configs):
            if a.traces:
                cmd = [a.colo, "estimate", "--trace", os.path.join(a.traces, name + ".trace"), "--estimator", "trace", "--json"]
            else:
                cmd = [a.colo, "estimate"] + split_env(words)[1] + ["--estimator", "trace", "--json"]
            cmd += ["--gpu", a.gpu]
            r = subprocess.run(cmd, capture_output=True, text=True, env=with_env(words))
            rec = {"name": name}
            if r.returncode == 0:
                rec.update(json.loads(r.stdout))
            else:
                rec["error"] = r.stderr.strip()
            out.write(json.dumps(rec) + "\n")
            print(name, rec.get("peak_mib"), rec.get("estimate_mib"), rec.get("error", ""), flush=True)


def run_probe(words, out, timeout):
    """The probe (python -m colo_probe) on one configuration, its trace written to `out`."""
    env = dict(with_env(words), PYTHONPATH=os.path.join(ROOT, "python"))
    args = ["--model" if w == "--probe" else w for w in split_env(words)[1]]
    return subprocess.run([sys.executable, "-m", "colo_probe", "--out", out] + args,
                          capture_output=True, text=True, env=env, timeout=timeout)


def cmd_trace(a):
    """The probe itself on this machine's PyTorch (e.g. 2.x beside a GPU): DIR/NAME.trace per configuration."""
    os.makedirs(a.dir, exist_ok=True)
    for name, words in read_configs(a.configs):
        t0 = time.perf_counter()
        try:
            r = run_probe(words, os.path.join(a.dir, name + ".trace"), a.timeout)
        except subprocess.TimeoutExpired:
            r = subprocess.CompletedProcess([], 124, "", f"timed out after {a.timeout:g} s")
        print(name, "ok" if r.returncode == 0 else "FAILED " + r.stderr.strip()[-400:],
              f"{time.perf_counter() - t0:.1f} s", flush=True)


# ---------------------------------------------------------------------------------------------
# table

def load(path):
    with open(path, encoding="utf-8") as f:
        out = {}
        for n, l in enumerate(f, 1):
            if not l.strip():
                continue
            try:
                r = json.loads(l)
                out[r["name"]] = r
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a record of this script ({e})") from None
        return out


def pct(pred, real):
    return f"{100.0 * (pred - real) / real:+.1f} %"


def predicted_allocated(r):
    """The replay's allocated MiB at its reserved peak, from the trace estimator's explanation."""
    m = re.search(r"\(allocated (\d+), live tensors", r.get("explanation", ""))
    return float(m.group(1)) if m else None


def cmd_table(a):
    """Markdown: allocated and reserved peaks, measured vs the first prediction file (plus the reserved
    peak of any further ones), and nvidia-smi vs colo's estimate."""
    measured = load(a.measured)
    preds = [load(p) for p in a.predicted]
    head = ["config", "allocated: measured", "predicted", "error", "reserved: measured", "predicted", "error"]
    for p in a.predicted[1:]:
        head += [f"reserved ({os.path.basename(p)})", "error"]
    head += ["nvidia-smi", "estimate", "error"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, m in measured.items():
        if "error" in m:
            print(f"| {name} | failed: {m['error']} |" + " |" * (len(head) - 2))
            continue
        first = preds[0].get(name, {})
        row = [name, f"{m['max_allocated_mib']:.0f}"]
        alloc = predicted_allocated(first)
        row += [f"{alloc:.0f}", pct(alloc, m["max_allocated_mib"])] if alloc is not None else ["?", ""]
        row.append(f"{m['max_reserved_mib']:.0f}")
        for p in preds:
            r = p.get(name, {})
            row += [f"{r['peak_mib']:.0f}", pct(r["peak_mib"], m["max_reserved_mib"])] if "peak_mib" in r \
                else ["failed", r.get("error", "missing")[:80]]
        smi = m.get("smi_process_mib")
        est = first.get("estimate_mib")
        row += [str(smi), str(est), pct(est, smi) if smi and est else ""]
        print("| " + " | ".join(row) + " |")


# ---------------------------------------------------------------------------------------------
# margins: the trace margins of a calibration profile, by its rule

def replay_context(r, where):
    """The context MiB the estimate of one predicted record was made with, from its explanation."""
    m = re.search(r"x \(1 \+ margin [0-9.]+\) \+ context ([0-9.]+) MiB", r.get("explanation", ""))
    if not m:
        raise ValueError(f"{where}: '{r.get('name')}' has no replayed estimate ({r.get('error', 'no explanation')})")
    return float(m.group(1))


def cmd_margins(a):
    """The smallest trace margins on a grid of --step that leave no measured configuration's estimate
    under its nvidia-smi memory: one for jobs that load cuDNN, one for those that do not (they differ
    in context, which tells them apart), as ceil(peak x (1 + margin) + context), the trace estimator's
    sum. Which configurations: those of the measured files that the predicted files also hold."""
    with open(os.path.join(ROOT, "calibration", a.gpu + ".json"), encoding="utf-8") as f:
        profile = json.load(f)
    plain = profile["context_mib"] + profile.get("trace_context_offset_mib", 0.0)
    cudnn = profile["context_mib"] + profile.get("cudnn_context_mib", 0.0) + profile.get("trace_cudnn_context_offset_mib", 0.0)
    if plain == cudnn:
        raise ValueError(f"calibration/{a.gpu}.json: the two contexts are equal ({plain:g} MiB): cannot tell the cuDNN jobs apart")
    predicted = {}
    for path in a.predicted:
        predicted.update(load(path))
    groups = {"trace_safety_margin": [], "trace_cudnn_safety_margin": []}
    for path in a.measured:
        for name, m in load(path).items():
            if "error" in m or not m.get("smi_process_mib") or name not in predicted:
                continue
            context = replay_context(predicted[name], path)
            if not predicted[name].get("peak_mib", 0) > 0:
                raise ValueError(f"{name}: the predicted peak is {predicted[name].get('peak_mib')}, not a positive MiB")
            if context not in (plain, cudnn):
                raise ValueError(f"{name}: predicted with context {context:g} MiB, not calibration/{a.gpu}.json's "
                                 f"({plain:g} or {cudnn:g}): predict with --gpu {a.gpu}")
            groups["trace_cudnn_safety_margin" if context == cudnn else "trace_safety_margin"].append(
                (name, predicted[name]["peak_mib"], context, m["smi_process_mib"]))
    for key, rows in groups.items():
        if not rows:
            print(f"{key}: no configuration")
            continue
        k = 0  # (the margin as the profile would hold it: k x step rounded, as written in JSON)
        while any(math.ceil(peak * (1 + round(k * a.step, 10)) + ctx) < smi for _, peak, ctx, smi in rows):
            k += 1
            if k * a.step > 10:  # a profile's margins are in [0, 10]
                raise ValueError(f"{key}: no margin up to 10 covers every configuration")
        need = {name: (smi - ctx) / peak - 1 for name, peak, ctx, smi in rows}
        binding = max(need, key=need.get)
        print(f"{key}: {k * a.step:.2f} ({len(rows)} configurations; the largest need {binding}: {need[binding]:+.4f}; "
              f"profile now {profile.get(key)})")


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--configs", required=True)
    m.add_argument("--out")
    m.add_argument("--one", type=int, help=argparse.SUPPRESS)
    m.add_argument("--only", nargs="*", help="configuration names to run")
    m.add_argument("--timeout", type=float, default=300)
    m.add_argument("--cpu-check", action="store_true", help="run each loop on the CPU at batch 2 (checks the script)")
    m.add_argument("--snapshot-dir", help="also write each run's allocation history to DIR/NAME.history.json.gz")
    p = sub.add_parser("predict")
    p.add_argument("--configs", required=True)
    p.add_argument("--colo", default=os.path.join(ROOT, "build", "colo"))
    p.add_argument("--traces", help="replay the traces DIR/NAME.trace instead of probing here")
    p.add_argument("--gpu", default="a100-40gb", help="calibration profile (colo estimate --gpu)")
    p.add_argument("--out", required=True)
    tr = sub.add_parser("trace")
    tr.add_argument("--configs", required=True)
    tr.add_argument("--dir", required=True)
    tr.add_argument("--timeout", type=float, default=300)
    mg = sub.add_parser("margins")
    mg.add_argument("--measured", nargs="+", required=True)
    mg.add_argument("--predicted", nargs="+", required=True, help="predict --gpu GPU output for the same configurations")
    mg.add_argument("--gpu", required=True, help="the calibration profile the predictions used")
    mg.add_argument("--step", type=float, default=0.01)
    t = sub.add_parser("table")
    t.add_argument("measured")
    t.add_argument("predicted", nargs="+")
    a = ap.parse_args()
    if a.cmd == "measure" and a.one is None and not a.out:
        ap.error("measure: --out is required")
    if a.cmd in ("measure", "trace") and not (0 < a.timeout <= 86400):
        ap.error(f"{a.cmd}: --timeout must be in (0, 86400] seconds, got {a.timeout:g}")
    if a.cmd == "measure" and a.only:
        known = {name for name, _ in read_configs(a.configs)}
        unknown = [n for n in a.only if n not in known]
        if unknown:
            ap.error(f"measure: --only {' '.join(unknown)}: no such configuration in {a.configs}")
    if a.cmd == "margins" and not (0 < a.step <= 1):
        ap.error(f"margins: --step must be in (0, 1], got {a.step:g}")
    {"measure": cmd_measure, "predict": cmd_predict, "trace": cmd_trace, "table": cmd_table,
     "margins": cmd_margins}[a.cmd](a)


if __name__ == "__main__":
    script_errors.run(main, "gpu-validate")
