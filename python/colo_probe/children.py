"""Processes the probed script starts (subprocess.Popen and what builds on it: subprocess.run,
asyncio's subprocesses).

- No child sees a GPU: its CUDA_VISIBLE_DEVICES is empty, the probe's own rule (the runner starts
  the probe so), whatever the script's view of the variable (script.visible_devices) or the
  environment it passes.
- A child that runs the probed script again is another rank of the same job: PyTorch Lightning's
  DDP launcher (`Trainer(devices=N, strategy="ddp")` started as `python train.py`) re-runs the
  script with LOCAL_RANK=1..N-1. The probe records rank 0, and the other ranks keep the same memory
  on their own GPUs, so the script is not run again (it would train unprobed, on the CPU). An idle
  process stands in for it instead: a launcher that watches its children (Lightning kills the job
  when one exits with an error) sees it running, and it ends with the probe (PR_SET_PDEATHSIG, set
  before it starts).
"""

import ctypes
import os
import signal
import subprocess
import sys

# The stand-in for another rank: idle until it is signalled, or killed when the probe ends.
_STAND_IN = "import signal\nwhile True:\n    signal.pause()\n"
_PR_SET_PDEATHSIG = 1
_LIBC_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the forked child only calls it


def _dies_with(parent, then=None):
    """A preexec_fn: between fork and exec, the child asks for SIGKILL when its parent (the probe)
    ends, so it is in force once Popen returns; a parent already gone ends it at once."""
    def preexec():
        _LIBC_PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(0)
        if then is not None:
            then()
    return preexec


_ENV, _PREEXEC = 9, 5  # env's and preexec_fn's indices among Popen's parameters after args


def _reruns(args, script):
    """True when the command line runs `script` (a resolved path) under a Python interpreter."""
    if isinstance(args, (str, bytes, os.PathLike)) or not args:
        return False
    words = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]
    if not os.path.basename(words[0]).startswith("python") and words[0] != sys.executable:
        return False
    return any(os.path.realpath(w) == script for w in words[1:] if not w.startswith("-"))


def _without_gpus(env):
    """`env` (None: the script's view of os.environ) with CUDA_VISIBLE_DEVICES empty."""
    env = dict(os.environ if env is None else env)
    bytes_keys = any(isinstance(k, bytes) for k in env)
    env[b"CUDA_VISIBLE_DEVICES" if bytes_keys else "CUDA_VISIBLE_DEVICES"] = b"" if bytes_keys else ""
    return env


def popen_for(script):
    """subprocess.Popen as the probed `script` (a path) gets it."""
    script = os.path.realpath(script)
    real = subprocess.Popen

    class Popen(real):
        def __init__(self, args, *positional, **kwargs):
            if len(positional) > _ENV:  # env given by position (Popen's 11th parameter)
                positional = positional[:_ENV] + (_without_gpus(positional[_ENV]),) + positional[_ENV + 1:]
            else:
                kwargs["env"] = _without_gpus(kwargs.get("env"))
            if _reruns(args, script):
                args = [sys.executable, "-c", _STAND_IN]
                kwargs.pop("executable", None)
                kwargs["shell"] = False
                if len(positional) > _PREEXEC:
                    positional = (positional[:_PREEXEC] + (_dies_with(os.getpid(), positional[_PREEXEC]),)
                                  + positional[_PREEXEC + 1:])
                else:
                    kwargs["preexec_fn"] = _dies_with(os.getpid(), kwargs.get("preexec_fn"))
            super().__init__(args, *positional, **kwargs)

    Popen.__name__ = Popen.__qualname__ = "Popen"
    return Popen


def install(patches, script):
    patches.set(subprocess, "Popen", popen_for(script))
