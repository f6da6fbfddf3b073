"""What the target GPU's kernels keep, where the CPU path of the same PyTorch call keeps something
else. The probe's tensors live on the meta device, so composite operators take their CPU branch;
these replacements, active only while probing, take the CUDA branch instead:

- dropout: on CUDA `native_dropout` saves a bool mask (1 byte per element); the CPU branch saves a
  float noise tensor (4 bytes).
- scaled_dot_product_attention: on an A100 the fused kernels (flash / memory-efficient) keep q, k, v,
  the output and a float32 log-sum-exp per query row, never the [batch, heads, seq, seq] matrix;
  PyTorch 1.13 has no SDPA at all. Model files call torch.nn.functional.scaled_dot_product_attention;
  under the probe it is this function on every PyTorch version.
- mish: the CUDA kernel saves its input and its backward writes one gradient tensor; PyTorch 1.13's
  meta path decomposes mish_backward into softplus, tanh, sigmoid and products, all full size."""
import contextlib

import torch
import torch.nn.functional as F


def _dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    out, _mask = torch.native_dropout(input, p, True)
    if inplace:
        return input.copy_(out)
    return out


class _FusedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        # The CUDA kernels write [batch, seq, heads, dim] and return it viewed as [batch, heads, seq,
        # dim], so the model's usual transpose(1, 2).reshape(...) afterwards is free (no copy).
        shape = q.shape[:-1] + (v.shape[-1],)
        if q.dim() == 4:
            out = torch.empty((shape[0], shape[2], shape[1], shape[3]), dtype=q.dtype, device=q.device).transpose(1, 2)
        else:
            out = torch.empty(shape, dtype=q.dtype, device=q.device)
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        # The backward kernels also take a float32 [.., seq] scratch (delta = rowsum(dO * O)).
        _delta = torch.empty(lse.shape, dtype=torch.float32, device=lse.device)
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


class _Mish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, grad_out):
        return torch.empty_like(grad_out)


def _mish(input, inplace=False):
    out = _Mish.apply(input)
    return input.copy_(out) if inplace else out


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **_):
    return _FusedAttention.apply(query, key, value)


@contextlib.contextmanager
def target_gpu_kernels():
    saved = {name: getattr(F, name, None) for name in ("dropout", "scaled_dot_product_attention", "mish")}
    F.dropout = _dropout
    F.scaled_dot_product_attention = _sdpa
    F.mish = _mish
    try:
        yield
    finally:
        for name, fn in saved.items():
            if fn is None:
                delattr(F, name)
            else:
                setattr(F, name, fn)
