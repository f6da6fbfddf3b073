#!/usr/bin/env python3
"""Measures, on a GPU, what each convolution of a shape list (scripts/conv-shapes.py) allocates
through PyTorch's caching allocator: its outputs and cuDNN's workspaces, in order. One JSON line
per key, written as it goes, so a time-boxed run keeps what it measured:

  python3 scripts/gpu-conv-workspace.py --shapes shapes.jsonl --out workspace.jsonl [--deadline-s 300]

{"key", "events": [[action, bytes, block], ...], "seconds"} or {"key", "error"}: action is
"alloc" or "free" (PyTorch's memory history: alloc / free_completed), bytes the block's size as
the allocator records it, block a small integer naming the address (pairs an alloc with its
free). Inputs are made before recording, so every alloc is the operator's own. Settings are
PyTorch's defaults (cudnn.benchmark off, TF32 on), as the measured jobs ran. Needs PyTorch >= 2.1."""
import argparse
import inspect
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from colo_probe.conv_shape import parse_key  # noqa: E402

DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
DEV = ["cuda"]  # --dry-run: "meta" (checks every key's call on a machine without a GPU)
REC = torch.cuda.memory._record_memory_history
CLEAR = "clear_history" in inspect.signature(REC).parameters


def tensors(k):
    dt = DT[k["dtype"]]
    x = torch.randn(k["input"], device=DEV[0], dtype=dt)
    w = torch.randn(k["weight"], device=DEV[0], dtype=dt)
    out_ch = k["weight"][1] * k["groups"] if k["transposed"] else k["weight"][0]
    args = (k["stride"], k["padding"], k["dilation"], k["transposed"], k["output_padding"], k["groups"])
    return x, w, out_ch, args


def run(k, x, w, out_ch, args):
    if k["pass"] == "forward":
        b = torch.randn(out_ch, device=DEV[0], dtype=x.dtype) if k["bias"] else None
        return lambda: torch.ops.aten.convolution(x, w, b, *args)
    shape = torch.ops.aten.convolution(x.to("meta"), w.to("meta"), None, *args).shape
    gy = torch.randn(shape, device=DEV[0], dtype=x.dtype)
    mask = k["output_mask"]
    return lambda: torch.ops.aten.convolution_backward(gy, x, w, [out_ch] if mask[2] else None, *args, mask)


def measure(key):
    k = parse_key(key)
    if DEV[0] == "meta":
        run(k, *tensors(k))()
        return {"key": key, "events": [], "seconds": 0}
    torch.cuda.empty_cache()
    call = run(k, *tensors(k))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    REC(enabled="all", context=None, stacks="python", max_entries=100000, clear_history=True)
    out = call()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    REC(enabled=None)
    seconds = time.perf_counter() - t0
    del out
    blocks, events = {}, []
    for e in snap["device_traces"][torch.cuda.current_device()]:
        if e["action"] in ("alloc", "free_completed"):
            b = blocks.setdefault(e["addr"], len(blocks))
            events.append(["alloc" if e["action"] == "alloc" else "free", e["size"], b])
    return {"key": key, "events": events, "seconds": round(seconds, 4)}


def main():
    ap = argparse.ArgumentParser(description="cuDNN workspace per convolution shape, measured")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=300)
    ap.add_argument("--dry-run", action="store_true", help="check every key's call on meta tensors (no GPU)")
    a = ap.parse_args()
    if a.dry_run:
        DEV[0] = "meta"
        from colo_probe import meta_kernels
        meta_kernels.register()  # PyTorch 1.13 has no meta convolution_backward
    elif not CLEAR:
        sys.exit("gpu-conv-workspace: needs PyTorch >= 2.1 (memory history with clear_history)")
    t_end = time.monotonic() + a.deadline_s
    keys = [json.loads(line)["key"] for line in open(a.shapes) if line.strip()]
    torch.empty(1, device=DEV[0])
    done = 0
    with open(a.out, "w") as f:
        f.write(json.dumps({"torch": torch.__version__, "gpu": None if a.dry_run else torch.cuda.get_device_name(0),
                            "cudnn": torch.backends.cudnn.version(), "cuda": torch.version.cuda,
                            "clear_history": CLEAR, "keys": len(keys)}) + "\n")
        for key in keys:
            if time.monotonic() > t_end:
                break
            try:
                rec = measure(key)
            except Exception as e:  # one shape failing (OOM, unsupported) must not stop the list
                if not a.dry_run:
                    REC(enabled=None)
                rec = {"key": key, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
            f.write(json.dumps(rec) + "\n")
            f.flush()
            done += 1
    print(f"gpu-conv-workspace: {done}/{len(keys)} keys -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
