"""--script: a user's unmodified training script, run on the CPU with its CUDA device redirected to
the probe, stopped once it has taken `steps` optimizer steps.

What the script sees (TargetGpu): torch.cuda.is_available() is True; device_count,
get_device_name, get_device_properties (total_memory, compute capability, SMs), mem_get_info
and the memory statistics (memory_allocated, max_memory_allocated, memory_reserved,
memory_stats: the live and peak bytes recorded so far) answer as the target GPU would, and so
does PyTorch 2's device-generic torch.accelerator (with .memory), which current scripts (PyTorch's
own examples) choose their device with; on a PyTorch without it (1.13) the probe provides it, so a
script written for 2.x probes there too. A probe tensor's .device is cuda:0 and .is_cuda is True.
Whatever the script puts on "cuda" (model.to(device), .cuda(), device="cuda" factories, batches)
is a probe tensor and recorded, with everything its training step makes from it; what it keeps
alive between steps (the last logits, a list of losses that still hold their graphs, DataParallel's
gathered outputs) is in the trace because it is really kept.

Replaced while the script runs, as they would behave on the GPU: torch.cuda.amp.autocast,
torch.autocast("cuda") and torch.amp.autocast("cuda") (amp.Autocast), torch.cuda.amp.GradScaler
(ScriptGradScaler), torch.nn.DataParallel (train.DataParallel over the target's GPUs; the trace is
GPU 0's), Tensor.pin_memory (a no-op), torch.compile (eager: the trace is the eager step's), CUDA
streams and events (no-ops), torch.distributed and DistributedDataParallel (distributed.py: the
script is rank 0, under torchrun's environment with --torchrun N), torch.set_default_device, and
what a CPU build refuses but a CUDA build on the target answers (NVTX, torch.Generator("cuda"),
the memory-history recorder, utilization, the architecture list). An optimizer built with
foreach=None gets foreach=True, PyTorch 2's choice for CUDA tensors. Not supported: FSDP (refused),
CUDA graphs, custom CUDA extensions.

Phases: load until the first module call; forward from a module call; backward inside
Tensor.backward / torch.autograd.backward; optimizer in zero_grad, between backward and step
(gradient clipping, unscaling) and in step. The run stops after the `steps`-th step of every
optimizer the script built (a GAN's two optimizers each step twice); the trace is written at that
moment, with recording off, so what the script frees while it unwinds (its `finally` blocks run)
is not in it; the probe then exits without running the script's exit handlers. A script that takes
its steps without putting anything on the GPU (it chose the CPU) is refused: its trace would
estimate nothing but the context."""
import contextlib
import functools
import importlib
import inspect
import os
import runpy
import sys
import traceback
import types

import torch

from . import tensor as pt
from . import amp
from .amp import Autocast, NoAutocast, recompute_under_same_autocast
from .errors import exit_status, reason
from .patches import MISSING as _MISSING, Patches


class ProbeStop(BaseException):
    """Raised out of the script's optimizer step once the trace is complete. A BaseException, so a
    script's `except Exception` does not swallow it."""


class TargetGpu:
    """The GPU the script believes it runs on. Default: the calibration profile's A100 40 GB."""

    def __init__(self, name="NVIDIA A100-SXM4-40GB", memory_mib=40960, count=1, capability=(8, 0), sms=108):
        self.name = name
        self.total = memory_mib << 20
        self.count = count
        self.capability = capability
        self.sms = sms


class _Properties:
    def __init__(self, gpu):
        self.name = gpu.name
        self.total_memory = gpu.total
        self.major, self.minor = gpu.capability
        self.multi_processor_count = gpu.sms
        self.is_integrated = 0
        self.is_multi_gpu_board = 0

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory >> 20}MB, multi_processor_count={self.multi_processor_count})")


class _Event:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait(self, *args, **kwargs):
        pass

    def query(self):
        return True

    def elapsed_time(self, other):
        return 0.0


class _Stream(_Event):
    """A torch.cuda.Stream: its id goes into the trace's M records made while it is current, so
    the replay keeps its blocks in a pool of their own, as the caching allocator does per stream."""
    _created = 0

    def __init__(self, *args, stream_id=None, **kwargs):
        super().__init__()
        if stream_id is None:
            _Stream._created += 1
            stream_id = min(_Stream._created, 1023)  # the trace's stream field: 0 (default) … 1023
        self.stream_id = stream_id

    def __eq__(self, other):
        return isinstance(other, _Stream) and other.stream_id == self.stream_id

    def __hash__(self):
        return hash(self.stream_id)

    def wait_stream(self, *args, **kwargs):
        pass

    def wait_event(self, *args, **kwargs):
        pass

    def record_event(self, event=None):
        return event or _Event()


def _lerp_weights(weight, n):
    return list(weight) if isinstance(weight, (list, tuple)) else [weight] * n


def _foreach_lerp_(selves, ends, weight):
    for a, b, w in zip(selves, ends, _lerp_weights(weight, len(selves))):
        a.lerp_(b, w)


def _foreach_lerp(selves, ends, weight):
    return [a.lerp(b, w) for a, b, w in zip(selves, ends, _lerp_weights(weight, len(selves)))]


def _attention_module():
    """torch.nn.attention for a PyTorch without it (1.13): sdpa_kernel(backends) sets the SDPA flags
    1.13 has (flash stands for every fused backend, as target_kernels reads them)."""
    import enum
    mod = types.ModuleType("torch.nn.attention")

    class SDPBackend(enum.IntEnum):
        ERROR = -1
        MATH = 0
        FLASH_ATTENTION = 1
        EFFICIENT_ATTENTION = 2
        CUDNN_ATTENTION = 3
        OVERRIDEABLE = 4

    @contextlib.contextmanager
    def sdpa_kernel(backends, set_priority=False):
        chosen = set(backends) if isinstance(backends, (list, tuple, set)) else {backends}
        b = torch.backends.cuda
        before = (b.flash_sdp_enabled(), b.math_sdp_enabled())
        b.enable_flash_sdp(bool(chosen - {SDPBackend.MATH, SDPBackend.ERROR}))
        b.enable_math_sdp(SDPBackend.MATH in chosen)
        try:
            yield
        finally:
            b.enable_flash_sdp(before[0])
            b.enable_math_sdp(before[1])
    mod.SDPBackend = SDPBackend
    mod.sdpa_kernel = sdpa_kernel
    return mod


class _AnyGenerator(type(torch.Generator)):
    """isinstance(g, torch.Generator) stays true of every generator (torch.default_generator too)
    while torch.Generator is the class below."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _REAL_GENERATOR)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _REAL_GENERATOR)


_REAL_GENERATOR = torch.Generator


class _Generator(torch.Generator, metaclass=_AnyGenerator):
    """torch.Generator: a CPU generator where a CUDA one is asked for (a build without CUDA refuses
    it); still an instance of torch.Generator."""

    def __new__(cls, device="cpu"):
        d = torch.device(device) if not isinstance(device, torch.device) else device
        return super().__new__(cls, "cpu" if d.type in ("cuda", "meta") else device)


class ScriptGradScaler:
    """torch.cuda.amp.GradScaler's GPU memory as amp.GradScalerModel, with the full user-facing API
    (scale, unscale_, step, update, get_scale, state_dict, is_enabled)."""

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        self.enabled = enabled
        self.init_scale = float(init_scale)
        self.scale_t = None
        self.unscaled = set()

    def is_enabled(self):
        return self.enabled

    def scale(self, outputs):
        if not self.enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if self.scale_t is None:
            self.scale_t = torch.full((), self.init_scale, dtype=torch.float32, device="cuda")
        return outputs * self.scale_t

    def unscale_(self, optimizer):
        if not self.enabled or id(optimizer) in self.unscaled or self.scale_t is None:
            return
        self.unscaled.add(id(optimizer))
        found_inf = torch.zeros((1,), dtype=torch.float32, device="cuda")
        inv = self.scale_t.reciprocal()
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.mul_(inv)
        del found_inf, inv

    def step(self, optimizer, *args, **kwargs):
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        self.unscale_(optimizer)
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        self.unscaled.clear()
        if self.enabled and self.scale_t is not None:
            self.scale_t.mul_(1.0)

    def get_scale(self):
        return self.init_scale if self.enabled else 1.0

    def state_dict(self):
        return {"scale": self.get_scale()} if self.enabled else {}

    def load_state_dict(self, state):
        pass


def _set_to_none_by_default(zero_grad):
    """zero_grad() as PyTorch 2 has it: set_to_none=True unless the script says otherwise. PyTorch
    1.13's default, False, keeps every gradient allocated (zeroed) into the next forward; a job on
    a GPU never runs Debian's CPU-only 1.13, so the probe takes the target's default (as it takes
    PyTorch 2's optimizers and attention) on every version."""
    param = inspect.signature(zero_grad).parameters.get("set_to_none")
    if param is None or param.default is True:
        return zero_grad

    def zero_grad_2(self, set_to_none=True):
        return zero_grad(self, set_to_none=set_to_none)
    zero_grad_2.__wrapped__ = zero_grad
    return zero_grad_2


def _integer_devices_are_cuda(p):
    """PyTorch 2.5 and later read an integer device (`model.to(rank)`, `torch.device(0)`) as the
    current accelerator, which a CPU build lacks ("Cannot access accelerator device when none is
    available"); on the target it is a CUDA ordinal, as PyTorch < 2.5 reads it everywhere. Where the
    installed PyTorch refuses, torch.device and Module.to's parser (torch._C._nn._parse_to) read it
    so. Tensor.to(0) and factories' device=0 reach the probe before any parser (factories.py)."""
    try:
        torch.device(0)
        return
    except RuntimeError:
        pass
    real = torch.device

    def cuda(d):
        return real("cuda", d) if isinstance(d, int) and not isinstance(d, bool) else d

    class _DeviceType(type):  # isinstance(x, torch.device) as before
        def __instancecheck__(cls, obj):
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real)

    class device(metaclass=_DeviceType):
        def __new__(cls, *args, **kwargs):
            return real(*((cuda(args[0]),) + args[1:] if args else args), **kwargs)
    parse_to = torch._C._nn._parse_to

    def parse_to_cuda(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = cuda(kwargs["device"])
        return parse_to(*((cuda(args[0]),) + args[1:] if args else args), **kwargs)
    p.set(torch, "device", device)
    p.set(torch._C._nn, "_parse_to", parse_to_cuda)


def _cuda_autocast_to(dtype):
    """CUDA autocast to `dtype`: float16 (the default) or bfloat16 casts; float32 changes nothing
    (llm.c wraps its forward in autocast whatever --dtype says: an fp32 run keeps fp32 tensors)."""
    if dtype is None or dtype == torch.float16:
        return Autocast("fp16")
    if dtype == torch.bfloat16:
        return Autocast("bf16")
    if dtype == torch.float32:
        return NoAutocast()
    raise NotImplementedError(f"autocast to {dtype} on CUDA is not supported by the probe (float16, bfloat16 or "
                              "float32)")


def _autocast_factory(real):
    def autocast(device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if device_type != "cuda":
            return real(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
        if not enabled:
            return NoAutocast()
        return _cuda_autocast_to(dtype)
    return autocast


SAVES_SKIPPED = [0]  # torch.save calls the script made (not written), for the trace footer


def _skip_save(obj, f, *args, **kwargs):
    """torch.save copies GPU storages to host memory: no GPU memory, so nothing to record, and the
    probe's tensors have no values to write. The file is left as it was."""
    SAVES_SKIPPED[0] += 1


def _checkpoint_factory(real):
    """torch.utils.checkpoint.checkpoint whose recompute runs under the forward's autocast."""
    def checkpoint(function, *args, **kwargs):
        return real(recompute_under_same_autocast(function), *args, **kwargs)
    return checkpoint


def _without_generator(init):
    @functools.wraps(init)
    def wrapped(*args, generator=None, **kwargs):
        return init(*args, **kwargs)
    return wrapped


def _parameter_instancecheck(cls, instance):
    """PyTorch 2's _ParameterMeta.__instancecheck__ (torch/nn/parameter.py)."""
    if cls is torch.nn.Parameter and isinstance(instance, torch.Tensor) and getattr(instance, "_is_param", False):
        return True
    return super(type(torch.nn.Parameter), cls).__instancecheck__(instance)


class _NoOp(contextlib.ContextDecorator):
    """A region that does nothing, as a `with` block or as a decorator (NVTX ranges)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _cuda_autocast(enabled=True, dtype=torch.float16, cache_enabled=True):
    if not enabled:
        return NoAutocast()
    return _cuda_autocast_to(dtype)


class ScriptRun:
    """The state of one probed script: the recorder, the optimizers it built and their steps."""

    def __init__(self, rec, steps, gpu, torchrun=None):
        self.rec = rec
        self.steps = steps
        self.gpu = gpu
        self.torchrun = torchrun  # processes torchrun starts (the script is rank 0), None without torchrun
        self.script = None        # the script's path
        self.optimizers = []   # [optimizer, steps taken]
        self.backwards = 0     # backward passes while no optimizer was built (hand-written updates)
        self.in_backward = False
        self.recorded = 0      # the last S record written
        self.done = False
        self.patches = Patches()

    # --- the optimizer step: counts, labels, and ends the run --------------------------------------
    def _adopt(self, opt):
        """Called when the script builds an optimizer: its step is counted from now on."""
        def default_to_foreach(group):
            if group.get("foreach", False) is None and not group.get("fused", False):
                group["foreach"] = True  # PyTorch 2's default for CUDA tensors, decided at each step
        for group in opt.param_groups:
            default_to_foreach(group)
        add_param_group = opt.add_param_group

        def add_and_default(group):  # a group added later (llm.c's no-decay group) is stepped alike
            add_param_group(group)
            default_to_foreach(opt.param_groups[-1])
        opt.add_param_group = add_and_default
        entry = [opt, 0]
        self.optimizers.append(entry)
        run = self
        from .optim2 import fused_step
        from . import lbfgs
        if getattr(opt, "_colo_fused", None):
            orig = fused_step(opt)
        elif lbfgs.uses_pytorch_step(opt):  # its step's length follows values the probe lacks
            orig = lbfgs.longest_path_step(opt)
        else:
            orig = opt.step

        def step(self_opt, *args, **kwargs):
            if run.done:  # the script caught the stop (a bare except) and stepped on: stop it again
                raise ProbeStop()
            before = run.rec.phase
            run.rec.phase = "optimizer"
            result = orig(*args, **kwargs)
            entry[1] += 1
            done = min(e[1] for e in run.optimizers)  # iterations every optimizer has finished
            if done > run.recorded:
                run.recorded = done
                run.rec.step(done)
            run.rec.phase = "forward" if before == "load" else before
            if all(e[1] >= run.steps for e in run.optimizers):
                run.finish()
                raise ProbeStop()
            return result
        opt.step = types.MethodType(step, opt)  # a bound method, as LR schedulers expect

    def _rebind(self, moved):
        """The parameters `moved` maps (id of the old object -> the new one) replace the old ones in
        every optimizer built so far: groups and any state."""
        for opt, _ in self.optimizers:
            for group in opt.param_groups:
                group["params"] = [moved.get(id(q), q) for q in group["params"]]
            for old_id, new in moved.items():
                for q in list(opt.state.keys()):
                    if id(q) == old_id:
                        opt.state[new] = opt.state.pop(q)

    def finish(self):
        """The trace is complete: stop recording (what the script frees while unwinding is not its
        steady state) and write it."""
        if self.done:
            return
        self.done = True
        pt.RECORDER = None

    # --- the environment the script runs in --------------------------------------------------------
    def install(self):
        p = self.patches
        gpu = self.gpu
        run = self
        rec = self.rec

        def device_index(device=None):
            if device is None:
                return 0
            if isinstance(device, int):
                index = device
            else:
                d = torch.device(device) if not isinstance(device, torch.device) else device
                index = d.index or 0
            if index < 0 or index >= gpu.count:
                raise RuntimeError(f"CUDA error: invalid device ordinal {index} (the probe's target has {gpu.count} GPU(s))")
            return index

        cuda = torch.cuda
        p.set(cuda, "is_available", lambda: True)
        p.set(cuda, "device_count", lambda: gpu.count)
        p.set(cuda, "current_device", lambda: 0)
        p.set(cuda, "set_device", lambda device: device_index(device) and None)
        p.set(cuda, "get_device_name", lambda device=None: (device_index(device), gpu.name)[1])
        p.set(cuda, "get_device_properties", lambda device=None: (device_index(device), _Properties(gpu))[1])
        p.set(cuda, "get_device_capability", lambda device=None: (device_index(device), gpu.capability)[1])
        p.set(cuda, "is_bf16_supported", lambda *a, **k: gpu.capability[0] >= 8)
        p.set(cuda, "is_initialized", lambda: True)
        # PyTorch 2's Adam/AdamW step asks whether a CUDA graph is being captured (a real CUDA call
        # on a CUDA build: it fails with no device, or would wake a real one); the probe never is.
        for owner in (cuda, getattr(cuda, "graphs", None)):
            if owner is not None and hasattr(owner, "is_current_stream_capturing"):
                p.set(owner, "is_current_stream_capturing", lambda: False)
        p.set(cuda, "init", lambda: None)
        for name in ("synchronize", "reset_peak_memory_stats", "reset_max_memory_allocated",
                     "reset_max_memory_cached", "reset_accumulated_memory_stats", "manual_seed", "manual_seed_all",
                     "seed", "seed_all", "ipc_collect", "set_sync_debug_mode"):
            if hasattr(cuda, name):
                p.set(cuda, name, lambda *a, **k: None)
        # What changes the caching allocator's reserved memory goes into the trace for the replay.
        p.set(cuda, "empty_cache", lambda: rec.empty_cache())

        def set_per_process_memory_fraction(fraction, device=None):
            device_index(device)
            if not isinstance(fraction, float):  # PyTorch's own checks and messages
                raise TypeError("Invalid type for fraction argument, must be `float`")
            if not 0 <= fraction <= 1:  # NaN too, as PyTorch's setMemoryFraction refuses it
                raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
            rec.memory_fraction(fraction)
        p.set(cuda, "set_per_process_memory_fraction", set_per_process_memory_fraction)

        def set_allocator_settings(settings):
            # Before the GPU is first used, with no PYTORCH_CUDA_ALLOC_CONF: the settings the job runs
            # with. Anything else (a change mid-run, a merge with the environment's) is refused,
            # not guessed.
            if rec.next_id != 0:
                raise RuntimeError("torch.cuda.memory._set_allocator_settings after the GPU was first used: the probe "
                                   "does not follow allocator settings changed during a run; set "
                                   "PYTORCH_CUDA_ALLOC_CONF in the job's environment instead")
            if os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF"):
                raise RuntimeError("torch.cuda.memory._set_allocator_settings on top of PYTORCH_CUDA_ALLOC_CONF: the "
                                   "probe does not merge the two; give the settings in one place")
            rec.alloc_conf_set = str(settings)
        if hasattr(torch.cuda, "memory") and hasattr(torch.cuda.memory, "_set_allocator_settings"):
            p.set(torch.cuda.memory, "_set_allocator_settings", set_allocator_settings)
        for name, fn in (("memory_allocated", self._live), ("memory_reserved", self._live),
                         ("memory_cached", self._live), ("max_memory_allocated", self._peak),
                         ("max_memory_reserved", self._peak), ("max_memory_cached", self._peak)):
            if hasattr(cuda, name):
                p.set(cuda, name, fn)
        p.set(cuda, "mem_get_info", self._free_and_total)
        p.set(cuda, "memory_stats", self._memory_stats)
        p.set(cuda, "memory_summary", lambda *a, **k: f"colo probe: {rec.live >> 20} MiB live, peak {rec.peak >> 20} MiB")
        p.set(cuda, "Event", _Event)
        p.set(cuda, "Stream", _Stream)
        p.set(cuda, "current_stream", lambda device=None: _Stream(stream_id=rec.stream))
        p.set(cuda, "default_stream", lambda device=None: _Stream(stream_id=0))

        @contextlib.contextmanager
        def stream(stream=None):  # PyTorch's parameter name: timm's prefetcher passes stream=
            # Allocations inside come from that stream's pool (a prefetcher's next batch, say).
            if stream is None:
                yield
                return
            before, rec.stream = rec.stream, stream.stream_id
            try:
                yield
            finally:
                rec.stream = before
        p.set(cuda, "stream", stream)
        # A prefetcher hands the batch it copied on its side stream to the default one: the block
        # stays in the side stream's pool either way (the replay keeps pools per stream; the
        # event-deferred free changes nothing in a step replayed in order).
        p.set(torch.Tensor, "record_stream", lambda self, s: None)
        if hasattr(cuda, "set_stream"):
            p.set(cuda, "set_stream", self._set_stream)
        p.set(cuda, "get_rng_state", lambda device="cuda": torch.zeros(16, dtype=torch.uint8))
        p.set(cuda, "set_rng_state", lambda *a, **k: None)
        # Autocast and the gradient scaler, as CUDA runs them.
        p.set(cuda.amp, "autocast", _cuda_autocast)
        p.set(cuda.amp, "GradScaler", ScriptGradScaler)
        autocast = _autocast_factory(torch.autocast)
        p.set(torch, "autocast", autocast)
        if hasattr(torch, "amp") and hasattr(torch.amp, "autocast"):  # the same class as torch.autocast
            p.set(torch.amp, "autocast", autocast)
        # custom_fwd/custom_bwd enter autocast by their module's own name for it
        import torch.cuda.amp.autocast_mode as cuda_autocast_mode
        p.set(cuda_autocast_mode, "autocast", _cuda_autocast)
        try:
            import torch.amp.autocast_mode as amp_autocast_mode  # PyTorch 2
            p.set(amp_autocast_mode, "autocast", autocast)
        except ImportError:
            pass
        # and what the regions are, asked
        enabled, gpu_dtype, dtype_of = amp.autocast_state_queries(
            torch.is_autocast_enabled, torch.get_autocast_gpu_dtype, getattr(torch, "get_autocast_dtype", None))
        p.set(torch, "is_autocast_enabled", enabled)
        p.set(torch, "get_autocast_gpu_dtype", gpu_dtype)
        if hasattr(torch, "get_autocast_dtype"):
            p.set(torch, "get_autocast_dtype", dtype_of)
        self._install_accelerator(device_index)
        _integer_devices_are_cuda(p)
        # A checkpoint saved within the first two steps (an "initial" one): not written.
        p.set(torch, "save", _skip_save)
        from . import checkpoint_load
        checkpoint_load.install(p)  # and one loaded onto the GPU is there
        import torch.utils.checkpoint as checkpoint_module
        p.set(checkpoint_module, "checkpoint", _checkpoint_factory(checkpoint_module.checkpoint))
        # PyTorch 2's spellings (torch.amp.GradScaler from 2.3, torch.compile from 2.0) exist under the
        # probe on 1.13 too, as torch.accelerator does: colod's probe Python may be older than the job's.
        if hasattr(torch, "amp"):
            p.set(torch.amp, "GradScaler", lambda device="cuda", *a, **k: ScriptGradScaler(*a, **k))
        p.set(torch, "compile", lambda model=None, *a, **k: model if model is not None else (lambda m: m))
        from . import lazy_modules, torchscript
        lazy_modules.install(p)  # nn.LazyLinear and co. moved to the GPU before their first forward
        torchscript.install(p)  # torch.jit.script/trace of a module: the eager module, as torch.compile
        # torch.set_default_device (PyTorch 2; provided on 1.13 too): factories without device= go there.
        from . import factories as factories_module

        def set_default_device(device):
            factories_module.DEFAULT_DEVICE[0] = None if device is None else torch.device(device)
            if factories_module.DEFAULT_DEVICE[0] is not None:
                factories_module._is_gpu(factories_module.DEFAULT_DEVICE[0])  # cuda:N must be one of the target's
        p.set(factories_module, "DEFAULT_DEVICE", [None])
        p.set(factories_module, "META_IS_GPU", [False])
        p.set(torch, "set_default_device", set_default_device)
        from . import legacy_types
        legacy_types.install(p, factories_module)  # torch.cuda.FloatTensor and co.
        p.set(torch, "get_default_device", lambda: (
            torch.device("cuda", 0) if factories_module._is_gpu(factories_module.default_device())
            else factories_module.default_device() or torch.device("cpu")))
        # torch._foreach_lerp(_) (PyTorch 2: EMA updates such as timm's ModelEmaV3), provided on 1.13:
        # per tensor, in place or one new tensor each, as the multi-tensor kernel allocates.
        if not hasattr(torch, "_foreach_lerp_"):
            p.set(torch, "_foreach_lerp_", _foreach_lerp_)
            p.set(torch, "_foreach_lerp", _foreach_lerp)
        # torch.nn.attention (PyTorch 2.3+: SDPBackend, sdpa_kernel), provided on 1.13 over its flags,
        # and PyTorch 2.0-2.2's torch.backends.cuda.sdp_kernel(enable_mem_efficient=...) (1.13's
        # knows flash and math only; the fused backends map to its flash flag).
        if not hasattr(torch.nn, "attention"):
            attention = _attention_module()
            p.set(torch.nn, "attention", attention)
            p.set_module("torch.nn.attention", attention)

            def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
                chosen = ({attention.SDPBackend.FLASH_ATTENTION} if enable_flash or enable_mem_efficient or enable_cudnn
                          else set()) | ({attention.SDPBackend.MATH} if enable_math else set())
                return attention.sdpa_kernel(list(chosen))
            p.set(torch.backends.cuda, "sdp_kernel", sdp_kernel)
        # PyTorch 2 spellings a script may use on its way to training, provided on 1.13: the inductor's
        # settings (`import torch._inductor.config`; torch.compile is eager under the probe) and
        # nn.init's generator= (PyTorch 2.1; the probe's values are never used, so it is dropped).
        try:
            importlib.import_module("torch._inductor.config")
        except ImportError:
            inductor = types.ModuleType("torch._inductor")
            inductor.config = types.ModuleType("torch._inductor.config")
            inductor.__path__ = []
            p.set(torch, "_inductor", inductor)
            p.set_module("torch._inductor", inductor)
            p.set_module("torch._inductor.config", inductor.config)
        for name in ("uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                     "kaiming_normal_", "orthogonal_", "sparse_"):
            init = getattr(torch.nn.init, name, None)
            if init is not None and "generator" not in inspect.signature(init).parameters:
                p.set(torch.nn.init, name, _without_generator(init))
        # 1.13 takes a tensor subclass flagged as a parameter (the probe's parameters) for an instance of
        # every Parameter class, UninitializedParameter included, so Lightning's summary and lazy-module
        # checks see uninitialised parameters; PyTorch 2's check applies the flag to Parameter only.
        meta = type(torch.nn.Parameter)
        if int(torch.__version__.split(".")[0]) < 2 and "__instancecheck__" in meta.__dict__:
            p.set(meta, "__instancecheck__", _parameter_instancecheck)
        # A CUDA generator (torch.Generator(device="cuda")) holds a seed and an offset on the host: a
        # CPU generator stands in (the probe's random values are never used).
        p.set(torch, "Generator", _Generator)
        # NVTX ranges and the memory-history recorder are profiling aids with no GPU memory of their own.
        for name in ("range_push", "range_pop", "range_start", "range_end", "mark"):
            if hasattr(cuda, "nvtx") and hasattr(cuda.nvtx, name):
                p.set(cuda.nvtx, name, lambda *a, **k: 0)
        if hasattr(cuda, "nvtx"):
            p.set(cuda.nvtx, "range", lambda *a, **k: _NoOp())
        for name in ("_record_memory_history", "_dump_snapshot"):  # provided where missing (2.1+)
            p.set(cuda.memory, name, lambda *a, **k: None)
        # What nvidia-smi would say of an idle target before the job starts (assumed: 0 %), and the
        # architecture a CUDA build for it has.
        for name in ("utilization", "memory_usage"):
            p.set(cuda, name, lambda device=None: (device_index(device), 0)[1])
        arch = f"sm_{gpu.capability[0]}{gpu.capability[1]}"
        p.set(cuda, "get_arch_list", lambda: [arch])
        p.set(cuda, "get_gencode_flags", lambda: f"-gencode compute=compute_{arch[3:]},code={arch}")
        # Host-side pinned buffers need a CUDA driver; they are not GPU memory.
        p.set(torch.Tensor, "pin_memory", lambda self, *a, **k: self)
        p.set(torch.Tensor, "is_pinned", lambda self, *a, **k: False)
        # The probe's tensors are the target GPU's.
        p.set(pt.ProbeTensor, "device", property(lambda self: torch.device("cuda", 0)))
        p.set(pt.ProbeTensor, "is_cuda", property(lambda self: True))
        p.set(pt.ProbeTensor, "is_meta", property(lambda self: False))  # meta is how the probe holds them
        p.set(pt.ProbeTensor, "get_device", lambda self: 0)
        # DataParallel over the target's GPUs.
        from .train import ScriptDataParallel
        ScriptDataParallel.gpus = gpu.count
        from . import factories
        factories.TARGET_GPUS[0] = gpu.count
        p.set(torch.nn, "DataParallel", ScriptDataParallel)
        p.set(torch.nn.parallel, "DataParallel", ScriptDataParallel)
        # torch.distributed as rank 0 of the job; DistributedDataParallel's buckets and broadcasts.
        from . import torch113_imports
        torch113_imports.install(p)  # before anything imports torch.distributed._shard (FSDP, Lightning)
        from .distributed import FakeDistributed
        FakeDistributed(self.torchrun).install(p)
        from . import children
        children.install(p, self.script)  # no GPU for child processes; other ranks are not run
        from . import detection
        detection.install(p)  # torchvision's detection sampler: the sample that records the most
        # Optimizers: counted steps; phases around zero_grad and backward.
        init = torch.optim.Optimizer.__init__

        def optimizer_init(self_opt, *args, **kwargs):
            init(self_opt, *args, **kwargs)
            run._adopt(self_opt)
        p.set(torch.optim.Optimizer, "__init__", optimizer_init)
        # model.cuda(): PyTorch swaps each Parameter's data in place, so a Parameter two modules
        # share (tied embeddings: `lm_head.weight = wte.weight`) stays one. The probe's move cannot
        # (a CPU tensor's data cannot become a subclass'), and Module._apply makes a new Parameter
        # per module entry: a tied weight would become two, each with a gradient and optimizer
        # state. So one move per tensor across the whole call (`once`), and entries that held one
        # Parameter hold one new Parameter. Optimizers built before the move are pointed at the new
        # ones, or their state would never reach the GPU (the trace lost Adam's two tensors).
        # Not for the script's own meta tensors (to_empty of a model built on the meta device):
        # PyTorch cannot swap a meta tensor's data for a GPU one either, so it makes the new
        # Parameter per entry itself, and a tied weight becomes two (PyTorch 1.13 and 2.x alike).
        module_apply = torch.nn.Module._apply
        applying = [False]  # inside the outermost call: the children's calls pass through

        def apply_and_rebind(self_mod, fn, *args, **kwargs):
            if applying[0]:
                return module_apply(self_mod, fn, *args, **kwargs)
            memo = {}

            def once(t):
                if factories.scripts_own_meta(t):
                    return fn(t)
                if id(t) not in memo:
                    memo[id(t)] = (t, fn(t))  # t kept alive: its id is not reused within the call
                return memo[id(t)][1]
            before = {(id(m), k): q for m in self_mod.modules() for k, q in m._parameters.items() if q is not None}
            applying[0] = True
            try:
                out = module_apply(self_mod, once, *args, **kwargs)
            finally:
                applying[0] = False
            moved = {}
            for m in self_mod.modules():
                for k, q in m._parameters.items():
                    old = before.get((id(m), k))
                    if old is not None and q is not old and not factories.scripts_own_meta(old):
                        m._parameters[k] = moved.setdefault(id(old), q)
            if moved:
                run._rebind(moved)
            return out
        p.set(torch.nn.Module, "_apply", apply_and_rebind)
        for owner in (torch.optim.Optimizer, torch.nn.Module):
            p.set(owner, "zero_grad", self._in_phase(_set_to_none_by_default(owner.zero_grad), "optimizer",
                                                     after="forward"))
        p.set(torch.Tensor, "backward", self._counted(self._in_phase(torch.Tensor.backward, "backward", after="optimizer")))
        p.set(torch.autograd, "backward",
              self._counted(self._in_phase(torch.autograd.backward, "backward", after="optimizer")))
        for name in ("clip_grad_norm_", "clip_grad_value_"):
            fn = getattr(torch.nn.utils, name)
            p.set(torch.nn.utils, name, self._in_phase(fn, "optimizer", after=None))
        hooks = torch.nn.modules.module

        def forward_pre_hook(module, inputs):
            if rec.phase in ("load", "optimizer"):
                rec.phase = "forward"
        self.hook = hooks.register_module_forward_pre_hook(forward_pre_hook)

    # What torch.cuda and torch.accelerator answer alike: the bytes recorded so far, and the stream.
    def _live(self, device=None):
        return self.rec.live

    def _peak(self, device=None):
        return self.rec.peak

    def _free_and_total(self, device=None):
        return max(0, self.gpu.total - self.rec.live), self.gpu.total

    def _memory_stats(self, device=None):
        """torch.cuda.memory_stats()'s usual keys."""
        stats = {"num_alloc_retries": 0, "num_ooms": 0}
        for kind in ("allocated_bytes", "reserved_bytes", "active_bytes"):
            stats[f"{kind}.all.current"] = self.rec.live
            stats[f"{kind}.all.peak"] = self.rec.peak
        return stats

    def _set_stream(self, s):
        self.rec.stream = s.stream_id if s is not None else 0

    def _install_accelerator(self, device_index):
        """torch.accelerator (PyTorch 2.6+; .memory from 2.8) as the target GPU answers it: patched
        where PyTorch has it, provided where it does not."""
        p, gpu, rec = self.patches, self.gpu, self.rec
        acc = getattr(torch, "accelerator", None)
        if acc is None:
            acc = types.ModuleType("torch.accelerator")
            p.set(torch, "accelerator", acc)
            p.set_module("torch.accelerator", acc)
        memory = getattr(acc, "memory", None)
        if memory is None:
            memory = types.ModuleType("torch.accelerator.memory")
            p.set(acc, "memory", memory)
            p.set_module("torch.accelerator.memory", memory)

        def set_device_index(device):
            device_index(device)

        @contextlib.contextmanager
        def device_index_context(device):
            if device is not None:
                device_index(device)
            yield
        for name, fn in (("device_count", lambda: gpu.count),
                         ("is_available", lambda: True),
                         ("current_accelerator", lambda check_available=False: torch.device("cuda")),
                         ("set_device_index", set_device_index), ("set_device_idx", set_device_index),
                         ("current_device_index", lambda: 0), ("current_device_idx", lambda: 0),
                         ("set_stream", self._set_stream),
                         ("current_stream", lambda device=None: _Stream(stream_id=rec.stream)),
                         ("synchronize", lambda device=None: None),
                         ("device_index", device_index_context)):
            p.set(acc, name, fn)
        for name, fn in (("memory_allocated", self._live), ("memory_reserved", self._live),
                         ("max_memory_allocated", self._peak), ("max_memory_reserved", self._peak),
                         ("memory_stats", self._memory_stats),
                         ("empty_cache", lambda: rec.empty_cache()),
                         ("get_memory_info", self._free_and_total),
                         ("reset_peak_memory_stats", lambda device=None: None),
                         ("reset_accumulated_memory_stats", lambda device=None: None)):
            p.set(memory, name, fn)

    def _counted(self, backward):
        """A script that updates its weights by hand (`p.data.add_(p.grad, alpha=-lr)`, PyTorch's
        word_language_model) builds no optimizer to count. Until it builds one, each backward pass
        after the first closes an iteration, and the run stops as the (steps + 1)-th begins: the
        `steps` iterations before it, updates included, are in the trace."""
        run = self

        def counted(*args, **kwargs):
            if run.in_backward:  # Tensor.backward calls torch.autograd.backward: one pass
                return backward(*args, **kwargs)
            if not run.optimizers and not run.done:
                run.backwards += 1
                if run.backwards > 1:
                    run.recorded = run.backwards - 1
                    run.rec.step(run.recorded)
                    if run.recorded >= run.steps:
                        run.finish()
                        raise ProbeStop()
            run.in_backward = True
            try:
                return backward(*args, **kwargs)
            finally:
                run.in_backward = False
        counted.__wrapped__ = backward
        counted.__name__ = getattr(backward, "__name__", "backward")
        return counted

    def _in_phase(self, fn, phase, after):
        rec = self.rec

        def wrapped(*args, **kwargs):
            rec.phase = phase
            try:
                return fn(*args, **kwargs)
            finally:
                if after is not None:
                    rec.phase = after
        wrapped.__wrapped__ = fn
        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        return wrapped

    def uninstall(self):
        self.hook.remove()
        self.patches.undo()


def run_script(path, args, rec, steps, gpu, torchrun=None):
    """Runs `path` as __main__ with sys.argv = [path] + args under the probe (as rank 0 of `torchrun`
    processes when given: distributed.py); returns the ScriptRun. Raises ScriptError when the script
    ends (or fails) before the trace is complete."""
    from . import meta_kernels
    from .distributed import torchrun_environment
    from .factories import ProbeDevice
    from .optim2 import pytorch2_optimizers
    from .target_kernels import target_gpu_kernels

    if not os.path.isfile(path):
        raise ScriptSpecError(f"--script {path}: no such file")
    run = ScriptRun(rec, steps, gpu, torchrun)
    run.script = path
    meta_kernels.register()
    saved_argv, saved_path, saved_stdout, saved_stderr = sys.argv, list(sys.path), sys.stdout, sys.stderr
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    # The script's prints must not mix with a trace written to stdout; its last line on stderr
    # (argparse's "error: …") explains an exit.
    sys.stdout = sys.stderr = _LastLine(saved_stderr)
    pt.RECORDER = rec
    pt.KEEP_VALUES[0] = True  # a script reads values back (tensor.py, "Values")
    rec.phase = "load"
    run.install()
    failure = None
    from . import train
    device = ProbeDevice()
    train._DEVICE[0] = device  # DataParallel's GPU-0 buffers are named through it
    try:
        with torchrun_environment(torchrun), visible_devices(gpu.count), target_gpu_kernels(), pytorch2_optimizers(), \
                device:
            runpy.run_path(path, run_name="__main__")
    except ProbeStop:
        pass
    except SystemExit as e:
        if not run.done:
            said = sys.stderr.last if isinstance(sys.stderr, _LastLine) and e.code not in (0, None) else ""
            failure = f"the script exited ({exit_status(e)}) {_progress(run)}" + (f" ({said})" if said else "")
    except BaseException as e:  # noqa: B902 - the script's own failure, reported on one line
        if not run.done:
            where = _script_frame(e, path)
            failure = f"the script raised {reason(e)}{where} {_progress(run)}"
            if os.environ.get("COLO_PROBE_VERBOSE"):  # the whole story, for whoever debugs a probe
                saved_stderr.write("".join(traceback.format_exception(e)))
    finally:
        pt.RECORDER = None
        pt.KEEP_VALUES[0] = False
        train._DEVICE[0] = None
        run.uninstall()
        sys.argv, sys.path[:], sys.stdout, sys.stderr = saved_argv, saved_path, saved_stdout, saved_stderr
    if failure is None and not run.done:
        failure = f"the script finished {_progress(run)}"
    if failure is not None:
        raise ScriptError(f"{failure}; the probe needs {steps} optimizer steps")
    if rec.next_id == 0:
        raise ScriptError(f"the script took {steps} optimizer steps without putting anything on the GPU: it trained on "
                          "the CPU (does it choose its device by a flag, or by an API the probe does not answer?)")
    return run


@contextlib.contextmanager
def visible_devices(count):
    """CUDA_VISIBLE_DEVICES as the job will have it (colod and Slurm set it to the job's GPUs; here
    their ordinals 0..count-1): scripts and libraries count their GPUs by it (PyTorch Lightning on
    PyTorch < 2, `len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))` in research code). Only the
    script's view of os.environ changes: the process environment, which CUDA's driver and child
    processes read, keeps the runner's empty value, so nothing in the probe can open a real GPU."""
    env, name = os.environ, "CUDA_VISIBLE_DEVICES"
    key = env.encodekey(name)
    saved = env._data.get(key, _MISSING)
    env._data[key] = env.encodevalue(",".join(str(i) for i in range(count)))  # no putenv: see above
    try:
        yield
    finally:
        if saved is _MISSING:
            env._data.pop(key, None)
        else:
            env._data[key] = saved


class _LastLine:
    """A text stream that passes everything on and remembers the last non-empty line."""

    def __init__(self, inner):
        self.inner = inner
        self.last = ""
        self._pending = ""

    def write(self, text):
        self._pending += text
        lines = self._pending.split("\n")
        self._pending = lines.pop()
        for line in reversed(lines):
            if line.strip():
                self.last = line.strip()[:300]
                break
        return self.inner.write(text)

    def flush(self):
        return self.inner.flush()

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _progress(run):
    if not run.optimizers:
        return "before building an optimizer (torch.optim)"
    taken = min(e[1] for e in run.optimizers)
    return f"after {taken} optimizer step{'s' if taken != 1 else ''}"


def _script_frame(exc, path):
    """' (train.py:42)': the innermost frame of the user's script in the traceback."""
    tb, where = exc.__traceback__, ""
    target = os.path.abspath(path)
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == target:
            where = f" ({os.path.basename(path)}:{tb.tb_lineno})"
        tb = tb.tb_next
    return where


class ScriptError(Exception):
    """The script ended or failed before the trace was complete."""


class ScriptSpecError(Exception):
    """--script names nothing runnable."""
