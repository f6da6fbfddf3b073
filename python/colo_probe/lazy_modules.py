"""Lazy modules under --script (nn.LazyLinear, LazyConv2d, LazyBatchNorm2d): parameters and buffers
whose shapes the first forward decides. PyTorch moves an uninitialised one to the GPU still empty
(`model.cuda()` before the first forward) and materialises it there, with its shape, at that
forward. The probe's move needed a shape an uninitialised tensor refuses to give ("Can't access the
shape of an uninitialized parameter"): here one moved to the GPU is marked and says cuda;
it materialises where its empty data is, on the host (its data cannot change device class), and
once the module's first forward has shaped and initialised everything, each marked one becomes a
probe tensor, a GPU allocation of its real size, as PyTorch's materialisation on the GPU is."""
import torch
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedTensorMixin

from . import tensor as pt

_MARK = "_colo_probe_on_gpu"


def is_uninitialized(t):
    return isinstance(t, UninitializedTensorMixin)


def to_gpu(t, dtype=None):
    """An uninitialised parameter or buffer moved to the probe's GPU: still uninitialised, marked,
    in the dtype asked for (`model.to("cuda", torch.float16)` materialises it in half precision)."""
    if dtype is not None and dtype != t.dtype:
        t.data = torch.empty(0, dtype=dtype)
    setattr(t, _MARK, True)
    return t


def install(p):
    real_device = torch.Tensor.device
    real_infer = LazyModuleMixin._infer_parameters

    def device(self):
        return torch.device("cuda", 0) if getattr(self, _MARK, False) else real_device.__get__(self)

    def infer_parameters(self, module, *args, **kwargs):
        marked = {(kind, name) for kind in ("_parameters", "_buffers")
                  for name, t in getattr(module, kind).items() if t is not None and getattr(t, _MARK, False)}
        out = real_infer(self, module, *args, **kwargs)
        for kind, name in marked:
            t = getattr(module, kind)[name]
            if not isinstance(t, torch.Tensor) or isinstance(t, pt.ProbeTensor) or is_uninitialized(t) \
                    or t.device.type != "cpu":
                continue
            moved = pt.wrap_new(t.detach(), "to_cuda")
            if kind == "_parameters":
                moved = torch.nn.Parameter(moved, requires_grad=t.requires_grad)
            getattr(module, kind)[name] = moved
        return out

    p.set(UninitializedTensorMixin, "device", property(device))
    p.set(UninitializedTensorMixin, "is_cuda", property(lambda self: bool(getattr(self, _MARK, False))))
    p.set(LazyModuleMixin, "_infer_parameters", infer_parameters)
