"""Meta kernels the installed PyTorch lacks (1.13 has none for convolution_backward, among others).
Each is registered only where the installed PyTorch has no Meta kernel of its own, and each is
tested against a real CPU run of the operator (tests/probe/test_meta_kernels.py). Shapes follow from
the inputs. An operator with no meta kernel at all runs on the CPU (cpu_fallback) as a last resort."""
import torch
from torch.utils._pytree import tree_map

_LIB = None
REGISTERED = []


def _conv_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                   output_padding, groups, output_mask):
    gi = torch.empty_like(input, memory_format=torch.contiguous_format) if output_mask[0] else None
    gw = torch.empty_like(weight, memory_format=torch.contiguous_format) if output_mask[1] else None
    channels = weight.size(1) * groups if transposed else weight.size(0)
    gb = torch.empty((channels,), dtype=weight.dtype, device=weight.device) if output_mask[2] else None
    return gi, gw, gb


def _same_as_self(grad_output, self, *rest):
    return torch.empty_like(self, memory_format=torch.contiguous_format)


def _nll_loss2d_forward(self, target, weight, reduction, ignore_index):
    # The per-pixel loss of a segmentation network's cross-entropy: one value per pixel without
    # reduction (0), else a scalar; total_weight is always a scalar.
    out = torch.empty(tuple(target.shape) if reduction == 0 else (), dtype=self.dtype, device=self.device)
    return out, torch.empty((), dtype=self.dtype, device=self.device)


# SyncBatchNorm's statistics kernels (torch/nn/modules/_functions.py) exist for CUDA only, so no
# CPU run can check them: their outputs are what aten/src/ATen/native/cuda/Normalization.cu
# allocates - per-channel statistics in the accumulation type (float32 for half inputs), and
# full-size outputs like the input; a gradient not asked for is an empty tensor (CUDA returns an
# undefined one). tests/probe/test_distributed.py checks SyncBatchNorm against BatchNorm2d.
def _acc_dtype(t):
    return torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype


def _channels(t, dtype):
    return torch.empty((t.size(1),), dtype=dtype, device=t.device)


def _bn_stats(input, eps):
    return _channels(input, _acc_dtype(input)), _channels(input, _acc_dtype(input))


def _bn_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    return _channels(input, mean.dtype), _channels(input, mean.dtype)


def _bn_elemt(input, weight, bias, mean, invstd, eps):
    return torch.empty_like(input)


def _bn_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    none = torch.empty((0,), dtype=mean.dtype, device=input.device)
    wdtype = weight.dtype if weight is not None else input.dtype
    return (_channels(input, mean.dtype) if input_g else none, _channels(input, mean.dtype) if input_g else none,
            _channels(input, wdtype) if weight_g else none, _channels(input, wdtype) if bias_g else none)


def _bn_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    return torch.empty_like(input)


# A kernel registered from Python receives the arguments the caller gave, without the schema's
# defaults: each default is repeated in the kernel's signature.
def _pool_out(size, k, s, p, d, ceil):
    # aten/src/ATen/native/Pool.h, pooling_output_shape
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _triple(v, default=None):
    v = list(v) if v else list(default)
    return v * 3 if len(v) == 1 else v


def _max_pool3d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    # 3-D max pooling (S3D's, C3D's): values and int64 indices of the pooled shape
    k = _triple(kernel_size)
    st, p, d = _triple(stride, k), _triple(padding), _triple(dilation)
    shape = tuple(self.shape[:-3]) + tuple(_pool_out(self.size(i - 3), k[i], st[i], p[i], d[i], ceil_mode)
                                           for i in range(3))
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


def _grad_like_self(grad_output, self, *rest):
    return torch.empty_like(self, memory_format=torch.contiguous_format)


def _max_unpool2d(self, indices, output_size):
    return self.new_empty(tuple(self.shape[:-2]) + tuple(output_size))


def _max_unpool3d(self, indices, output_size, stride, padding):
    return self.new_empty(tuple(self.shape[:-3]) + tuple(output_size))


def _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
                                  scale_grad_by_freq, mode, per_sample_weights, padding_idx=-1):
    return grad.new_empty((num_weights, grad.size(1)))  # the whole table's gradient (DLRM's tables)


def _weight_norm(v, g, dim=0):
    # weight_norm (WaveNet, wav2vec 2.0's positional convolution): the weight, and the norms in
    # the accumulation type, shaped like g
    return (torch.empty_like(v, memory_format=torch.contiguous_format),
            torch.empty_strided(g.shape, g.stride(), dtype=_acc_dtype(g), device=g.device))


def _weight_norm_backward(grad_w, saved_v, saved_g, saved_norms, dim):
    return (torch.empty_like(saved_v, memory_format=torch.contiguous_format),
            torch.empty_like(saved_g, memory_format=torch.contiguous_format))


def _reduced(self, dim, keepdim):
    dim = dim % max(self.dim(), 1)
    shape = list(self.shape)
    if self.dim():
        if keepdim:
            shape[dim] = 1
        else:
            del shape[dim]
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


def _median_dim(self, dim=-1, keepdim=False):  # median.dim, mode
    return _reduced(self, dim, keepdim)


def _kthvalue(self, k, dim=-1, keepdim=False):
    return _reduced(self, dim, keepdim)


def _median(self):
    return self.new_empty(())


def _max_target_length(targets, target_lengths):
    """CTC's longest target (LossCTC.cu: the largest target length); where the lengths' values are
    unknown, the most they could be: padded targets' width, or all concatenated targets."""
    if target_lengths:
        return max(target_lengths)
    return targets.size(1) if targets.dim() == 2 else targets.numel()


def _ctc_loss(args, input_lengths, target_lengths):
    # aten::_ctc_loss(log_probs [T, B, C], targets, input_lengths, target_lengths, blank, zero_infinity)
    # -> (neg_log_likelihood [B], log_alpha [B, T, 2 x longest target + 1]) as LossCTC.cu allocates
    # them. The lengths' values set log_alpha's size, so this runs where the probe knows them (the
    # int[] overload, or length tensors on the host), not as a meta kernel.
    log_probs, targets = args[0], args[1]
    batch = log_probs.size(1)
    alpha = (batch, log_probs.size(0), 2 * _max_target_length(targets, target_lengths) + 1)
    return log_probs.new_empty((batch,)), log_probs.new_empty(alpha)


def _ctc_loss_backward(args, input_lengths, target_lengths):
    # the gradient, like log_probs (LossCTC.cu: full_like(log_probs, -inf)); the kernel's own
    # temporaries are in SCRATCH
    return torch.empty_like(args[1], memory_format=torch.contiguous_format)


# operator (both overloads: int[] lengths, or tensors) -> (kernel, position of input_lengths)
CTC = {"aten::_ctc_loss": (_ctc_loss, 2), "aten::_ctc_loss_backward": (_ctc_loss_backward, 3)}


def _ctc_loss_backward_scratch(args):
    """What ctc_loss_backward_gpu_template (LossCTC.cu, 1.13 to 2.x) allocates besides its output:
    log_beta, like log_alpha, before the gradient and until it returns; and, for a problem it calls
    large (2 T + 24 B / 10 + 2 C / 10 > 450: most speech batches), the blank term's
    logsumexp(log_alpha[..., ::2] + log_beta[..., ::2]) - their sum and logsumexp's exp(x - max),
    [B, T, longest target + 1] each - after it. Its three [B] int64 index tensors are not recorded
    (a few hundred bytes)."""
    log_probs, log_alpha = args[1], args[6]
    steps, batch, labels = log_probs.shape
    beta = log_alpha.numel() * log_alpha.element_size()
    large = (2 * steps + (24 * batch) // 10 + (2 * labels) // 10) > 450
    half = batch * log_alpha.size(1) * (log_alpha.size(2) // 2 + 1) * log_alpha.element_size()
    return [beta], ([half, half] if large else [])


# operator -> function(unwrapped args) -> (bytes held from before the output is allocated until the
# kernel returns, bytes alive together once it is allocated): temporaries a kernel makes on the GPU
SCRATCH = {"aten::_ctc_loss_backward": _ctc_loss_backward_scratch}


def _cdist_backward(grad, x1, x2, p, cdist):
    return torch.empty_like(x1, memory_format=torch.contiguous_format)


def _pdist_forward(self, p=2.0):
    n = self.size(0)
    return self.new_empty((n * (n - 1) // 2,))


def _pdist_backward(grad, self, p, pdist):
    return torch.empty_like(self, memory_format=torch.contiguous_format)


def _cdist_compute_mode(args, kwargs):
    # PyTorch 1.13's own meta kernel of _cdist_forward compares its compute_mode with 0 and fails on
    # None, torch.cdist's default; ATen reads None as 0 (value_or(0)), which changes no shape
    if len(args) > 3 and args[3] is None:
        args = tuple(args[:3]) + (0,) + tuple(args[4:])
    return args, kwargs


def _refuses_none_compute_mode():
    # PyTorch 2's meta kernel takes None (and refuses 0): the fix is for the versions that need it
    try:
        torch.ops.aten._cdist_forward(torch.empty(2, 2, device="meta"), torch.empty(2, 2, device="meta"), 2.0, None)
    except (RuntimeError, TypeError):
        return True
    return False


# operator -> fix of the arguments its installed meta kernel mishandles
ARGUMENT_FIXES = {"aten::_cdist_forward": _cdist_compute_mode} if _refuses_none_compute_mode() else {}


def _grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return input.new_empty((input.size(0), input.size(1)) + tuple(grid.shape[1:4]))


def _grid_sampler_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask):
    # aten/src/ATen/native/cuda/GridSampler.cpp: the input's gradient only where asked for, the
    # grid's always (RAFT's correlation lookups, spatial transformers)
    gi = torch.zeros_like(input, memory_format=torch.contiguous_format) if output_mask[0] else None
    return gi, torch.empty_like(grid, memory_format=torch.contiguous_format)


def _upsample3d_vec(input, output_size, scale_factors):
    # upsample_*3d.vec: the output size given, else each spatial size times its scale, floored
    size = tuple(output_size) if output_size is not None else \
        tuple(int(d * f) for d, f in zip(input.shape[2:], scale_factors))
    return torch.empty(tuple(input.shape[:2]) + size, dtype=input.dtype, device=input.device,
                       memory_format=_suggested_format(input))


def _upsample3d_backward_vec(grad_output, output_size, input_size, scale_factors):
    return grad_output.new_empty(tuple(input_size))


def _suggested_format(t):
    # ATen's upsampling keeps a channels-last-3d input channels-last
    return torch.channels_last_3d if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d) \
        and not t.is_contiguous() else torch.contiguous_format


def _like_input(self, *rest, **kwargs):
    # rrelu_with_noise (its noise, a buffer shaped like the input, is written in place), _logcumsumexp
    return torch.empty_like(self)


def _cumulative_helper(self, values, indices, dim):
    return None  # torch.cummax/cummin size values and indices like the input before calling it


def _fused_moving_avg_obs_fq(self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                             averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                             symmetric_quant=False):
    # Quantization-aware training's observer and fake quantisation in one (torch.ao's
    # FusedMovingAvgObsFakeQuantize): the statistics, scale and zero point are updated in place; it
    # returns the fake-quantised output and the mask its backward keeps, both shaped like the input.
    return torch.empty_like(self), torch.empty_like(self, dtype=torch.bool)


KERNELS = {
    "batch_norm_stats": _bn_stats,
    "batch_norm_gather_stats_with_counts": _bn_gather_stats_with_counts,
    "batch_norm_elemt": _bn_elemt,
    "batch_norm_backward_reduce": _bn_backward_reduce,
    "batch_norm_backward_elemt": _bn_backward_elemt,
    "convolution_backward": _conv_backward,
    "nll_loss2d_forward": _nll_loss2d_forward,
    "_adaptive_avg_pool2d_backward": _same_as_self,
    "_adaptive_avg_pool3d_backward": _same_as_self,
    "max_pool3d_with_indices": _max_pool3d_with_indices,
    "max_pool3d_with_indices_backward": _grad_like_self,
    "max_unpool2d": _max_unpool2d,
    "max_unpool3d": _max_unpool3d,
    "replication_pad2d_backward": _grad_like_self,
    "replication_pad3d_backward": _grad_like_self,
    "smooth_l1_loss_backward": _grad_like_self,
    "huber_loss_backward": _grad_like_self,
    "soft_margin_loss_backward": _grad_like_self,
    "_embedding_bag_dense_backward": _embedding_bag_dense_backward,
    "_weight_norm_interface": _weight_norm,
    "_weight_norm_interface_backward": _weight_norm_backward,
    "median": _median,
    "nanmedian": _median,
    "median.dim": _median_dim,
    "nanmedian.dim": _median_dim,
    "kthvalue": _kthvalue,
    "mode": _median_dim,
    "_cdist_backward": _cdist_backward,
    "_pdist_forward": _pdist_forward,
    "_pdist_backward": _pdist_backward,
    "grid_sampler_3d": _grid_sampler_3d,
    "_fused_moving_avg_obs_fq_helper": _fused_moving_avg_obs_fq,
    # 3-D nearest upsampling (3-D U-Nets, video models' decoders) and its backward: 1.13 has meta
    # kernels for the overloads of explicit sizes, not for the .vec ones F.interpolate calls
    "upsample_nearest3d.vec": _upsample3d_vec,
    "_upsample_nearest_exact3d.vec": _upsample3d_vec,
    "upsample_nearest3d_backward.vec": _upsample3d_backward_vec,
    "_upsample_nearest_exact3d_backward.vec": _upsample3d_backward_vec,
    "rrelu_with_noise": _like_input,
    "_logcumsumexp": _like_input,
    "_cummax_helper": _cumulative_helper,
    "_cummin_helper": _cumulative_helper,
    "grid_sampler_2d_backward": _grid_sampler_backward,
    "grid_sampler_3d_backward": _grid_sampler_backward,
}


# torchvision's detection operators (torchvision/csrc/ops; torchvision 0.14 registers no meta
# kernels, later versions some). Shapes follow from the inputs, except nms: how many boxes it keeps
# depends on their values, which the probe does not have, so it keeps every one, the most it could
# (as a data-dependent operator on the CPU fallback does): an upper bound on what follows from it.
def _nms(dets, scores, iou_threshold):
    return torch.empty((dets.size(0),), dtype=torch.int64, device=dets.device)


def _roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    return input.new_empty((rois.size(0), input.size(1), pooled_height, pooled_width))


def _roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels, height, width,
                        sampling_ratio, aligned):
    return grad.new_empty((batch_size, channels, height, width))


def _roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    shape = (rois.size(0), input.size(1), pooled_height, pooled_width)
    return input.new_empty(shape), torch.empty(shape, dtype=torch.int32, device=input.device)


def _roi_pool_backward(grad, rois, argmax, spatial_scale, pooled_height, pooled_width, batch_size, channels, height,
                       width):
    return grad.new_empty((batch_size, channels, height, width))


# Operators the probe always answers itself, whatever kernel is installed: torchvision 0.17 and
# later give nms a fake kernel that refuses meta tensors (its output size is data-dependent), and a
# kernel registered from Python cannot be replaced.
PROBE_KERNELS = {"torchvision::nms": _nms}

TORCHVISION_KERNELS = {
    "nms": _nms,
    "roi_align": _roi_align,
    "_roi_align_backward": _roi_align_backward,
    "roi_pool": _roi_pool,
    "_roi_pool_backward": _roi_pool_backward,
}
_TV_LIBS = []


def _below_autograd(op):
    """An AutogradMeta kernel for an operator with no autograd formula (nms: its inputs are detached
    proposals): PyTorch 1.13 has no fallthrough for AutogradMeta, so a meta tensor stopped there."""
    def kernel(*args, **kwargs):
        guard = torch._C._AutoDispatchBelowAutograd
        if hasattr(guard, "__enter__"):  # PyTorch 2: a context manager
            with guard():
                return op(*args, **kwargs)
        held = guard()  # PyTorch 1.13: in force while the object lives
        try:
            return op(*args, **kwargs)
        finally:
            del held
    return kernel


def _register_torchvision():
    try:
        import torchvision  # noqa: F401 - loads its operators
    except Exception:  # noqa: BLE001 - no torchvision, nothing to register
        return
    meta = torch.library.Library("torchvision", "IMPL", "Meta")
    autograd = torch.library.Library("torchvision", "IMPL", "AutogradMeta")
    _TV_LIBS.extend([meta, autograd])
    for name, fn in TORCHVISION_KERNELS.items():
        qualified = "torchvision::" + name
        if not torch._C._dispatch_has_kernel(qualified):
            continue
        if not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "Meta"):
            meta.impl(name, fn)
            REGISTERED.append(qualified)
        if not any(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, k) for k in ("Autograd", "AutogradMeta")) \
                and not torch._C._dispatch_has_backend_fallback(torch._C.DispatchKey.AutogradMeta):
            autograd.impl(name, _below_autograd(getattr(torch.ops.torchvision, name).default))


def _needs_meta_kernel(qualified):
    """Whether the installed PyTorch has the operator but no meta kernel for it. PyTorch 2
    decomposes some (upsample_nearest3d.vec) into operators that have one, and refuses a meta
    kernel on such a composite; it dropped others (upsample_nearest3d_backward.vec)."""
    try:
        return not any(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key)
                       for key in ("Meta", "CompositeImplicitAutograd"))
    except RuntimeError:  # "operator ... does not exist"
        return False


def register():
    """Registers every kernel in KERNELS the installed PyTorch lacks, and torchvision's. Idempotent."""
    global _LIB
    if _LIB is not None:
        return REGISTERED
    _LIB = torch.library.Library("aten", "IMPL", "Meta")
    for name, fn in KERNELS.items():
        if _needs_meta_kernel("aten::" + name):
            _LIB.impl(name, fn)
            REGISTERED.append(name)
    _register_torchvision()
    return REGISTERED


def foreach(schema, args):
    """A multi-tensor operator (torch._foreach_*): in place it allocates nothing; otherwise it returns
    one new tensor shaped like each tensor of its first list (the CUDA kernels allocate exactly these)."""
    if not schema.returns:
        return None
    first = next(a for a in args if isinstance(a, (list, tuple)))
    return [torch.empty_like(t) for t in first]


# A CPU run costs real memory and time: refuse beyond this many elements over all inputs.
CPU_FALLBACK_MAX_ELEMENTS = 1 << 27


_NONZERO = {"aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::masked_select"}
# Operators whose output size depends on their input values: computed on the host copies where
# those are known (tensor.py), else the fallback's upper bound.
DATA_DEPENDENT = _NONZERO | {"aten::_unique", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
                             "aten::unique_dim_consecutive", "aten::index", "aten::repeat_interleave"}


def _indexed_dims(indices):
    """How many leading dimensions aten::index's indices reach: a mask as many as it has, an index
    tensor or None (a whole dimension) one."""
    return sum(i.dim() if i is not None and i.dtype in (torch.bool, torch.uint8) else 1 for i in indices)


def _index_fallback(func, args, known):
    """x[indices] where x has dimensions after the indexed ones: those pass through to the end of
    the result unchanged (NumPy's advanced indexing, adjacent or not), so the fallback indexes an x
    whose trailing dimensions are 1 and puts their sizes back: the same result shape, without
    filling and copying x (RetinaNet's loss indexes its [anchors, classes] logits by a mask, 11 M
    elements a picture)."""
    x, indices = args
    kept = _indexed_dims(indices)
    trailing = tuple(x.shape[kept:])
    small = torch.empty(tuple(x.shape[:kept]) + (1,) * len(trailing), dtype=x.dtype, device="meta")
    out = cpu_fallback(func, (small, indices), {}, known)
    return torch.empty(tuple(out.shape[:out.dim() - len(trailing)]) + trailing, dtype=out.dtype, device="meta")


def cpu_fallback(func, args, kwargs, known=None):
    """Runs an operator that has no meta kernel on filled CPU tensors of the same shapes and returns
    meta tensors shaped like its outputs. `known` maps id() of a meta argument to the host copy of
    its values, where the probe has them: a data-dependent operator then sizes its output by them
    (`logits[labels != -100]`: the logits' values are unknown, the mask's are not)."""
    known = known or {}
    total = [0]

    def count(x):
        if isinstance(x, torch.Tensor):
            total[0] += x.numel()
        return x
    tree_map(count, (args, kwargs))
    if total[0] > CPU_FALLBACK_MAX_ELEMENTS:
        raise NotImplementedError(
            f"colo_probe: {func._schema.name} has no meta kernel in PyTorch {torch.__version__} and its "
            f"inputs ({total[0]} elements) are too large to run on the CPU")

    name = func._schema.name
    if name == "aten::index" and len(args) == 2 and not kwargs and isinstance(args[0], torch.Tensor) \
            and any(d != 1 for d in args[0].shape[_indexed_dims(args[1]):]):
        return _index_fallback(func, args, known)

    def to_cpu(x):
        if isinstance(x, torch.Tensor) and x.device.type == "meta":
            if id(x) in known:
                return known[id(x)]
            if x.layout != torch.strided:
                raise NotImplementedError(
                    f"colo_probe: {name} on a {str(x.layout).replace('torch.', '')} tensor: the probe "
                    "records dense tensors only (a sparse gradient: nn.Embedding(sparse=True) with SparseAdam)")
            # A data-dependent operator keeps every element, the most it could: nonzero of anything
            # sees no zero. Otherwise floating, boolean and byte inputs
            # (masks: `x[mask]`, torchvision's samplers' uint8 masks) are ones, other integers zeros
            # (valid indices); a sampling operator such as multinomial refuses all-zero probabilities,
            # booleans read True as host reads do; repeat_interleave's counts are ones (each element
            # once). Other operators' shapes do not depend on the values.
            ones = (name in _NONZERO or name == "aten::repeat_interleave" or x.is_floating_point()
                    or x.is_complex() or x.dtype in (torch.bool, torch.uint8))
            return (torch.ones if ones else torch.zeros)(x.shape, dtype=x.dtype)
        return x

    def to_meta(x):
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        return x
    return tree_map(to_meta, func(*tree_map(to_cpu, args), **tree_map(to_cpu, kwargs)))
