"""Helpers for the probe's tests: run the probe in-process on a model and parse its trace."""
import io
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch  # noqa: E402

from colo_probe import models, train  # noqa: E402


class Trace:
    def __init__(self, text):
        self.allocs = {}   # id -> (bytes, phase, op, step)
        self.frees = {}    # id -> (phase, step)
        self.order = []
        step = 1
        phase = None
        for line in text.splitlines():
            f = line.split(" ")
            if f[0] == "M":
                self.allocs[int(f[1])] = (int(f[2]), f[4], f[5], step)
                self.order.append(("M", int(f[1])))
                phase = f[4]
            elif f[0] == "F":
                self.frees[int(f[1])] = (phase, step)
                self.order.append(("F", int(f[1])))
            elif f[0] == "S":
                step = int(f[1]) + 1
            elif f[0] in ("C", "B"):
                phase = f[1]

    def live_at_end(self):
        return {i: a for i, a in self.allocs.items() if i not in self.frees}

    def by_op(self, op):
        return [(i, a) for i, a in self.allocs.items() if a[2] == op]

    def live_peak(self):
        live = peak = 0
        for kind, i in self.order:
            live += self.allocs[i][0] if kind == "M" else -self.allocs[i][0]
            peak = max(peak, live)
        return peak


def probe(module=None, spec=None, batch=4, input_shape=(8,), optimizer="adam", amp="none",
          checkpointing=False, set_to_none=True, foreach=True, input_fn=None, loss_fn=None, steps=2):
    if spec is None:
        spec = models.ModelSpec(module, input_fn, loss_fn, "test")
    with tempfile.NamedTemporaryFile("r", suffix=".trace", delete=False) as f:
        path = f.name
    opts = {"model": spec, "batch": batch, "optimizer": optimizer, "foreach": foreach, "amp": amp,
            "checkpointing": checkpointing, "set_to_none": set_to_none, "steps": steps, "out": path,
            "header": {"model": "test"},
            "input_fn": train.default_input_fn(input_shape, torch.float32, None)}
    train.run_probe(opts)
    with open(path) as f:
        text = f.read()
    os.unlink(path)
    return Trace(text), text


def meta_module(ctor):
    """Builds a module the way the probe does (parameters on the meta device)."""
    from colo_probe.factories import MetaInit
    with torch.no_grad(), MetaInit():
        return ctor()
