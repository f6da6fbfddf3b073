"""TorchScript under the probe (--script). What torch.jit.script or torch.jit.trace compiles runs in
TorchScript's interpreter, which does not work on the probe's tensors: a scripted module aborts the
whole process (a C++ "not linked with support for cuda devices", not an exception), and a scripted
function's derivative graph (`F.relu`'s, after the profiling runs) fails in its backward. So what
the script compiles stays the eager code it was compiled from, as torch.compile does under the
probe: modules, functions and classes (torch.distributed.optim scripts its functional optimizers
when imported). Its memory is eager PyTorch's: on a GPU, TorchScript's fuser can fuse elementwise
chains and keep fewer intermediates, so the estimate errs high there, never low. A TorchScript file
(torch.jit.load) has no eager code to fall back on: it is refused by name."""
import sys

import torch


def install(p):
    real_script = torch.jit.script

    def eager(obj, *args, **kwargs):  # what script, trace and trace_module were given
        return obj

    def script(obj, *args, **kwargs):
        # PyTorch's own forward-AD decompositions (torch._decomp.decompositions_for_jvp, imported at
        # the first make_dual: torch.func's jvp, jacfwd, hessian) script plain functions to read
        # their graphs, which the eager function does not have (and TorchScript's compiler scripts
        # the functions they call); they run on no probe tensor there.
        if sys._getframe(1).f_globals.get("__name__", "").startswith(("torch._decomp", "torch.jit")):
            return real_script(obj, *args, **kwargs)
        return obj

    def load(*args, **kwargs):
        raise NotImplementedError("torch.jit.load: a TorchScript model file runs in TorchScript's interpreter, "
                                  "which the probe cannot run; train the eager module, or estimate the job with --mem")
    p.set(torch.jit, "script", script)
    for name in ("trace", "trace_module"):
        p.set(torch.jit, name, eager)
    p.set(torch.jit, "load", load)
