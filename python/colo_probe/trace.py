"""The probe trace, versions 1 and 2: a line-oriented text file.

    colo-probe-trace 1                (2 when it holds an X or L record)
    H {json}                          header: model, batch, optimizer, torch version, ...
    M <id> <bytes> <stream> <phase> <op>   a storage is allocated on the GPU (stream 0 = the default;
                                      a script's own torch.cuda.Stream objects are 1, 2, ...)
    F <id>                            the storage allocated as <id> is freed
    C <phase> <op> <in_bytes> <out_bytes> <strided 0|1> [<key>]   a convolution kernel runs (cuDNN
                                      workspace); <key> (probe 1.1 and later) is its shape
                                      (conv_shape.py), which a GPU's measured workspace table is keyed by
    B <phase> <op>                    a cuBLAS matmul runs (cuBLAS workspace on first use)
    S <step>                          an optimizer step has finished (1, 2)
    X <phase>                         (v2) the script calls torch.cuda.empty_cache()
    L <fraction>                      (v2) the script calls torch.cuda.set_per_process_memory_fraction
    E {json}                          footer: seconds, peak live bytes, counters

The header's "alloc_conf" is PYTORCH_ALLOC_CONF (else PYTORCH_CUDA_ALLOC_CONF) as the process had it
when it first allocated on the GPU, which is when PyTorch reads it, or what a script passed to
torch.cuda.memory._set_allocator_settings before that; absent when none is set. A --script header
has "gpus" (the GPUs it saw) and, under torchrun, "torchrun" (its processes; the trace is rank 0's).

<phase> is one of load, forward, backward, optimizer; <op> is the ATen operator without the
"aten::" prefix (or "param", "buffer", "input" for what the script itself puts on the GPU); ids
are decimal, unique over the trace; bytes are exact storage sizes (not rounded). Nothing else may
appear; the C++ reader (src/estimate/trace/probe_trace.cpp) refuses unknown records."""
import json
import os

PHASES = ("load", "forward", "backward", "optimizer")


class TraceWriter:
    def __init__(self, out):
        self.out = out
        self.lines = []
        self.next_id = 0
        self.phase = "load"
        self.live = 0
        self.peak = 0
        self.peak_at = ("load", "")
        self.allocs = 0
        self.stream = 0  # the current stream (a script's `with torch.cuda.stream(s):`)
        self.version = 1  # 2 once an X or L record is written
        self.alloc_conf = None  # the allocator settings at the first allocation
        self.alloc_conf_set = None  # a script's torch.cuda.memory._set_allocator_settings before it

    def header(self, info):
        self.lines.append("colo-probe-trace 1")
        self.lines.append("H " + json.dumps(info, sort_keys=True))

    def malloc(self, nbytes, op, stream=None):
        if self.next_id == 0:
            # PyTorch reads its allocator settings when CUDA's allocator starts: the first allocation.
            # Current PyTorch reads PYTORCH_ALLOC_CONF, else the older PYTORCH_CUDA_ALLOC_CONF.
            conf = (self.alloc_conf_set or os.environ.get("PYTORCH_ALLOC_CONF")
                    or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
            self.alloc_conf = conf if conf else None
        self.next_id += 1
        self.allocs += 1
        stream = self.stream if stream is None else stream
        self.lines.append(f"M {self.next_id} {nbytes} {stream} {self.phase} {op}")
        self.live += nbytes
        if self.live > self.peak:
            self.peak = self.live
            self.peak_at = (self.phase, op)
        return self.next_id

    def free(self, ident, nbytes):
        self.lines.append(f"F {ident}")
        self.live -= nbytes

    def conv(self, op, in_bytes, out_bytes, strided, key=None):
        tail = f" {key}" if key else ""
        self.lines.append(f"C {self.phase} {op} {in_bytes} {out_bytes} {1 if strided else 0}{tail}")

    def matmul(self, op):
        self.lines.append(f"B {self.phase} {op}")

    def step(self, n):
        self.lines.append(f"S {n}")

    def empty_cache(self):
        self.version = 2
        self.lines.append(f"X {self.phase}")

    def memory_fraction(self, fraction):
        self.version = 2
        self.lines.append(f"L {float(fraction)!r}")  # numpy's float64 reprs as np.float64(0.5)

    def footer(self, info):
        self.lines.append("E " + json.dumps(info, sort_keys=True))

    def write(self):
        # What is known only once recording has ended goes into the first line and the header.
        if self.version != 1 and self.lines and self.lines[0] == "colo-probe-trace 1":
            self.lines[0] = f"colo-probe-trace {self.version}"
        if len(self.lines) > 1 and self.lines[1].startswith("H "):
            info = json.loads(self.lines[1][2:])
            if self.alloc_conf is not None:
                info["alloc_conf"] = self.alloc_conf
            if "trace_version" in info:
                info["trace_version"] = self.version
            self.lines[1] = "H " + json.dumps(info, sort_keys=True)
        text = "\n".join(self.lines) + "\n"
        if self.out == "-":
            import sys
            # The process's own stdout: while a model file or script runs, sys.stdout is stderr.
            sys.__stdout__.write(text)
            sys.__stdout__.flush()
        else:
            with open(self.out, "w") as f:
                f.write(text)
