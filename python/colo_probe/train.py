"""The two training iterations the probe records, written like the loop a training script runs:

    for batch in loader:
        batch = batch.cuda()
        optimizer.zero_grad(set_to_none=...)
        output = model(batch)            # the previous output is freed only now
        loss = loss_fn(output, batch)
        (scaler.scale(loss) if fp16 else loss).backward()
        optimizer.step()

Optimizer state appears on the first step; the second iteration is the steady state."""
import contextlib
import time

import torch
import torch.nn.functional as F

from . import tensor as pt
from . import meta_kernels
from .amp import Autocast, GradScalerModel
from .factories import MetaInit, ProbeDevice
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


def _to_gpu(batch):
    if isinstance(batch, torch.Tensor):
        return pt.wrap_new(batch, "input")
    if isinstance(batch, dict):
        return {k: _to_gpu(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_gpu(v) for v in batch)
    return batch


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
    """Cross-entropy of every logits tensor the model returns (Inception: main + 0.4 x auxiliary)."""
    target = batch[1] if isinstance(batch, (list, tuple)) and len(batch) > 1 else None
    logits = _tensors(output)
    if not logits:
        raise ValueError("the model returned no tensor to take a loss of; give the file a loss_fn(output, batch)")
    loss = None
    for i, t in enumerate(logits):
        flat = t.reshape(-1, t.shape[-1])
        y = target if target is not None and target.numel() == flat.shape[0] else \
            torch.empty((flat.shape[0],), dtype=torch.long, device=t.device)
        term = F.cross_entropy(flat, y)
        loss = term if loss is None else loss + 0.4 * term
    return loss


def _checkpoint_children(model):
    """Gradient checkpointing of each top-level child: its activations are recomputed in backward."""
    import torch.utils.checkpoint as cp
    for child in model.children():
        if not any(True for _ in child.parameters()):
            continue
        orig = child.forward

        def forward(*args, _orig=orig, **kwargs):
            return cp.checkpoint(_orig, *args, use_reentrant=False, **kwargs)
        child.forward = forward


def run_probe(opts):
    """opts: model spec (ModelSpec), batch, input_fn, optimizer, foreach, amp, checkpointing,
    set_to_none, steps, out, header. Returns the TraceWriter (written)."""
    t0 = time.perf_counter()
    rec = TraceWriter(opts["out"])
    rec.header(opts["header"])
    registered = meta_kernels.register()
    spec = opts["model"]
    model = spec.module
    model.train()
    pt.RECORDER = rec
    try:
        rec.phase = "load"
        to_probe_gpu(model)
        if opts["checkpointing"]:
            _checkpoint_children(model)
        opt = make_optimizer(opts["optimizer"], [p for p in model.parameters() if p.requires_grad], opts["foreach"])
        amp = opts["amp"]
        scaler = GradScalerModel() if amp == "fp16" else None
        user_input = spec.input_fn is not None
        input_fn = spec.input_fn or opts["input_fn"]
        loss_fn = spec.loss_fn or default_loss
        live = {}
        device = ProbeDevice()
        with target_gpu_kernels(), device:
            for step in range(1, opts["steps"] + 1):
                rec.phase = "forward"
                device.label = "input"
                with torch.no_grad():
                    host = input_fn(opts["batch"])
                device.label = None
                live["batch"] = _to_gpu(host)
                del host
                rec.phase = "optimizer"
                opt.zero_grad(set_to_none=opts["set_to_none"])
                rec.phase = "forward"
                ctx = Autocast(amp) if amp != "none" else contextlib.nullcontext()
                with ctx:
                    live["output"] = _call(model, live["batch"], user_input)
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
    rec.footer({"seconds": round(time.perf_counter() - t0, 3), "peak_live_bytes": rec.peak,
                "peak_phase": rec.peak_at[0], "peak_op": rec.peak_at[1], "allocations": rec.allocs,
                "registered_meta_kernels": registered, "cpu_fallbacks": dict(pt.CPU_FALLBACKS)})
    rec.write()
    return rec
