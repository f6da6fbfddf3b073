"""What the target GPU's kernels keep, where the CPU path of the same PyTorch call keeps something
else. The probe's tensors live on the meta device, so composite operators take their CPU branch;
these replacements, active only while probing, take the CUDA branch instead:

- dropout: on CUDA `native_dropout` saves a bool mask (1 byte per element); the CPU branch saves a
  float noise tensor (4 bytes).
- scaled_dot_product_attention: on an A100 the fused kernels (flash / memory-efficient) keep q, k, v,
  the output and a float32 log-sum-exp per query row, never the [batch, heads, seq, seq] matrix;
  PyTorch 1.13 has no SDPA at all. A script that switches every fused backend off
  (torch.nn.attention.sdpa_kernel(SDPBackend.MATH)) gets PyTorch 2's math backend instead. Model files call torch.nn.functional.scaled_dot_product_attention;
  under the probe it is this function on every PyTorch version.
- multi_head_attention_forward (nn.MultiheadAttention, nn.Transformer*Layer, torchvision's ViT) with
  need_weights=False: PyTorch 2 projects q, k, v and calls scaled_dot_product_attention (so the
  fused kernel above); PyTorch 1.13 computes the explicit [batch x heads, seq, seq] softmax and its
  dropout. The probe takes PyTorch 2's path on every version: on 2.x the native function first
  hands itself to the probe's torch-function mode, which runs it with the mode switched off, so
  what the fused kernel keeps (made inside it) went unrecorded (on 2.11: no log-sum-exp).
  need_weights=True returns the weights, which only the explicit path has: unchanged.
- mish: the CUDA kernel saves its input and its backward writes one gradient tensor; PyTorch 1.13's
  meta path decomposes mish_backward into softplus, tanh, sigmoid and products, all full size.
- repeat_interleave with an int count (GQA's `k.repeat_interleave(n_rep, dim=1)`, MViT's temporal
  position table): PyTorch 2 expands the input and copies it once (`repeat_interleave_symint`).
  PyTorch 1.13 makes the count a one-element tensor on the input's device and asks its values,
  which a meta tensor has not ("cannot repeat_interleave a meta tensor without output_size").
- one_hot: CUDA makes one int64 [.., classes] tensor of zeros and scatters the ones into it.
  PyTorch 1.13 refuses meta tensors ("Can not infer total number of classes from meta tensor"),
  even given the count; PyTorch 2 takes a traceable path for them (an arange, a bool comparison and
  its int64 copy)."""
import contextlib
import operator

import torch
import torch.nn.functional as F

from . import tensor as pt
from .amp import Autocast


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
        # new_empty / empty_like, not factories with device=: they reach the probe through its
        # tensors, on any thread (a backward may run on the autograd engine's device thread, where
        # the probe's torch-function mode is not active).
        shape = q.shape[:-1] + (v.shape[-1],)
        if q.dim() == 4:
            out = q.new_empty((shape[0], shape[2], shape[1], shape[3])).transpose(1, 2)
        else:
            out = q.new_empty(shape)
        lse = q.new_empty(q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        # The backward kernels also take a float32 [.., seq] scratch (delta = rowsum(dO * O)).
        _delta = torch.empty_like(lse)
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


def _fused_sdpa_allowed():
    """Whether the script leaves PyTorch a fused SDPA backend (torch.nn.attention.sdpa_kernel and
    torch.backends.cuda.enable_*_sdp set these flags; 1.13 has only the flash one)."""
    b = torch.backends.cuda
    flags = [getattr(b, n) for n in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled")
             if hasattr(b, n)]
    return not flags or any(f() for f in flags)


def _math_sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale):
    """PyTorch 2's math backend (attention.cpp _scaled_dot_product_attention_math): q and k scaled by
    sqrt(scale) each, the [.., seq, seq] scores, their softmax (kept for the backward) and dropout."""
    root = (scale if scale is not None else q.size(-1) ** -0.5) ** 0.5
    attn = (q * root) @ (k * root).transpose(-2, -1)
    if is_causal:
        keep = q.new_ones((q.size(-2), k.size(-2)), dtype=torch.bool).tril()
        attn = attn.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        attn = attn.masked_fill(attn_mask.logical_not(), float("-inf")) if attn_mask.dtype == torch.bool \
            else attn + attn_mask
    attn = attn.softmax(-1)
    if dropout_p > 0:
        attn = _dropout(attn, dropout_p)
    return attn @ v


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **_):
    region = Autocast.current()
    if region is not None:
        # SDPA is on autocast's float16 list, but this replacement is a Python function the region
        # does not see: q, k, v (and a float mask) are cast here, as autocast casts the kernel's.
        query, key, value = (region.cast(t, region.dtype) for t in (query, key, value))
        if attn_mask is not None:
            attn_mask = region.cast(attn_mask, region.dtype)
    if not _fused_sdpa_allowed():
        return _math_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale)
    return _FusedAttention.apply(query, key, value)


def _in_projection_packed(q, k, v, w, b):
    """The packed in-projection as PyTorch 2 makes it: self-attention projects once and copies the
    [.., 3 E] result into one contiguous [3, .., E] block whose three rows are q, k and v (PyTorch
    1.13 returns three chunks of the projection, which the caller then copied one by one: three
    blocks, not one); encoder-decoder attention does the same for k and v; otherwise three
    projections."""
    E = q.size(-1)

    def stacked(proj, n):  # [.., n E] -> one contiguous [n, .., E] block
        return proj.unflatten(-1, (n, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
    if k is v and q is k:
        proj = stacked(F.linear(q, w, b), 3)
        return proj[0], proj[1], proj[2]
    if k is v:
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = b.split([E, 2 * E]) if b is not None else (None, None)
        kv = stacked(F.linear(k, w_kv, b_kv), 2)
        return F.linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = b.chunk(3) if b is not None else (None, None, None)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def _mha_as_pytorch2(real):
    """F.multi_head_attention_forward as PyTorch 2 runs it when no weights are asked for."""
    def mha(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
            add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
            need_weights=True, attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
            k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
            **rest):
        if (need_weights or bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None
                or static_v is not None):
            return real(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=training,
                        key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
                        use_separate_proj_weight=use_separate_proj_weight, q_proj_weight=q_proj_weight,
                        k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight, static_k=static_k,
                        static_v=static_v, average_attn_weights=average_attn_weights, **rest)
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        tgt_len, bsz, embed_dim = query.shape
        head_dim = embed_dim // num_heads
        if not use_separate_proj_weight:
            q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
            q, k, v = F._in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
        src_len = k.shape[0]
        # PyTorch 2 merges the masks into one [batch x heads, target or 1, source] float mask.
        mask = None
        if key_padding_mask is not None:
            mask = torch.zeros(key_padding_mask.shape, dtype=q.dtype, device=q.device)
            mask = mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        if attn_mask is not None:
            am = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device)
            mask = am if mask is None else mask + am
        if mask is not None:
            mask = mask.view(bsz, num_heads, -1, src_len) if mask.dim() == 3 or mask.shape[0] == bsz * num_heads \
                else mask.view(1, 1, tgt_len, src_len)
        q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1).view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(src_len, bsz * num_heads, head_dim).transpose(0, 1).view(bsz, num_heads, src_len, head_dim)
        v = v.view(src_len, bsz * num_heads, head_dim).transpose(0, 1).view(bsz, num_heads, src_len, head_dim)
        out = F.scaled_dot_product_attention(q, k, v, mask, dropout_p if training else 0.0)
        out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
        return (out if batched else out.squeeze(1)), None
    return mha


def _one_hot_as_cuda(native):
    def one_hot(tensor, num_classes=-1):
        if not isinstance(tensor, pt.ProbeTensor):
            return native(tensor, num_classes)  # a host tensor: PyTorch's own
        if tensor.dtype != torch.int64:
            raise RuntimeError("one_hot is only applicable to index tensor.")
        if num_classes == -1:
            num_classes = int(tensor.max()) + 1 if tensor.numel() else 0  # a value: read, as CUDA reads it
        return tensor.new_zeros((*tensor.shape, num_classes)).scatter_(-1, tensor.unsqueeze(-1), 1)
    return one_hot


def _repeat_interleave_as_pytorch2(native):
    def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
        if repeats is None:  # torch.repeat_interleave(counts): the indices, from the counts' values
            return native(input)
        if not isinstance(input, pt.ProbeTensor) or isinstance(repeats, torch.Tensor) or output_size is not None:
            return native(input, repeats, dim, output_size=output_size)
        count = operator.index(repeats)
        if count < 0:
            raise RuntimeError("repeats can not be negative")
        x = input if dim is not None else input.flatten()
        d = dim % x.dim() if dim is not None and x.dim() else 0
        x = x.unsqueeze(d + 1)
        shape = list(x.shape)
        shape[d + 1] = count
        return x.expand(shape).clone(memory_format=torch.contiguous_format).flatten(d, d + 1)
    return repeat_interleave


@contextlib.contextmanager
def target_gpu_kernels():
    saved = {name: getattr(F, name, None)
             for name in ("dropout", "scaled_dot_product_attention", "mish", "multi_head_attention_forward", "one_hot")}
    F.one_hot = _one_hot_as_cuda(saved["one_hot"])
    natives = (torch.repeat_interleave, torch.Tensor.repeat_interleave)
    torch.repeat_interleave = _repeat_interleave_as_pytorch2(natives[0])
    torch.Tensor.repeat_interleave = _repeat_interleave_as_pytorch2(natives[1])
    F.multi_head_attention_forward = _mha_as_pytorch2(saved["multi_head_attention_forward"])
    F.dropout = _dropout
    F.scaled_dot_product_attention = _sdpa
    F.mish = _mish
    try:
        yield
    finally:
        torch.repeat_interleave, torch.Tensor.repeat_interleave = natives
        for name, fn in saved.items():
            if fn is None:
                delattr(F, name)
            else:
                setattr(F, name, fn)
