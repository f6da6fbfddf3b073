"""Automatic mixed precision as CUDA's autocast does it, for the probe's meta tensors (autocast's
dispatch keys act on CUDA/CPU tensors only). Source of the op lists: PyTorch's autocast op reference
(docs: "CUDA Ops that can autocast to float16" / "to float32"), abridged to the ops training
code calls through torch.nn.functional and torch. Like autocast, casts of leaf tensors (the
parameters) are cached for the duration of the autocast region, so each weight is cast once per
forward and the fp16 copy stays alive (saved for backward) until the region ends."""
import functools

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

_LOWER = {F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d,
          F.linear, torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.addbmm,
          torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.mm, torch.Tensor.bmm, torch.conv2d,
          torch.conv1d, torch.conv3d, torch.prelu, torch.chain_matmul,
          # not on autocast's list themselves, but they run as bmm/mm, which are: their operands
          # become half precision as autocast casts the bmm's
          torch.einsum, torch.tensordot}
_FP32 = {F.softmax, F.log_softmax, F.cross_entropy, F.nll_loss, F.layer_norm, F.group_norm, F.mse_loss,
         F.l1_loss, F.smooth_l1_loss, F.binary_cross_entropy_with_logits, F.kl_div, F.cosine_similarity,
         torch.softmax, torch.log_softmax, torch.Tensor.softmax, torch.Tensor.log_softmax, torch.exp,
         torch.log, torch.pow, torch.sum, torch.cumsum, torch.norm, torch.layer_norm, torch.group_norm}
try:
    _LOWER.add(F.scaled_dot_product_attention)
except AttributeError:
    pass

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class Autocast(TorchFunctionMode):
    _active = []  # the regions entered and not yet left, innermost last

    def __init__(self, amp):
        super().__init__()
        self.amp = amp
        self.dtype = DTYPES[amp]
        self.cache = {}

    def __enter__(self):
        Autocast._active.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        self.cache.clear()
        Autocast._active.pop()
        return super().__exit__(*exc)

    def __call__(self, fn):
        """`@torch.autocast("cuda")` on a function or a forward: a region of its own per call."""
        amp = self.amp

        @functools.wraps(fn)
        def decorated(*args, **kwargs):
            with Autocast(amp):
                return fn(*args, **kwargs)
        return decorated

    @classmethod
    def current(cls):
        return cls._active[-1] if cls._active else None

    def _cast(self, x, dtype):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype):
            return x
        if x.is_leaf and x.requires_grad:
            key = (id(x), dtype)
            if key not in self.cache:
                self.cache[key] = x.to(dtype)
            return self.cache[key]
        return x.to(dtype)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = None
        if func in _LOWER or func is getattr(F, "scaled_dot_product_attention", None):
            target = self.dtype
        elif func in _FP32:
            target = torch.float32
        if target is not None:
            args = tuple(self._cast(a, target) for a in args)
            kwargs = {k: self._cast(v, target) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def recompute_under_same_autocast(fn):
    """torch.utils.checkpoint recomputes `fn` in backward under the autocast state its forward ran
    in (PyTorch stashes torch.is_autocast_enabled() and re-enters autocast). The probe's autocast
    is a TorchFunctionMode that state does not show, so the recompute would run in float32 and
    mix dtypes; `fn` re-enters the same autocast itself when it runs outside one."""
    region = Autocast.current()
    if region is None:
        return fn

    def recompute(*args, **kwargs):
        if Autocast.current() is not None:  # the forward itself
            return fn(*args, **kwargs)
        with Autocast(region.amp):
            return fn(*args, **kwargs)
    return recompute


class GradScalerModel:
    """torch.cuda.amp.GradScaler's GPU memory: the scale, the scaled loss, found_inf; grads are
    unscaled in place."""

    def __init__(self):
        self.scale_t = None

    def scale(self, loss):
        if self.scale_t is None:
            self.scale_t = torch.full((), 65536.0, dtype=torch.float32, device=loss.device)
        return loss * self.scale_t

    def step(self, opt):
        found_inf = torch.zeros((1,), dtype=torch.float32, device=self.scale_t.device)
        inv = self.scale_t.reciprocal()
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        for g in grads:
            g.mul_(inv)
        del found_inf, inv
        opt.step()
        self.scale_t.mul_(1.0)  # update(): in place
