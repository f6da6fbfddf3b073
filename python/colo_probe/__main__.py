"""python3 -m colo_probe --model torchvision:resnet50 --input 3x224x224 --batch 128 --optimizer adam
   [--amp fp16|bf16] [--checkpointing] [--data-parallel N] [--out trace.txt]
python3 -m colo_probe [--out trace.txt] [--steps 2] [--gpus N] [--torchrun N] [--gpu-name NAME]
   [--gpu-memory-mib MIB] --script train.py [ARGS...]

--script: the user's unmodified training script, with every word after its path passed to it as
its own arguments; it runs on the CPU with its CUDA device redirected to the probe (script.py) and
is stopped after --steps optimizer steps. The target GPU (--gpus, --gpu-name, --gpu-memory-mib;
default one A100 40 GB) is what torch.cuda answers. --torchrun N: the script runs as rank 0 of the
N processes `torchrun --nproc-per-node N` starts (its environment, torch.distributed,
DistributedDataParallel's buffers: distributed.py).

--input: the per-sample shape of the default input, and what a model file's input_fn(batch,
input_shape) receives (e.g. `--input 512`: sequence length 512; None when not given).
--data-parallel N: torch.nn.DataParallel over N GPUs; the trace is GPU 0's (train.DataParallel).

Exit status: 0 trace written; 2 bad arguments or model spec; 1 the probe failed (message on one line)."""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time

from .errors import exit_status, reason

DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32")


def _check_out(path):
    """Where the trace goes must be writable before anything runs (a failure after the probe would
    only be a traceback)."""
    if path == "-":
        return
    if os.path.isdir(path):
        _fail(2, f"--out {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        _fail(2, f"--out {path}: {parent} is not a writable directory")


# A probe's own temporary directory is `colo-probe-XXXX` in the usual one, holding `.lock`, which
# the probe (and whatever it forks: data loader workers) keeps locked while it runs. It is made as
# `colo-probing-XXXX` and renamed once locked, so a directory under the final name without a held
# lock is one whose probe is gone.
_PREFIX, _MAKING, _LOCK = "colo-probe-", "colo-probing-", ".lock"


def _remove_stale_tmpdirs(base):
    """Removes the directories of this user's probes that ended without removing their own: killed
    at colod's deadline (SIGKILL: no handler runs), or with the machine. The next probe of the
    same user does it, as that user; a directory whose lock is held (a running probe, here or in
    another PID namespace sharing the directory) is left alone."""
    import fcntl
    import stat
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            fd = os.open(os.path.join(path, _LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def _private_tmpdir():
    """Points the probe's temporary files at a directory of its own, removed when it ends: PyTorch
    makes one at import (torch.distributed.nn's template directory) that only its finalizer
    removes, and script mode ends with os._exit, so each --script probe left a /tmp/tmpXXXX of the
    submitting user behind (and whatever the script's own tempfile use left). Those of earlier
    probes that were killed go first (_remove_stale_tmpdirs). None when no directory can be made
    (the usual one then)."""
    import fcntl
    base = tempfile.gettempdir()
    _remove_stale_tmpdirs(base)
    try:
        making = tempfile.mkdtemp(prefix=_MAKING, dir=base)
    except OSError:
        return None
    try:
        fd = os.open(os.path.join(making, _LOCK), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        d = os.path.join(base, _PREFIX + os.path.basename(making)[len(_MAKING):])
        os.rename(making, d)  # an existing non-empty directory of that name makes this fail
    except OSError:
        shutil.rmtree(making, ignore_errors=True)
        return None
    _LOCK_FD.append(fd)  # held to the end; the descriptor closing with the process releases it
    os.environ["TMPDIR"] = d  # the script's child processes (data loader workers, stand-in ranks)
    tempfile.tempdir = d
    atexit.register(shutil.rmtree, d, True)
    return d


_LOCK_FD = []


def _fail(code, msg):
    sys.stderr.write("colo_probe: error: " + " ".join(str(msg).split()) + "\n")
    sys.exit(code)


def _positive(text):
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v <= 0 or v > 1 << 31:
        raise argparse.ArgumentTypeError(f"{text} is out of range (1..2147483648)")
    return v


def _gpus(text):
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v <= 0 or v > 256:
        raise argparse.ArgumentTypeError(f"{text} is out of range (1..256)")
    return v


def _shape(text):
    parts = text.lower().split("x")
    dims = []
    for p in parts:
        if not p.isdigit() or int(p) <= 0 or int(p) > 1 << 20:
            raise argparse.ArgumentTypeError(f"input shape '{text}': expected dimensions like 3x224x224, each 1..1048576")
        dims.append(int(p))
    return tuple(dims)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        _fail(2, message)


def parse(argv):
    from .train import OPTIMIZERS
    p = _Parser(prog="python3 -m colo_probe", description="Record the GPU allocations of two training iterations, on the CPU.",
                epilog="An unmodified training script instead of a model: python3 -m colo_probe [--out FILE] [--steps N] "
                       "[--gpus N] [--torchrun N] [--gpu-name NAME] [--gpu-memory-mib MIB] --script train.py [ARGS...] "
                       "(python3 -m colo_probe --help --script TRAIN.py lists those options).")
    p.add_argument("--model", required=True, help="torchvision:NAME or path/to/file.py:function")
    p.add_argument("--input", type=_shape, default=None, help="per-sample input shape, e.g. 3x224x224 (torchvision default)")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="input dtype")
    p.add_argument("--num-classes", type=_positive, default=None)
    p.add_argument("--batch", type=_positive, required=True)
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    p.add_argument("--foreach", choices=("auto", "on", "off"), default="auto",
                   help="the optimizer's multi-tensor implementation; auto = what PyTorch 2 picks for CUDA tensors (on)")
    p.add_argument("--amp", choices=("none", "fp16", "bf16"), default="none")
    p.add_argument("--checkpointing", action="store_true", help="gradient checkpointing of each top-level child module")
    p.add_argument("--data-parallel", type=_gpus, default=1, metavar="N",
                   help="torch.nn.DataParallel over N GPUs (the whole batch); records GPU 0 (default 1)")
    p.add_argument("--no-set-to-none", action="store_true", help="zero_grad(set_to_none=False): gradients stay allocated")
    p.add_argument("--steps", type=_positive, default=2, help="training iterations to record (default 2)")
    p.add_argument("--out", default="-", help="trace file ('-' = stdout)")
    return p.parse_args(argv)


def parse_script(argv):
    """[probe options] --script PATH [ARGS...] -> (options, PATH, ARGS)."""
    i = argv.index("--script")
    if i + 1 >= len(argv) or not argv[i + 1]:
        _fail(2, "--script: give the training script's path (then its own arguments)")
    p = _Parser(prog="python3 -m colo_probe --script", description="Probe a training script.")
    p.add_argument("--steps", type=_positive, default=2, help="optimizer steps to record (default 2)")
    p.add_argument("--out", default="-", help="trace file ('-' = stdout)")
    p.add_argument("--gpus", type=_gpus, default=None,
                   help="GPUs the script sees (torch.cuda.device_count; default 1, or --torchrun's N)")
    p.add_argument("--torchrun", type=_gpus, default=None, metavar="N",
                   help="the script runs under torchrun with N processes on the node (torch.distributed); the probe is rank 0")
    p.add_argument("--gpu-name", default="NVIDIA A100-SXM4-40GB")
    p.add_argument("--gpu-memory-mib", type=_positive, default=40960)
    opts = p.parse_args(argv[:i])
    if opts.gpus is None:
        opts.gpus = opts.torchrun or 1
    elif opts.torchrun is not None and opts.torchrun > opts.gpus:
        _fail(2, f"--torchrun {opts.torchrun}: torchrun starts a process per GPU, and the script sees "
                 f"{opts.gpus} GPU(s) (--gpus)")
    return opts, argv[i + 1], argv[i + 2:]


def main_script(argv, t0):
    opts, path, script_args = parse_script(argv)
    _check_out(opts.out)
    if opts.steps > 8:
        _fail(2, "--steps above 8 records nothing new (the steady state is reached at step 2)")
    tmp = _private_tmpdir()
    try:
        import torch
    except ImportError as e:
        _fail(1, f"PyTorch is not importable by {sys.executable} ({e}); on Debian: apt install python3-torch python3-torchvision")
    torch.set_num_threads(1)
    from . import TRACE_VERSION, __version__
    from . import tensor as pt
    from .script import SAVES_SKIPPED, ScriptError, ScriptSpecError, TargetGpu, run_script
    from .trace import TraceWriter
    rec = TraceWriter(opts.out)
    rec.header({"model": "script:" + path, "script": path, "args": script_args, "steps": opts.steps,
                "gpus": opts.gpus, "gpu_name": opts.gpu_name, "gpu_memory_mib": opts.gpu_memory_mib,
                **({"torchrun": opts.torchrun} if opts.torchrun else {}),
                "torch": torch.__version__, "probe": __version__, "trace_version": TRACE_VERSION,
                "python": sys.executable})
    gpu = TargetGpu(opts.gpu_name, opts.gpu_memory_mib, opts.gpus)
    try:
        run = run_script(path, script_args, rec, opts.steps, gpu, opts.torchrun)
    except ScriptSpecError as e:
        _fail(2, e)
    except ScriptError as e:
        _fail(1, e)
    header = json.loads(rec.lines[1][2:])  # the optimizers are known only now
    header["optimizer"] = ",".join(sorted({type(e[0]).__name__.lower() for e in run.optimizers}))
    rec.lines[1] = "H " + json.dumps(header, sort_keys=True)
    rec.footer({"seconds": round(time.perf_counter() - t0, 3), "peak_live_bytes": rec.peak,
                "peak_phase": rec.peak_at[0], "peak_op": rec.peak_at[1], "allocations": rec.allocs,
                "cpu_fallbacks": dict(pt.CPU_FALLBACKS), "value_reads": pt.VALUE_READS[0],
                "saves_skipped": SAVES_SKIPPED[0]})
    rec.write()
    if os.environ.get("COLO_PROBE_VERBOSE"):
        sys.stderr.write(f"colo_probe: {rec.allocs} allocations, peak live {rec.peak / 2**20:.0f} MiB, "
                         f"{time.perf_counter() - t0:.2f} s\n")
    # The script was stopped mid-loop: its remaining frames, data loader workers and exit handlers
    # are not run on (the probe's process group is reaped by the caller).
    sys.stdout.flush()
    sys.stderr.flush()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)  # os._exit runs no atexit handler
    os._exit(0)


def main(argv=None):
    t0 = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    if "--script" in argv and ("--model" not in argv or argv.index("--script") < argv.index("--model")):
        return main_script(argv, t0)
    args = parse(argv)
    _check_out(args.out)
    _private_tmpdir()
    try:
        import torch
    except ImportError as e:
        _fail(1, f"PyTorch is not importable by {sys.executable} ({e}); on Debian: apt install python3-torch python3-torchvision")
    torch.set_num_threads(1)
    from . import TRACE_VERSION, __version__
    from .models import load, ProbeSpecError
    from .train import run_probe, default_input_fn
    if args.steps > 8:
        _fail(2, "--steps above 8 records nothing new (the steady state is reached at step 2)")
    # The model file's prints must not mix with a trace written to stdout.
    saved_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        spec = load(args.model, args.num_classes)
    except ProbeSpecError as e:
        _fail(2, e)
    except SystemExit as e:  # the file ended the process while being built
        _fail(1, f"{args.model}: the model file exited ({exit_status(e)}) while building the model")
    except Exception as e:  # the user's file raised while being built
        _fail(1, f"building {args.model} failed: {type(e).__name__}: {e}")
    finally:
        sys.stdout = saved_stdout
    if args.input is None and spec.default_input is not None:
        args.input = spec.default_input
    if spec.input_fn is None and args.input is None:
        _fail(2, f"{args.model}: the file has no input_fn(batch); give --input (e.g. 3x224x224)")
    if spec.check_input is not None and args.input is not None:
        try:
            spec.check_input(tuple(args.input))
        except ValueError as e:
            _fail(2, f"{args.model}: {e}")
    if args.data_parallel > 1 and spec.no_data_parallel:
        _fail(2, f"--data-parallel {args.data_parallel}: {args.model} is {spec.no_data_parallel}")
    dtype = getattr(torch, args.dtype)
    header = {"model": args.model, "batch": args.batch, "optimizer": args.optimizer, "amp": args.amp,
              "checkpointing": args.checkpointing, "set_to_none": not args.no_set_to_none,
              "foreach": args.foreach, "input": list(args.input) if args.input else None,
              "data_parallel": args.data_parallel,
              "dtype": args.dtype, "steps": args.steps, "torch": torch.__version__,
              "probe": __version__, "trace_version": TRACE_VERSION}
    opts = {"model": spec, "batch": args.batch, "optimizer": args.optimizer,
            "foreach": args.foreach != "off", "amp": args.amp, "checkpointing": args.checkpointing,
            "set_to_none": not args.no_set_to_none, "steps": args.steps, "out": args.out, "header": header,
            "input_shape": args.input, "data_parallel": args.data_parallel,
            "input_fn": default_input_fn(args.input, dtype, args.num_classes) if args.input else None}
    saved_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        rec = run_probe(opts)
    except SystemExit as e:  # input_fn / loss_fn / forward ended the process
        _fail(1, f"{args.model}: the model file exited ({exit_status(e)}) during the training step")
    except Exception as e:
        if args.dtype in ("int64", "int32"):
            hint = (f"the model cannot train on {args.dtype} inputs (integer inputs are token ids for an embedding; "
                    "images and features are float32)")
            if "isDifferentiableType" in str(e):  # PyTorch 1.13's own words for it are an internal assert
                _fail(1, f"probing {args.model} failed: {hint}")
            _fail(1, f"probing {args.model} failed on {args.dtype} inputs: {reason(e)}; perhaps {hint}")
        _fail(1, f"probing {args.model} failed: {reason(e)}")
    finally:
        sys.stdout = saved_stdout
    if os.environ.get("COLO_PROBE_VERBOSE"):
        sys.stderr.write(f"colo_probe: {rec.allocs} allocations, peak live {rec.peak / 2**20:.0f} MiB, "
                         f"{time.perf_counter() - t0:.2f} s\n")


if __name__ == "__main__":
    main()
