"""Tensor creation under the probe. While a model is built, every tensor is created on the meta
device (no memory, no initialisation cost). While it trains, a tensor asked for on the GPU
(`device="cuda"`, `.cuda()`, `.to("cuda")`, or the meta device of the probe's own tensors) becomes
a probe tensor with a recorded storage; one asked for on the CPU stays on the CPU (optimizer step
counters, Python-side bookkeeping)."""
import sys
import threading
from types import FunctionType, SimpleNamespace

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from . import lazy_modules
from . import legacy_types
from . import tensor as pt

FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.randint,
             torch.arange, torch.eye, torch.linspace, torch.logspace, torch.tensor, torch.as_tensor,
             torch.empty_strided, torch.randperm, torch.normal, torch.scalar_tensor,
             # signal windows and frequency grids (audio front ends: torch.stft's window on the GPU),
             # index grids, and the later spellings where the installed PyTorch has them
             torch.hann_window, torch.hamming_window, torch.blackman_window, torch.bartlett_window,
             torch.kaiser_window, torch.fft.fftfreq, torch.fft.rfftfreq, torch.tril_indices, torch.triu_indices,
             *(getattr(torch, n) for n in ("asarray", "empty_permuted") if hasattr(torch, n))}


TARGET_GPUS = [1]  # GPUs the target has (--gpus); a script's cuda:N must name one of them
# Whether the meta device is the probe's GPU: for the zoo's models, whose tensors are meta ones
# (`device=x.device` says meta). Not under --script, where the probe's tensors say cuda and meta is
# the script's own device (a large model built there, then to_empty): its tensors stay plain meta
# ones, as in PyTorch, costing nothing and holding no data.
META_IS_GPU = [True]
# torch.set_default_device under --script: where a factory without device= creates its tensor (None:
# the CPU, PyTorch's default).
DEFAULT_DEVICE = [None]
# torch.set_default_tensor_type("torch.cuda.FloatTensor") under --script (legacy_types): factories
# without device= go to the GPU unless a set_default_device says otherwise, as PyTorch 2's device
# mode passes its device over the default tensor type's (None: the default type is a CPU one).
LEGACY_DEFAULT_DEVICE = [None]


def default_device():
    """Where a factory without device= creates its tensor (None: the CPU)."""
    return DEFAULT_DEVICE[0] if DEFAULT_DEVICE[0] is not None else LEGACY_DEFAULT_DEVICE[0]


def _from_optimizer():
    """Whether the factory call comes from torch.optim: its step counters (`torch.tensor(0.0)`)
    stay on the host under set_default_device, as their values are read back each step (the probe's
    GPU tensors have none; on a GPU each would be one 512-byte block)."""
    frame = sys._getframe(2)  # 0: here, 1: __torch_function__, then torch's mode plumbing, then the caller
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name not in ("torch.overrides", "torch.utils._mode_utils", "torch._ops") and not name.startswith("colo_probe"):
            return name.startswith("torch.optim")
        frame = frame.f_back
    return False


def _is_gpu(device):
    if device is None:
        return False
    if isinstance(device, int):  # tensor.to(0), .to(local_rank): a CUDA ordinal
        device = torch.device("cuda", device)
    d = torch.device(device) if not isinstance(device, torch.device) else device
    if d.type == "cuda" and d.index is not None and d.index != 0:
        # The probe records GPU 0: a tensor placed on another GPU would be counted there.
        if d.index >= TARGET_GPUS[0]:
            raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{d.index}; the target has "
                               f"{TARGET_GPUS[0]} GPU(s), --gpus)")
        raise NotImplementedError(f"placing tensors on cuda:{d.index} (model parallelism over GPUs) is not "
                                  "supported: the probe records GPU 0 only")
    return d.type == "cuda" or (d.type == "meta" and META_IS_GPU[0])


# With MetaInit(small_real=True), construction-time tensors up to this many elements are made for
# real, on the CPU: for code that reads values while building (RegNet's block widths:
# arange(...).tolist()), which cannot run on the meta device. Larger ones (the weights) stay there.
SMALL_NUMEL = 1 << 16


def _meta_if_mixed(args, kwargs):
    """A meta and a CPU tensor in one call (a small real buffer beside a meta weight): the CPU one goes
    to the meta device too, as it would have been made there. 0-dim CPU tensors mix with any device."""
    flat, _ = tree_flatten((args, kwargs))
    if not any(isinstance(x, torch.Tensor) and x.device.type == "meta" for x in flat):
        return args, kwargs
    mixed = pt.cpu_beside_meta(args, kwargs)
    return mixed if mixed is not None else (args, kwargs)


class MetaInit(TorchFunctionMode):
    """Module construction: every factory call lands on the meta device (with small_real, only the
    large ones; see SMALL_NUMEL)."""

    def __init__(self, small_real=False):
        super().__init__()
        self.small_real = small_real

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in FACTORIES:
            kwargs["device"] = "meta"
            out = func(*args, **kwargs)
            if self.small_real and isinstance(out, torch.Tensor) and out.numel() <= SMALL_NUMEL:
                kwargs["device"] = "cpu"
                return func(*args, **kwargs)
            return out
        if self.small_real:
            args, kwargs = _meta_if_mixed(args, kwargs)
        return func(*args, **kwargs)


def construct(build):
    """build() under MetaInit. Construction code that reads tensor values fails on the meta device;
    it is then run once more with the smallest tensors real (MetaInit(small_real=True)). If that
    fails too, the first error is the one raised: it is what the user's code did."""
    try:
        with torch.no_grad(), MetaInit():
            return build()
    except Exception as first:
        try:
            with torch.no_grad(), MetaInit(small_real=True):
                return build()
        except Exception:
            raise first from None


_FUNCTORCH_WRAPPED = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", lambda x: False)


def _wrap_plain_meta(x):
    # (not torch.func's wrappers of a probe tensor, inside grad or vmap: they say meta, as the
    # tensor they wrap does underneath, and wrapping one hid it from the transform)
    if isinstance(x, torch.Tensor) and not isinstance(x, pt.ProbeTensor) and x.device.type == "meta" \
            and not _FUNCTORCH_WRAPPED(x):
        return pt.wrap_new(x, pt.current_op_name())
    return x


def _small_on_host(func, args, kwargs, meta):
    """A small tensor a factory makes on the GPU, made on the CPU as well: its values
    (tensor.py, "Values"). None for a large one, or one made from probe tensors."""
    if not pt.KEEP_VALUES[0] or not isinstance(meta, torch.Tensor) or meta.numel() > pt.HOST_NUMEL:
        return None
    flat, _ = tree_flatten((args, kwargs))
    if any(isinstance(x, pt.ProbeTensor) for x in flat):
        return None
    try:
        host = func(*args, **dict(kwargs, device="cpu")).detach()
    except Exception:  # noqa: BLE001 - the values stay unknown
        return None
    return host if host.shape == meta.shape and host.dtype == meta.dtype else None


# (taken here: _NestedCalls replaces them on torch.Tensor for a while, and `func is` compares to these)
_TENSOR_TO, _TENSOR_CUDA, _NEW_TENSOR = torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.new_tensor
_TO = {_TENSOR_TO, _TENSOR_CUDA}
_OP_OVERLOAD = torch._ops.OpOverload
# Made like another tensor, on the device they name: `torch.full_like(boxes, i, device=device)`
# (torchvision's RoI pooler), `x.new_zeros(shape, device="cuda")`. Their device is keyword-only.
_LIKE = {torch.empty_like, torch.zeros_like, torch.ones_like, torch.full_like, torch.rand_like, torch.randn_like,
         torch.randint_like, torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
         torch.Tensor.new_full, _NEW_TENSOR, torch.Tensor.new_empty_strided}


class ProbeDevice(TorchFunctionMode):
    """Training: the GPU is the probe's meta device, and what lands there is recorded. `label`,
    when set, names what factories create (the input batch)."""

    label = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if isinstance(func, _OP_OVERLOAD):
            # An operator called as torch.ops.aten.X.overload: ProbeTensor's dispatch runs each one on
            # the unwrapped meta tensors and wraps the outputs itself. Wrapping them here as well
            # recorded a second, phantom allocation (the detach of a saved autograd output).
            return func(*args, **(kwargs or {}))
        kwargs = dict(kwargs or {})
        if func in FACTORIES:
            if kwargs.get("device") is None and (device := default_device()) is not None and not _from_optimizer():
                kwargs["device"] = device
            if not _is_gpu(kwargs.get("device")):
                return func(*args, **kwargs)
            kwargs["device"] = "meta"
            pt.set_op_name(self.label or func.__name__)
            out = func(*args, **kwargs)
            host = _small_on_host(func, args, kwargs, out)
            if host is not None:
                return pt.wrap_new(out, pt.current_op_name(), host=host)
            return tree_map(_wrap_plain_meta, out)
        if func is torch.Tensor.__setitem__ and pt.KEEP_VALUES[0] and args and isinstance(args[0], pt.ProbeTensor):
            return _setitem(func, args, kwargs)
        if func in _CTC and len(args) >= 4:
            args = _ctc_lengths_on_host(args)
        if func is _NEW_TENSOR and args:
            out = _new_tensor(*args, **kwargs)
            if out is not None:
                return out
        if func in _LIKE and _is_gpu(kwargs.get("device")):
            kwargs["device"] = "meta"
            pt.set_op_name(func.__name__)
            return tree_map(_wrap_plain_meta, func(*args, **kwargs))
        if func in _TO:
            args, kwargs = _redirect_to(func, args, kwargs)
            if args is None:
                return kwargs
        if func is torch.Tensor.type and args and (isinstance(args[0], pt.ProbeTensor)
                                                   or legacy_types.cuda_type_asked(args, kwargs) is not None):
            return _probe_type(*args, **kwargs)
        if isinstance(func, FunctionType):  # a Python function: see _NestedCalls
            with _NestedCalls(self):
                out = func(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        pt.set_op_name(getattr(func, "__name__", "op"))
        if META_IS_GPU[0] or _has_probe_tensor(args, kwargs):  # (not from the script's own meta tensors alone)
            return tree_map(_wrap_plain_meta, out)
        return out


def _has_probe_tensor(args, kwargs):
    flat, _ = tree_flatten((args, kwargs))
    return any(isinstance(x, pt.ProbeTensor) for x in flat)


class _NestedCalls:
    """While the mode handles a Python function (F.multi_head_attention_forward, torch.unravel_index,
    F.embedding_bag), PyTorch takes the mode off its stack, so the calls made inside that function do
    not reach it: a tensor it makes on its input's device (`torch.zeros(..., device=k.device)` for
    add_zero_attn, `torch.tensor(coefs, device=indices.device)`) would be asked of the real CUDA,
    which a CPU build lacks. For that while, the functions the mode treats specially are replaced,
    under the names library code calls them by (`torch.zeros`, `Tensor.to`), by ones that hand a
    GPU request to the mode, as a call from the script would be. They are the functions themselves
    on other threads (the mode is the main thread's), for requests not naming the GPU (a factory
    given no device stays on the CPU, as inside a real torch-function mode), and for the probe's
    own calls. The replacements are process-wide, so one thread at a time installs them; nested
    calls on it count, and the outermost exit restores the functions."""

    _lock = threading.Lock()
    _state = SimpleNamespace(thread=None, mode=None, depth=0, saved=None)
    _targets = None  # [(owner, name, function)], found once

    def __init__(self, mode):
        self.mode = mode
        self.counted = False

    @classmethod
    def _find_targets(cls):
        found = []
        for f in FACTORIES | _LIKE | _TO:
            name = getattr(f, "__name__", None)
            for owner in (torch, torch.fft, torch.Tensor):
                if name and getattr(owner, name, None) is f:
                    found.append((owner, name, f))
        cls._targets = found

    def __enter__(self):
        me = threading.get_ident()
        with self._lock:
            state = self._state
            if state.thread is None:
                if _NestedCalls._targets is None:
                    self._find_targets()
                state.saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in self._targets]
                state.thread, state.mode, state.depth = me, self.mode, 0
                for owner, name, real in self._targets:
                    setattr(owner, name, _routed(real, me, state))
            self.counted = state.thread == me  # (another thread's call: plain, as the mode is not its)
            if self.counted:
                state.depth += 1
        return self

    def __exit__(self, *exc):
        if not self.counted:
            return False
        with self._lock:
            state = self._state
            state.depth -= 1
            if state.depth == 0:
                for owner, name, own in state.saved:
                    if own is None:  # inherited (Tensor.to is torch._C's): the class had no entry of its own
                        delattr(owner, name)
                    else:
                        setattr(owner, name, own)
                state.thread = state.mode = state.saved = None
        return False


def _routed(real, thread, state):
    def call(*args, **kwargs):
        mode = state.mode
        if mode is None or threading.get_ident() != thread or not _names_gpu(real, args, kwargs) \
                or sys._getframe(1).f_globals.get("__name__", "").startswith("colo_probe"):  # the probe's own
            return real(*args, **kwargs)
        return mode.__torch_function__(real, (), args, kwargs)
    call.__name__ = getattr(real, "__name__", "call")
    call.__wrapped__ = real
    return call


def _names_gpu(func, args, kwargs):
    """Whether a call asks for the GPU: a device= naming CUDA, Tensor.to's positional device, .cuda(),
    or new_tensor of a probe tensor (made on its device)."""
    if func is _TENSOR_CUDA:
        return True
    if func is _NEW_TENSOR and args and isinstance(args[0], pt.ProbeTensor):
        return True
    dev = kwargs.get("device")
    if dev is None and func is _TENSOR_TO and len(args) > 1 and isinstance(args[1], (str, torch.device, int)) \
            and not isinstance(args[1], bool):
        dev = args[1]
    if isinstance(dev, int) and not isinstance(dev, bool):
        return True
    try:
        # cuda only: meta is also where PyTorch's own Python meta kernels (torch._refs, _prims) make
        # their results, under the dispatcher
        return isinstance(dev, (str, torch.device)) and torch.device(dev).type == "cuda"
    except RuntimeError:  # not a device: the function itself says so
        return False


_CTC = {torch.ctc_loss, torch.nn.functional.ctc_loss}  # (the second reaches the mode first, and calls the first)


def _ctc_lengths_on_host(args):
    """torch.ctc_loss with length tensors whose values the host has: the lengths as lists. CUDA's
    ctc_loss reads tensor lengths into lists itself (the fast path of LossCTC.cpp); with a tensor
    subclass such as the probe's it takes its composite path instead, which divides the GPU loss by
    the length tensor and so needs the lengths on the GPU: on the host, they failed there."""
    args = list(args)
    for i in (2, 3):
        if isinstance(args[i], torch.Tensor) and not args[i].is_floating_point():
            values = pt.host_ints(args[i])
            if values is not None:
                args[i] = values
    return tuple(args)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """x.new_tensor(data) that lands on the probe's GPU (x is there, or device= names it): data
    copied from the host in x's dtype unless given, keeping its values as torch.tensor(data,
    device="cuda") does (tensor.py, "Values"). None where data is not host data."""
    if not (_is_gpu(device) or (device is None and isinstance(self, pt.ProbeTensor))):
        return None
    if isinstance(data, torch.Tensor):
        if isinstance(data, pt.ProbeTensor) or data.device.type != "cpu":
            return None
        host = data.detach().clone().to(dtype or self.dtype)
    else:
        host = torch.tensor(data, dtype=dtype or self.dtype)
    out = pt.wrap_new(host, "new_tensor")
    return out.requires_grad_(requires_grad) if requires_grad else out


def _host_part(x):
    """x as the host computes with it: a probe tensor's known host copy (_UNKNOWN if it has none)."""
    if isinstance(x, pt.ProbeTensor):
        return x.host if pt.values_known(x) else _UNKNOWN
    if isinstance(x, torch.Tensor) and x.device.type != "cpu":
        return _UNKNOWN
    return x


_UNKNOWN = object()


def _setitem(func, args, kwargs):
    """`t[index] = value` on a tensor whose values are known: the same assignment on its host copy,
    in place (its views' copies follow). The GPU write itself goes through the dispatcher, where a
    Python number has become a meta tensor without a value (`mask[idx] = 1`, torchvision's
    samplers), which made the values unknown."""
    self, index, value = args[0], args[1], args[2]
    known = self.host if pt.values_known(self) else None
    flat, spec = tree_flatten((index, value))
    hosts = [_host_part(x) for x in flat]
    func(*args, **kwargs)
    if known is not None and not any(h is _UNKNOWN for h in hosts):
        host_index, host_value = tree_unflatten(hosts, spec)
        try:
            known[host_index] = host_value
        except Exception:  # noqa: BLE001 - the values stay unknown
            return None
        pt.set_values(self, known)
    return None


_TYPE_NAMES = {torch.float32: "FloatTensor", torch.float64: "DoubleTensor", torch.float16: "HalfTensor",
               torch.bfloat16: "BFloat16Tensor", torch.int64: "LongTensor", torch.int32: "IntTensor",
               torch.int16: "ShortTensor", torch.int8: "CharTensor", torch.uint8: "ByteTensor",
               torch.bool: "BoolTensor", torch.complex64: "ComplexFloatTensor",
               torch.complex128: "ComplexDoubleTensor"}


def _probe_type(t, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type() of a GPU tensor: "torch.cuda.FloatTensor" and so on, as a CUDA build answers
    (torch.typename, ZeroRedundancyOptimizer's parameter check); t.type(dtype or name) converts,
    a host tensor too where the type is a GPU one (`imgs.type(torch.cuda.FloatTensor)`)."""
    if dtype is None:
        return "torch.cuda." + _TYPE_NAMES.get(t.dtype, "Tensor")
    on_gpu = legacy_types.cuda_dtype_of(dtype)
    if on_gpu is not None:
        if isinstance(t, pt.ProbeTensor):
            return t if t.dtype == on_gpu else t.to(on_gpu)
        return _redirect_to(_TENSOR_TO, (t, "cuda", on_gpu), {})[1]
    if isinstance(dtype, str):
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        prefix, _, name = dtype.rpartition(".")
        if name not in by_name or prefix not in ("torch", "torch.cuda"):
            raise ValueError(f"invalid type: '{dtype}'")
        return t.to("cpu", by_name[name])
    if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), torch.dtype):
        return t.to("cpu", dtype.dtype)  # torch.FloatTensor and its kin: host types
    return t.to(dtype)


def scripts_own_meta(t):
    """A tensor a --script made on the meta device itself (the probe's own are ProbeTensors)."""
    return not META_IS_GPU[0] and isinstance(t, torch.Tensor) and not isinstance(t, pt.ProbeTensor) \
        and t.device.type == "meta"


def _meta_data_asked(t, func, args, kwargs):
    """A script's own meta tensor moved to the GPU: it has no data to copy."""
    return scripts_own_meta(t) and _names_gpu(func, args, kwargs)


def _dtype_asked(func, args, kwargs):
    """The dtype of Tensor.to(device, dtype, ...) or to(device, dtype=...); None for .cuda()."""
    if func is _TENSOR_CUDA:
        return None
    return kwargs.get("dtype") or next((a for a in args[1:] if isinstance(a, torch.dtype)), None)


def _redirect_to(func, args, kwargs):
    """Tensor.cuda() / Tensor.to('cuda', ...) -> the probe's GPU. Returns (None, result) when done."""
    self = args[0]
    if _meta_data_asked(self, func, args, kwargs):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")  # PyTorch's words (Module.to reads them)
    if lazy_modules.is_uninitialized(self) and _names_gpu(func, args, kwargs):
        return None, lazy_modules.to_gpu(self, _dtype_asked(func, args, kwargs))  # shaped at its first forward
    if func is _TENSOR_CUDA:
        if isinstance(self, pt.ProbeTensor):
            return None, self
        return None, pt.wrap_new(self, "to_cuda")
    rest = list(args[1:])
    dev = kwargs.get("device")
    if dev is None and rest and isinstance(rest[0], (str, torch.device, int)) and not isinstance(rest[0], bool):
        dev = rest[0]
    if dev is None or not _is_gpu(dev):
        return args, kwargs
    if isinstance(self, pt.ProbeTensor):
        if rest and isinstance(rest[0], (str, torch.device, int)) and not isinstance(rest[0], bool):
            rest = rest[1:]
        kwargs.pop("device", None)
        # Already there: what follows the device is Tensor.to's dtype, non_blocking, copy (Module.to
        # passes dtype None for an integer buffer, and its non_blocking).
        kwargs = dict(zip(("dtype", "non_blocking", "copy"), rest), **kwargs)
        kwargs.pop("non_blocking", None)
        if kwargs.get("dtype") is None:
            kwargs.pop("dtype", None)
        if not kwargs.get("copy"):
            kwargs.pop("copy", None)
        return None, self.to(**kwargs) if kwargs else self
    t = self
    dtype = _dtype_asked(func, args, kwargs)
    if dtype is not None:
        t = t.to(dtype)
    return None, pt.wrap_new(t, "to_cuda")
