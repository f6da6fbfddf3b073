"""The probe trace, version 1: a line-oriented text file.

    colo-probe-trace 1
    H {json}                          header: model, batch, optimizer, torch version, ...
    M <id> <bytes> <stream> <phase> <op>   a storage is allocated on the GPU
    F <id>                            the storage allocated as <id> is freed
    C <phase> <op> <in_bytes> <out_bytes> <strided 0|1>   a convolution kernel runs (cuDNN workspace)
    B <phase> <op>                    a cuBLAS matmul runs (cuBLAS workspace on first use)
    S <step>                          an optimizer step has finished (1, 2)
    E {json}                          footer: seconds, peak live bytes, counters

<phase> is one of load, forward, backward, optimizer; <op> is the ATen operator without the
"aten::" prefix (or "param", "buffer", "input" for what the script itself puts on the GPU); ids
are decimal, unique over the trace; bytes are exact storage sizes (not rounded). Nothing else may
appear; the C++ reader (src/estimate/trace/probe_trace.cpp) refuses unknown records."""
import json

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

    def header(self, info):
        self.lines.append("colo-probe-trace 1")
        self.lines.append("H " + json.dumps(info, sort_keys=True))

    def malloc(self, nbytes, op, stream=0):
        self.next_id += 1
        self.allocs += 1
        self.lines.append(f"M {self.next_id} {nbytes} {stream} {self.phase} {op}")
        self.live += nbytes
        if self.live > self.peak:
            self.peak = self.live
            self.peak_at = (self.phase, op)
        return self.next_id

    def free(self, ident, nbytes):
        self.lines.append(f"F {ident}")
        self.live -= nbytes

    def conv(self, op, in_bytes, out_bytes, strided):
        self.lines.append(f"C {self.phase} {op} {in_bytes} {out_bytes} {1 if strided else 0}")

    def matmul(self, op):
        self.lines.append(f"B {self.phase} {op}")

    def step(self, n):
        self.lines.append(f"S {n}")

    def footer(self, info):
        self.lines.append("E " + json.dumps(info, sort_keys=True))

    def write(self):
        text = "\n".join(self.lines) + "\n"
        if self.out == "-":
            import sys
            # The process's own stdout: while a model file or script runs, sys.stdout is stderr.
            sys.__stdout__.write(text)
            sys.__stdout__.flush()
        else:
            with open(self.out, "w") as f:
                f.write(text)
