"""The optimizer step as PyTorch 2 runs it on CUDA, where the installed PyTorch differs in memory.

PyTorch 1.13's multi-tensor (foreach) Adam/AdamW compute `denom = _foreach_add(sqrt, eps)` out of
place, so two parameter-sized temporary lists are alive at the step's peak; PyTorch 2 (the
version the measured jobs ran, adam.py/adamw.py `_multi_tensor_adam[w]`) adds eps in place and
keeps one. While probing on PyTorch < 2 these functions replace 1.13's; on 2.x nothing changes.
Capturable and complex cases keep the installed implementation.

fused=True (Adam, AdamW, SGD; PyTorch 2's torch._fused_adam_ / _fused_adamw_ / _fused_sgd_ CUDA
kernels): the first step creates the state - Adam's exp_avg and exp_avg_sq (and max_exp_avg_sq
with amsgrad) and a step counter on the GPU, SGD's momentum buffer, a copy of the gradient - and
every step updates it in place in one kernel, with no temporaries (fused_step). 1.13 has no fused
AdamW or SGD and its fused Adam kernel is CUDA-only; the optimizer is built without it and marked,
and the probe steps it as the fused kernel would, on every PyTorch version."""
import contextlib
import inspect

import torch
import torch.optim.adam as _adam_mod
import torch.optim.adamw as _adamw_mod


def _step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
          weight_decay, eps, maximize, decoupled):
    if not params:
        return
    if maximize:
        grads = torch._foreach_neg(tuple(grads))
    torch._foreach_add_(state_steps, 1)
    if decoupled:
        torch._foreach_mul_(params, 1 - lr * weight_decay)
    elif weight_decay != 0:
        grads = torch._foreach_add(grads, params, alpha=weight_decay)  # a new list, as in 2.x
    torch._foreach_mul_(exp_avgs, beta1)  # 2.x: _foreach_lerp_ (in place as well)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    del grads
    bias_correction1 = [1 - beta1 ** step.item() for step in state_steps]
    bias_correction2 = [1 - beta2 ** step.item() for step in state_steps]
    step_size = [(lr / bc) * -1 for bc in bias_correction1]
    bias_correction2_sqrt = [bc ** 0.5 for bc in bias_correction2]
    src = exp_avg_sqs
    if amsgrad:
        torch._foreach_maximum_(max_exp_avg_sqs, exp_avg_sqs)
        src = max_exp_avg_sqs
    denom = torch._foreach_sqrt(src)
    torch._foreach_div_(denom, bias_correction2_sqrt)
    torch._foreach_add_(denom, eps)
    torch._foreach_addcdiv_(params, exp_avgs, denom, step_size)


def _usable(params, capturable):
    return not capturable and not any(torch.is_complex(p) for p in params)


def _make(orig, decoupled):
    def multi_tensor(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *args, amsgrad, beta1,
                     beta2, lr, weight_decay, eps, maximize, capturable, **kw):
        if not _usable(params, capturable) or any(a is not None for a in args):
            return orig(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *args, amsgrad=amsgrad,
                        beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize,
                        capturable=capturable, **kw)
        _step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
              weight_decay, eps, maximize, decoupled)
    return multi_tensor


FUSED_KINDS = {torch.optim.Adam: "adam", torch.optim.AdamW: "adam", torch.optim.SGD: "sgd"}


def _accept_fused(cls, kind):
    """cls.__init__ taking fused=True on any PyTorch: built without it (foreach=False), marked."""
    orig = cls.__init__

    def init(self, params, *args, fused=None, **kwargs):
        if fused:
            self._colo_fused = kind
            kwargs["foreach"] = False
        orig(self, params, *args, **kwargs)
        if fused:
            for group in self.param_groups:
                group["fused"] = True
    # Scripts test for the option (nanoGPT: 'fused' in inspect.signature(torch.optim.AdamW).parameters)
    # and take it where PyTorch 2 has it: so must they here.
    sig = inspect.signature(orig)
    if "fused" not in sig.parameters:
        params = list(sig.parameters.values())
        at = next((i for i, q in enumerate(params) if q.kind == q.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("fused", inspect.Parameter.KEYWORD_ONLY, default=None))
        sig = sig.replace(parameters=params)
    init.__signature__ = sig
    return orig, init


def fused_step(opt):
    """The step of an optimizer built with fused=True, as the fused CUDA kernel allocates (module
    docstring); values are not computed (the probe has none)."""
    kind = opt._colo_fused

    def step(closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = opt.state[p]
                    if kind == "adam" and not state:
                        state["step"] = p.new_zeros((), dtype=torch.float32)
                        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        if group.get("amsgrad"):
                            state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    elif kind == "sgd" and group.get("momentum", 0) != 0 and "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.clone(p.grad).detach()
        return loss
    return step


@contextlib.contextmanager
def pytorch2_optimizers():
    fused = {cls: _accept_fused(cls, kind) for cls, kind in FUSED_KINDS.items()}
    for cls, (_, init) in fused.items():
        cls.__init__ = init
    try:
        if int(torch.__version__.split(".")[0]) >= 2:
            yield
            return
        saved = (_adam_mod._multi_tensor_adam, _adamw_mod._multi_tensor_adamw)
        _adam_mod._multi_tensor_adam = _make(saved[0], decoupled=False)
        _adamw_mod._multi_tensor_adamw = _make(saved[1], decoupled=True)
        try:
            yield
        finally:
            _adam_mod._multi_tensor_adam, _adamw_mod._multi_tensor_adamw = saved
    finally:
        for cls, (orig, _) in fused.items():
            cls.__init__ = orig
