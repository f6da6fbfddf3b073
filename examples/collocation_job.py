#!/usr/bin/env python3
"""A training job for `colo bench collocation` (docs/SIMULATOR.md "Measuring your own GPUs").

It trains a torchvision network on random data until stopped and, after every step, writes how
many samples it has trained on into the file $COLO_BENCH_PROGRESS (written whole, then renamed,
so the harness never reads half a number). The harness turns the growth of that number into
throughput alone, beside another job, or on a MIG instance; the unit cancels out.

    colo bench collocation --sharing mps \\
        --job r50="python3 examples/collocation_job.py --model resnet50 --batch 64" \\
        --job mnv2="python3 examples/collocation_job.py --model mobilenet_v2 --batch 32" \\
        --out my-gpu.toml --measurements my-gpu.json

Works on PyTorch 1.13 and 2.x, on the GPU the harness gives it (CUDA_VISIBLE_DEVICES), else the CPU.
"""
import argparse
import os
import sys

import torch
import torchvision


def report(path, samples):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % samples)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18", help="a torchvision.models constructor name")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: until stopped)")
    a = ap.parse_args()
    if a.batch < 1 or a.image_size < 1 or a.classes < 1 or a.max_steps < 0:
        ap.error("--batch, --image-size and --classes must be at least 1, --max-steps at least 0")
    progress = os.environ.get("COLO_BENCH_PROGRESS")
    if not progress:
        sys.exit("collocation_job.py: COLO_BENCH_PROGRESS is not set (colo bench collocation sets it)")
    build = getattr(torchvision.models, a.model, None)
    if build is None or not callable(build) or isinstance(build, type(torchvision)):
        sys.exit("collocation_job.py: torchvision has no model %r" % a.model)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build(num_classes=a.classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, a.image_size, a.image_size, device=device)
    y = torch.randint(0, a.classes, (a.batch,), device=device)
    samples = step = 0
    while a.max_steps == 0 or step < a.max_steps:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()  # the step is done, not only queued
        step += 1
        samples += a.batch
        report(progress, samples)


if __name__ == "__main__":
    main()
