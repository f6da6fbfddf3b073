#!/usr/bin/env python3
"""Collects the convolution shape keys (colo_probe/conv_shape.py) that training jobs run, by probing
them on the CPU: the list a GPU session measures cuDNN's workspace for
(scripts/gpu-conv-workspace.py). Run with Debian's /usr/bin/python3 (PyTorch).

  /usr/bin/python3 scripts/conv-shapes.py --out shapes.jsonl \
      [--configs scripts/gpu-validate.configs ...] [--carma ../shared/data/carma/workloads.csv] \
      [--gpumemnet-cnn ../shared/data/gpumemnet/cnn.csv [--gpumemnet-limit N]]

Writes one JSON line per distinct key, in the order first met (configurations, then carma rows,
then GPUMemNet rows in a fixed shuffled order, so any prefix of the file covers both splits):
{"key": ..., "sources": [...]}. Sources are probed one after the other; a source that fails is
reported on stderr and skipped."""
import argparse
import csv
import json
import os
import random
import shlex
import sys
import tempfile

import script_errors  # scripts/script_errors.py: one-line errors, never a traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from colo_probe import tensor as pt  # noqa: E402
from colo_probe.conv_shape import conv_key  # noqa: E402

KEYS = {}  # key -> sources (insertion order = first met)
SOURCE = [None]


def _capture():
    orig = pt._hint_conv

    def hint(name, args, kwargs, out):
        pairs = dict((a.name, v) for a, v in pt._bound_arguments(pt._SCHEMAS[name], args, kwargs))
        key = conv_key(name, pairs)
        if key is not None:
            srcs = KEYS.setdefault(key, [])
            if SOURCE[0] not in srcs and len(srcs) < 8:
                srcs.append(SOURCE[0])
        return orig(name, args, kwargs, out)
    pt._hint_conv = hint


def probe_flags(source, flags):
    """Runs colo_probe's CLI in this process with `flags` (colo estimate --probe words)."""
    from colo_probe.__main__ import main
    words = []
    it = iter(flags)
    for w in it:
        if "=" in w and not w.startswith("--"):  # NAME=VALUE environment words: not shape-relevant
            continue
        words.append("--model" if w == "--probe" else w)
    SOURCE[0] = source
    with tempfile.TemporaryDirectory() as d:
        try:
            main(words + ["--steps", "1", "--out", os.path.join(d, "t")])
        except SystemExit as e:
            if e.code:
                print(f"conv-shapes: {source}: probe exited {e.code}", file=sys.stderr)


def carma_flags(row):
    """The probe flags of a carma CNN row (src/estimate/trace/carma_probe.cpp's mapping); None for
    rows without convolutions or a torchvision model."""
    tv = {"resnet18", "resnet34", "resnet50", "vgg16", "mobilenet_v2", "mobilenet_v3_small",
          "efficientnet_b0", "inception_v3", "densenet121"}
    model = row["model"]
    if model not in tv:
        return None
    if row["dataset"] == "imagenet":
        inp, classes = ("3x299x299" if model == "inception_v3" else "3x224x224"), None
    elif row["dataset"] in ("cifar100", "cifar10"):
        inp, classes = "3x32x32", ("100" if row["dataset"] == "cifar100" else "10")
    else:
        return None
    flags = ["--probe", "torchvision:" + model, "--input", inp, "--batch", row["batch_size"],
             "--optimizer", {"adamw": "adamw", "sgd": "sgd"}.get(row.get("optimizer") or "", "adam")]
    if classes:
        flags += ["--num-classes", classes]
    if int(row.get("gpus") or 1) > 1:
        flags += ["--data-parallel", row["gpus"]]
    return flags


def main():
    ap = argparse.ArgumentParser(description="collect convolution shape keys by probing jobs on the CPU")
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", nargs="*", default=[])
    ap.add_argument("--carma")
    ap.add_argument("--gpumemnet-cnn")
    ap.add_argument("--gpumemnet-limit", type=int)
    a = ap.parse_args()
    if a.gpumemnet_limit is not None and (a.gpumemnet_limit < 1 or not a.gpumemnet_cnn):
        sys.exit("conv-shapes: --gpumemnet-limit must be >= 1, with --gpumemnet-cnn")
    script_errors.need_output("conv-shapes", a.out, "--out")
    _capture()
    for path in a.configs:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if line:
                    try:
                        words = shlex.split(line)
                    except ValueError as e:
                        sys.exit(f"conv-shapes: {path}:{n}: {e}")
                    probe_flags(f"{os.path.basename(path)}:{words[0]}", words[1:])
    if a.carma:
        with open(a.carma, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("workload", "model", "dataset", "batch_size") if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"conv-shapes: {a.carma}: not a carma workloads CSV: no column {', '.join(missing)}")
            for row in reader:
                if None in row or None in row.values():
                    sys.exit(f"conv-shapes: {a.carma}:{reader.line_num}: not as many cells as the header has columns")
                try:
                    flags = carma_flags(row)
                except ValueError:
                    sys.exit(f"conv-shapes: {a.carma}:{reader.line_num}: gpus {row.get('gpus')!r} is not an integer")
                if flags:
                    probe_flags("carma:" + row["workload"], flags)
    if a.gpumemnet_cnn:
        from colo_probe import gpumemnet
        try:
            rows = gpumemnet.read_rows(a.gpumemnet_cnn, "cnn")
        except ValueError as e:  # (not a GPUMemNet file: the message does not name it)
            sys.exit(f"conv-shapes: {a.gpumemnet_cnn}: {e}")
        random.Random(13).shuffle(rows)
        rows = rows[:a.gpumemnet_limit] if a.gpumemnet_limit else rows
        with tempfile.TemporaryDirectory() as d:
            for n, row in enumerate(rows, 1):
                SOURCE[0] = f"gpumemnet-cnn:{row.index}"
                rec = gpumemnet.probe_row(row, d, steps=1)
                if rec["status"] != "ok":
                    print(f"conv-shapes: {SOURCE[0]}: {rec.get('reason')}", file=sys.stderr)
                else:
                    os.unlink(os.path.join(d, rec["trace"]))
                if n % 100 == 0:
                    print(f"conv-shapes: {n}/{len(rows)} GPUMemNet rows, {len(KEYS)} keys", file=sys.stderr)
    with open(a.out, "w") as f:
        for k, srcs in KEYS.items():
            f.write(json.dumps({"key": k, "sources": srcs}) + "\n")
    print(f"conv-shapes: {len(KEYS)} keys -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    script_errors.run(main, "conv-shapes")
