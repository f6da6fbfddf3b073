"""The two training iterations the probe records, written like the loop a training script runs:

    for batch in loader:
        batch = batch.cuda()
        optimizer.zero_grad(set_to_none=...)
        output = model(batch)            # the previous output is freed only now
        loss = loss_fn(output, batch)
        (scaler.scale(loss) if fp16 else loss).backward()
        optimizer.step()

Optimizer state appears on the first step; the second iteration is the steady state.

With `data_parallel` N > 1 the model runs as torch.nn.DataParallel over N GPUs and the trace is what
GPU 0 holds (DataParallel below)."""
import contextlib
import inspect
import time

import torch
import torch.nn.functional as F

from . import tensor as pt
from . import detection, meta_kernels
from .amp import Autocast, GradScalerModel, recompute_under_same_autocast
from .factories import MetaInit, ProbeDevice
from .optim2 import pytorch2_optimizers
from .patches import Patches
from .target_kernels import target_gpu_kernels
from .trace import TraceWriter

OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw", "rmsprop", "adagrad", "adadelta")


def make_optimizer(name, params, foreach):
    kw = {"foreach": foreach}
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, **kw)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, **kw)
    if name == "adam":
        return torch.optim.Adam(params, **kw)
    if name == "adamw":
        return torch.optim.AdamW(params, **kw)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, **kw)
    if name == "adagrad":
        return torch.optim.Adagrad(params, **kw)
    if name == "adadelta":
        return torch.optim.Adadelta(params, **kw)
    raise ValueError(f"optimizer '{name}': expected one of {', '.join(OPTIMIZERS)}")


def to_probe_gpu(module):
    """model.to('cuda'): every parameter and buffer becomes a storage on the probe's GPU."""
    memo = {}
    for m in module.modules():
        for key, p in list(m._parameters.items()):
            if p is None:
                continue
            if id(p) not in memo:
                memo[id(p)] = torch.nn.Parameter(pt.wrap_new(p.detach(), "param"), p.requires_grad)
            m._parameters[key] = memo[id(p)]
        for key, b in list(m._buffers.items()):
            if b is None:
                continue
            if id(b) not in memo:
                memo[id(b)] = pt.wrap_new(b, "buffer")
            m._buffers[key] = memo[id(b)]
    return module


def _to_gpu(batch, memo=None):
    """batch.to('cuda'), element by element; one host tensor named twice (labels=input_ids) is one copy."""
    memo = {} if memo is None else memo
    if isinstance(batch, torch.Tensor):
        if id(batch) not in memo:
            if batch.device.type == "meta":
                memo[id(batch)] = pt.wrap_new(batch, "input")
            else:  # a host tensor: one new storage (wrap_new here would see its meta twin made a probe tensor too)
                gpu = _new_gpu0(batch.shape, batch.dtype, "input", batch.stride())
                if pt.KEEP_VALUES[0] and batch.layout == torch.strided and batch.numel() <= pt.HOST_NUMEL:
                    pt.set_values(gpu, batch.detach().clone())  # boxes, labels, lengths the model reads back
                gpu.requires_grad_(batch.requires_grad)
                memo[id(batch)] = gpu
        return memo[id(batch)]
    if isinstance(batch, dict):
        return {k: _to_gpu(v, memo) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_gpu(v, memo) for v in batch)
    return batch


def takes_input_shape(fn):
    """True when a model file's input_fn takes (batch, input_shape) rather than (batch)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def default_input_fn(shape, dtype, classes):
    def make(batch):
        x = torch.empty((batch,) + tuple(shape), dtype=dtype, device="meta")
        y = torch.empty((batch,), dtype=torch.long, device="meta")
        return (x, y)
    return make


def _call(model, batch, user_input):
    if not user_input:
        return model(batch[0])
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, (list, tuple)):
        return model(*batch)
    return model(batch)


def _tensors(output):
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, dict):
        return [v for v in output.values() if isinstance(v, torch.Tensor)]
    if isinstance(output, (list, tuple)):
        return [v for v in output if isinstance(v, torch.Tensor)]
    return []


def default_loss(output, batch):
    """Cross-entropy of every logits tensor the model returns (Inception: main + 0.4 x auxiliary;
    segmentation: per pixel, over dimension 1 of [batch, classes, height, width])."""
    target = batch[1] if isinstance(batch, (list, tuple)) and len(batch) > 1 else None
    logits = _tensors(output)
    if not logits:
        raise ValueError("the model returned no tensor to take a loss of; give the file a loss_fn(output, batch)")
    loss = None
    for i, t in enumerate(logits):
        if t.dim() == 0 or not t.is_floating_point():
            raise ValueError(f"the model returned a {'0-dim' if t.dim() == 0 else str(t.dtype)} tensor, not logits to "
                             "take a cross-entropy of; give the file a loss_fn(output, batch)")
        if t.dim() >= 4:
            # Dense logits [batch, classes, *spatial] (segmentation): one class per pixel.
            y = torch.empty((t.shape[0],) + tuple(t.shape[2:]), dtype=torch.long, device=t.device)
            term = F.cross_entropy(t, y)
        else:
            flat = t.reshape(-1, t.shape[-1])
            y = target if target is not None and target.numel() == flat.shape[0] else \
                torch.empty((flat.shape[0],), dtype=torch.long, device=t.device)
            term = F.cross_entropy(flat, y)
        loss = term if loss is None else loss + 0.4 * term
    return loss


def _checkpointed(orig):
    import torch.utils.checkpoint as cp

    def forward(*args, **kwargs):
        return cp.checkpoint(recompute_under_same_autocast(orig), *args, use_reentrant=False, **kwargs)
    forward.colo_checkpoint = True
    return forward


def _checkpoint_children(model):
    """Gradient checkpointing of each top-level child: its activations are recomputed in backward."""
    for child in model.children():
        if not any(True for _ in child.parameters()):
            continue
        child.forward = _checkpointed(child.forward)


# ---------------------------------------------------------------------------------------------
# torch.nn.DataParallel as GPU 0 sees it (torch/nn/parallel/{data_parallel,replicate,
# scatter_gather,_functions,comm}.py and torch/csrc/cuda/comm.cpp). Each forward:
#   scatter   every batch tensor is chunked along dim 0 (torch.chunk: ceil(B/N) rows each); GPU 0's
#             chunk is a view of the whole batch, which the script put on GPU 0; the other chunks
#             are copied GPU 0 -> GPU k and cost GPU 0 nothing.
#   replicate Broadcast.apply(params): GPU 0's "copies" are the parameters themselves (views through
#             the Broadcast node); broadcast_coalesced flattens each chunk of its take_tensors (by
#             dtype, a chunk closes once it reaches 10 MiB) into one temporary buffer on GPU 0
#             (a single-tensor chunk is not copied); buffers likewise (no autograd).
#   replica 0 runs GPU 0's chunk; replicas 1..N-1 run on their own GPUs and are not recorded.
#   gather    every output tensor becomes a new full-size contiguous tensor on GPU 0 (replica k's
#             part copied in); a 0-dim output (a loss computed in forward) becomes a vector of N.
# Backward: Gather's backward scatters the incoming gradient (GPU 0 keeps a view of its chunk);
# Broadcast's backward (ReduceAddCoalesced) runs once every replica's backward is done, so GPU 0
# holds all of replica 0's parameter gradients until then; reduce_add_coalesced then walks Python's
# _take_tensors chunks (<= 10 MiB, by dtype): a multi-tensor chunk is flattened (torch.cat) on GPU 0,
# the NCCL reduce writes a new buffer the chunk's size on GPU 0, and the parameters' .grad are views
# of those buffers (AccumulateGrad takes them as they are).
# Approximated: replicas k >= 1 are assumed to return outputs shaped like replica 0's with dim 0
# scaled to their chunk (a dim 0 that is not the chunk's rows is taken as N x replica 0's); batch
# inputs that require grad are scattered as plain views (no Gather of their gradient); NCCL is
# assumed (no reduce_add fallback copies); NCCL's own buffers and the other GPUs are not recorded;
# a batch that torch.chunk leaves in one piece runs unwrapped (DataParallel would still replicate
# and gather it once).
COALESCE_BYTES = 10485760  # comm.broadcast_coalesced / reduce_add_coalesced buffer_size


def chunk_sizes(n, parts):
    """Rows per replica as torch.chunk(parts) gives them (fewer replicas when n < parts)."""
    step = -(-n // parts)
    return [min(step, n - i) for i in range(0, n, step)]


def _take_tensors_cpp(tensors, limit):
    """torch::utils::take_tensors (broadcast_coalesced): per dtype; the tensor is added first, and
    the group is emitted once it reaches the limit."""
    groups, out = {}, []
    for i, t in enumerate(tensors):
        g = groups.setdefault(t.dtype, [[], 0])
        g[0].append(i)
        g[1] += t.numel() * t.element_size()
        if g[1] >= limit:
            out.append(g[0])
            groups[t.dtype] = [[], 0]
    return out + [g[0] for g in groups.values() if g[0]]


def _take_tensors_py(tensors, limit):
    """torch._utils._take_tensors (reduce_add_coalesced): per dtype; a group is emitted before the
    tensor that would take it over the limit."""
    groups, out = {}, []
    for i, t in enumerate(tensors):
        size = t.numel() * t.element_size()
        g = groups.setdefault(t.dtype, [[], 0])
        if g[1] + size > limit and g[1] > 0:
            out.append(g[0])
            g = groups[t.dtype] = [[], 0]
        g[0].append(i)
        g[1] += size
    return out + [g[0] for g in groups.values() if g[0]]


def _flatten(tensors):
    """torch::utils::flatten_dense_tensors: one tensor is viewed, several are concatenated."""
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    return torch.cat([t.contiguous().view(-1) for t in tensors])


def _broadcast_temporaries(tensors):
    for chunk in _take_tensors_cpp(tensors, COALESCE_BYTES):
        flat = _flatten([tensors[i] for i in chunk])  # GPU 0's send buffer, dropped per chunk
        del flat


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *params):
        _broadcast_temporaries(params)
        return tuple(p.view_as(p) for p in params)

    @staticmethod
    def backward(ctx, *grads):
        """ReduceAddCoalesced to GPU 0; `grads` are replica 0's (unused parameters get zeros, as
        autograd materialises them for a custom Function)."""
        out = [None] * len(grads)
        flat = None
        for chunk in _take_tensors_py(grads, COALESCE_BYTES):
            flat = _flatten([grads[i] for i in chunk])  # the previous chunk's flat dies after this one
            result = _new_gpu0(flat.shape, flat.dtype, "reduce_add")
            offset = 0
            for i in chunk:
                n = grads[i].numel()
                out[i] = result[offset:offset + n].view(grads[i].shape)
                offset += n
            del result
        del flat
        return tuple(out)


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, total, x):
        ctx.rows = x.shape[0] if x.dim() else None
        shape = (total,) + tuple(x.shape[1:])
        return _new_gpu0(shape, x.dtype, "gather")

    @staticmethod
    def backward(ctx, grad):
        # Scatter.apply(input_gpus, input_sizes, dim, grad): GPU 0's part is a view.
        return None, (grad[0] if ctx.rows is None else grad.narrow(0, 0, ctx.rows))


_DEVICE = [None]  # the ProbeDevice of the running probe


def _new_gpu0(shape, dtype, op, stride=None):
    """A new storage on GPU 0 named `op` in the trace (under ProbeDevice the meta factory call itself
    makes the probe tensor; elsewhere, e.g. on autograd's backward thread, it is wrapped here)."""
    device = _DEVICE[0]
    saved = device.label if device is not None else None
    if device is not None:
        device.label = op
    try:
        if stride is None:
            t = torch.empty(shape, dtype=dtype, device="meta")
        else:
            t = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    finally:
        if device is not None:
            device.label = saved
    return pt.wrap_new(t, op)


def _replica0(network, params, views):
    """replicate(network, devices)[0]: shallow module copies whose parameters are `views`."""
    index = {id(p): i for i, p in enumerate(params)}
    modules = list(network.modules())
    where = {id(m): i for i, m in enumerate(modules)}
    copies = [m._replicate_for_data_parallel() for m in modules]
    for m, r in zip(modules, copies):
        for key, child in m._modules.items():
            if child is None:
                r._modules[key] = None
            else:
                setattr(r, key, copies[where[id(child)]])
        for key, p in m._parameters.items():
            if p is None:
                r._parameters[key] = None
            else:
                setattr(r, key, views[index[id(p)]])
        for key, b in m._buffers.items():
            if b is not None:
                setattr(r, key, b)
        if getattr(r.__dict__.get("forward"), "colo_checkpoint", False):  # --checkpointing: the replica's own
            r.forward = _checkpointed(type(m).forward.__get__(r))
    return copies[0]


class DataParallel:
    """model(batch) as torch.nn.DataParallel(model) over `n` GPUs computes it, recorded on GPU 0."""

    def __init__(self, module, n):
        self.module = module
        self.n = n

    def _scatter(self, obj, rows):
        if isinstance(obj, torch.Tensor):
            return obj.narrow(0, 0, rows) if obj.dim() else obj
        if isinstance(obj, dict):
            return type(obj)((k, self._scatter(v, rows)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)):
            return type(obj)(self._scatter(v, rows) for v in obj)
        return obj

    def _gather(self, obj, rows, total, replicas):
        if isinstance(obj, torch.Tensor):
            if obj.dim() == 0:
                return _Gather.apply(replicas, obj)
            size = total if obj.shape[0] == rows else obj.shape[0] * replicas
            return _Gather.apply(size, obj)
        if isinstance(obj, dict):
            return type(obj)((k, self._gather(v, rows, total, replicas)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)):
            return type(obj)(self._gather(v, rows, total, replicas) for v in obj)
        return obj

    def __call__(self, batch, user_input):
        return self.run(batch, lambda module, local: _call(module, local, user_input))

    def run(self, batch, call):
        """call(module, batch) on the whole batch (one replica) or on replica 0's chunk, gathered."""
        total = _batch_rows(batch)
        sizes = chunk_sizes(total, self.n)
        if len(sizes) == 1:
            return call(self.module, batch)
        local = self._scatter(batch, sizes[0])
        params = list(self.module.parameters())
        views = _Broadcast.apply(*params)
        buffers = list(self.module.buffers())
        with torch.no_grad():
            _broadcast_temporaries(buffers)
        replica = _replica0(self.module, params, views)
        del views
        out = call(replica, local)
        del replica, local
        return self._gather(out, sizes[0], total, len(sizes))


class ScriptDataParallel(torch.nn.Module):
    """torch.nn.DataParallel as a user's script builds it (--script): over `gpus` GPUs (the probe's
    target; device_ids narrows them), positional and keyword inputs scattered, recorded on GPU 0."""

    gpus = 1

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if dim != 0:
            raise ValueError("the probe's DataParallel scatters along dim 0 only")
        self.module = module
        self.device_ids = list(range(self.gpus)) if device_ids is None else [
            d.index if isinstance(d, torch.device) else int(d) for d in device_ids]
        bad = [d for d in self.device_ids if d is None or not 0 <= d < self.gpus]
        if bad or len(set(self.device_ids)) != len(self.device_ids):
            raise RuntimeError(f"DataParallel device_ids {self.device_ids}: the target has GPUs 0..{self.gpus - 1} "
                               "(--gpus), each named once")
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        dp = DataParallel(self.module, max(1, len(self.device_ids)))
        return dp.run((inputs, kwargs), lambda module, local: module(*local[0], **local[1]))


def _batch_rows(batch):
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else ()
    for v in items:
        rows = _batch_rows(v)
        if rows is not None:
            return rows
    raise ValueError("data parallel: the batch has no tensor to scatter")


def run_probe(opts):
    """opts: model spec (ModelSpec), batch, input_fn, optimizer, foreach, amp, checkpointing,
    set_to_none, steps, out, header; optional input_shape (given to a model file's
    input_fn(batch, input_shape)), data_parallel (GPUs, default 1) and prelude (called with the
    model on the probe's GPU before the first iteration). Returns the TraceWriter."""
    t0 = time.perf_counter()
    rec = TraceWriter(opts["out"])
    rec.header(opts["header"])
    registered = meta_kernels.register()
    spec = opts["model"]
    model = spec.module
    model.train()
    pt.RECORDER = rec
    # Values (tensor.py): where the model's code reads them back (a model file's code, detection).
    pt.KEEP_VALUES[0] = spec.keep_values
    patches = Patches()
    if spec.keep_values:
        detection.install(patches)  # torchvision's detection sampler: the sample that records the most
    try:
        rec.phase = "load"
        to_probe_gpu(model)
        if opts["checkpointing"]:
            _checkpoint_children(spec.checkpoint_root or model)
        opt = make_optimizer(opts["optimizer"], [p for p in model.parameters() if p.requires_grad], opts["foreach"])
        amp = opts["amp"]
        scaler = GradScalerModel() if amp == "fp16" else None
        user_input = spec.input_fn is not None
        input_fn = spec.input_fn or opts["input_fn"]
        if user_input and takes_input_shape(spec.input_fn):
            shape = opts.get("input_shape")
            input_fn = lambda n, _fn=spec.input_fn: _fn(n, tuple(shape) if shape else None)  # noqa: E731
        loss_fn = spec.loss_fn or default_loss
        gpus = opts.get("data_parallel", 1)
        forward = DataParallel(model, gpus) if gpus > 1 else (lambda b, u: _call(model, b, u))
        live = {}
        device = ProbeDevice()
        _DEVICE[0] = device
        with target_gpu_kernels(), pytorch2_optimizers(), device:
            if opts.get("prelude") is not None:
                # what the script runs on the GPU before training, e.g. a torchsummary forward
                # (GPUMemNet's generator); it allocates and frees like any forward
                rec.phase = "forward"
                opts["prelude"](model)
            for step in range(1, opts["steps"] + 1):
                rec.phase = "forward"
                device.label = "input"
                with torch.no_grad():
                    host = input_fn(opts["batch"])
                device.label = None
                try:
                    rows = _batch_rows(host)
                except ValueError:
                    rows = None
                if rows == 0:  # recorded under --batch's name, it would be a trace of nothing
                    raise ValueError(f"input_fn({opts['batch']}) returned an empty batch (0 rows)")
                live["batch"] = _to_gpu(host)
                del host
                rec.phase = "optimizer"
                opt.zero_grad(set_to_none=opts["set_to_none"])
                rec.phase = "forward"
                ctx = Autocast(amp) if amp != "none" else contextlib.nullcontext()
                with ctx:
                    live["output"] = forward(live["batch"], user_input)
                    live["loss"] = loss_fn(live["output"], live["batch"])
                rec.phase = "backward"
                (scaler.scale(live["loss"]) if scaler else live["loss"]).backward()
                rec.phase = "optimizer"
                if scaler:
                    scaler.step(opt)
                else:
                    opt.step()
                rec.step(step)
    finally:
        pt.RECORDER = None
        pt.KEEP_VALUES[0] = False
        patches.undo()
        _DEVICE[0] = None
    rec.footer({"seconds": round(time.perf_counter() - t0, 3), "peak_live_bytes": rec.peak,
                "peak_phase": rec.peak_at[0], "peak_op": rec.peak_at[1], "allocations": rec.allocs,
                "registered_meta_kernels": registered, "cpu_fallbacks": dict(pt.CPU_FALLBACKS)})
    rec.write()
    return rec
