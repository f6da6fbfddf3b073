"""Automatic mixed precision as CUDA's autocast does it, for the probe's meta tensors (autocast's
dispatch keys act on CUDA/CPU tensors only). Source of the op lists: PyTorch's autocast op reference
(docs: "CUDA Ops that can autocast to float16" / "to float32"), each under every name training code
calls it by: torch.X, the Tensor method, torch.nn.functional.X (autocast acts on the operator, so
x.exp() is cast as torch.exp(x) is). The RNN cells of the float16 list are not covered. Like autocast, casts of leaf tensors (the
parameters) are cached for the duration of the autocast region, so each weight is cast once per
forward and the fp16 copy stays alive (saved for backward) until the region ends."""
import contextlib
import functools

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

def _callables(names, owners):
    """Every spelling of the named operators that exists: torch.X, torch.Tensor.X (x.X()), F.X."""
    return {getattr(owner, n) for n in names.split() for owner in owners if callable(getattr(owner, n, None))}


_OWNERS = (torch, torch.Tensor, F, torch.linalg)
# "CUDA Ops that can autocast to float16"
_LOWER = _callables("__matmul__ addbmm addmm addmv addr baddbmm bmm chain_matmul multi_dot conv1d conv2d conv3d "
                    "conv_transpose1d conv_transpose2d conv_transpose3d linear matmul mm mv prelu", _OWNERS)
# not on autocast's list themselves, but they run as bmm/mm, which are: their operands become half
# precision as autocast casts the bmm's
_LOWER |= {torch.einsum, torch.tensordot}
# "CUDA Ops that can autocast to float32": x.exp(), x.sum(), x ** 2, 1 / x as well as torch.exp(x)
_FP32 = _callables("__pow__ __rdiv__ __rpow__ __rtruediv__ acos asin binary_cross_entropy_with_logits cosh "
                   "cosine_embedding_loss cdist cosine_similarity cross_entropy cumprod cumsum dist erfinv exp expm1 "
                   "group_norm hinge_embedding_loss kl_div l1_loss layer_norm log log_softmax log10 log1p log2 "
                   "margin_ranking_loss mse_loss multilabel_margin_loss multi_margin_loss nll_loss norm pdist "
                   "poisson_nll_loss pow prod reciprocal rsqrt sinh smooth_l1_loss soft_margin_loss softmax "
                   "softmin softplus sum renorm tan triplet_margin_loss", _OWNERS)
try:
    _LOWER.add(F.scaled_dot_product_attention)
except AttributeError:
    pass

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class Autocast(TorchFunctionMode):
    # The regions entered and not yet left, innermost last; None for a disabled one (NoAutocast).
    # Only the innermost region casts: each enclosing one still sees every operator (its mode is
    # lower on the stack), and must let it pass as it comes.
    _active = []

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

    def cast(self, x, dtype):
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
        if Autocast.current() is not self:  # an inner region decides: disabled, or another dtype
            return func(*args, **kwargs)
        target = None
        if func in _LOWER:  # (the probe's own SDPA is a Python function: target_kernels._sdpa casts)
            target = self.dtype
        elif func in _FP32:
            target = torch.float32
        if target is not None:
            args = tuple(self.cast(a, target) for a in args)
            kwargs = {k: self.cast(v, target) for k, v in kwargs.items()}
        return func(*args, **kwargs)


class NoAutocast(contextlib.ContextDecorator):
    """autocast(enabled=False) (or to float32, which casts nothing down): no casts inside it, even
    within an enabled region, as on CUDA: a loss computed in float32 within the forward's region,
    `custom_fwd(cast_inputs=torch.float32)`, rotary embeddings in float32. Before, the enclosing
    region went on casting to half precision there, and recorded half the bytes."""

    def __enter__(self):
        Autocast._active.append(None)
        return self

    def __exit__(self, *exc):
        Autocast._active.pop()
        return False


def autocast_state_queries(is_enabled, gpu_dtype, dtype_of):
    """torch.is_autocast_enabled, torch.get_autocast_gpu_dtype and (PyTorch >= 2.4)
    torch.get_autocast_dtype answering for the probe's regions on CUDA: code that asks (custom_fwd,
    custom_bwd, checkpointing, models that cast by the answer) sees what it would on the GPU. The
    real functions answer for other devices."""
    def is_autocast_enabled(device_type=None):
        if device_type in (None, "cuda"):
            return Autocast.current() is not None
        return is_enabled(device_type)

    def get_autocast_gpu_dtype():
        region = Autocast.current()
        return region.dtype if region is not None else gpu_dtype()

    def get_autocast_dtype(device_type):
        if device_type == "cuda":
            return get_autocast_gpu_dtype()
        return dtype_of(device_type)
    return is_autocast_enabled, get_autocast_gpu_dtype, get_autocast_dtype


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
