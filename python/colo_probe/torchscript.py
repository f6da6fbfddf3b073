"""TorchScript under the probe (--script). A module compiled by torch.jit.script or torch.jit.trace
runs in TorchScript's interpreter, which aborts the whole process on the probe's tensors (a C++
"not linked with support for cuda devices", not an exception), so such a module stays the eager
module it was compiled from, as torch.compile does under the probe. Its memory is eager PyTorch's: on
a GPU, TorchScript's fuser can fuse elementwise chains and keep fewer intermediates, so the estimate
errs high there, never low. Scripted and traced functions run in the interpreter, which works on
the probe's tensors. A TorchScript file (torch.jit.load) has no eager module to fall back on: it is
refused by name."""
import torch


def install(p):
    script, trace = torch.jit.script, torch.jit.trace

    def script_eager(obj, *args, **kwargs):
        return obj if isinstance(obj, torch.nn.Module) else script(obj, *args, **kwargs)

    def trace_eager(func, *args, **kwargs):
        return func if isinstance(func, torch.nn.Module) else trace(func, *args, **kwargs)

    def trace_module_eager(mod, *args, **kwargs):
        return mod

    def load(*args, **kwargs):
        raise NotImplementedError("torch.jit.load: a TorchScript model file runs in TorchScript's interpreter, "
                                  "which the probe cannot run; train the eager module, or estimate the job with --mem")
    p.set(torch.jit, "script", script_eager)
    p.set(torch.jit, "trace", trace_eager)
    p.set(torch.jit, "trace_module", trace_module_eager)
    p.set(torch.jit, "load", load)
