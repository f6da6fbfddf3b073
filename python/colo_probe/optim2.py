"""The optimizer step as PyTorch 2 runs it on CUDA, where the installed PyTorch differs in memory.

PyTorch 1.13's multi-tensor (foreach) Adam/AdamW compute `denom = _foreach_add(sqrt, eps)` out of
place, so two parameter-sized temporary lists are alive at the step's peak; PyTorch 2 (the
version the measured jobs ran, adam.py/adamw.py `_multi_tensor_adam[w]`) adds eps in place and
keeps one. While probing on PyTorch < 2 these functions replace 1.13's; on 2.x nothing changes.
Capturable and complex cases keep the installed implementation."""
import contextlib

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


@contextlib.contextmanager
def pytorch2_optimizers():
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
