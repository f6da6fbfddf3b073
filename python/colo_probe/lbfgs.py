"""torch.optim.LBFGS's step along its longest path, with its history in its steady state.

LBFGS decides how long a step runs from values the probe does not have: it returns at once when
the gradient is already small, stores a curvature pair only when y.s > 1e-10, and stops iterating
on lack of progress. On the probe's assumed values (zeros) PyTorch's own step returned after one
closure with an empty history, so a job whose GPU holds `history_size` pairs of flat vectors
(200 copies of every parameter by default) was recorded as if it held none.

The probe steps an unmodified LBFGS with this function instead. It makes the allocations of
PyTorch's step (torch/optim/lbfgs.py, the same in 1.13 and 2.x), in the same order and with the
same operators, along the path that keeps the most: no early return, every pair stored, no
convergence test ends the loop - only max_iter and max_eval do, as in a run that has not
converged. From the second step on, the history holds `history_size` pairs (padded, if fewer
iterations have run, by pairs made as the real ones are): the steady state of a job that has run
`history_size` iterations, which every LBFGS job that trains for a while reaches. A job that stops
sooner holds fewer pairs and is over-estimated by at most the difference (stated in
docs/ESTIMATION.md). With line_search_fn="strong_wolfe" the line search brackets after one
extrapolation and zooms until max_ls evaluations, its longest path; the parameters' copy and the
gradient copies it holds are made as PyTorch makes them.

Values are not computed (the probe has none): comparisons that PyTorch makes are still evaluated
where they allocate on the GPU (the temporaries of `flat_grad.abs().max()`), and ignored."""
import torch


def longest_path_step(opt):
    """The step the probe runs for `opt`, an LBFGS whose class keeps PyTorch's own step."""
    def step(closure):
        assert len(opt.param_groups) == 1  # as PyTorch's step
        closure = torch.enable_grad()(closure)
        with torch.no_grad():
            return _step(opt, closure)
    return step


def uses_pytorch_step(opt):
    return isinstance(opt, torch.optim.LBFGS) and type(opt).step is torch.optim.LBFGS.step


def _converged(flat_grad, tolerance):
    # PyTorch: `opt_cond = flat_grad.abs().max() <= tolerance_grad` - its temporaries, not its answer.
    return flat_grad.abs().max() <= tolerance


def _step(opt, closure):
    group = opt.param_groups[0]
    lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
    tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
    line_search_fn, history_size = group["line_search_fn"], group["history_size"]
    if line_search_fn is not None and line_search_fn != "strong_wolfe":
        raise RuntimeError("only 'strong_wolfe' is supported")  # PyTorch's own message
    state = opt.state[opt._params[0]]
    state.setdefault("func_evals", 0)
    state.setdefault("n_iter", 0)

    orig_loss = closure()
    loss = float(orig_loss)
    current_evals = 1
    state["func_evals"] += 1
    flat_grad = opt._gather_flat_grad()
    _converged(flat_grad, tolerance_grad)

    d, t = state.get("d"), state.get("t")
    old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
    H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
    prev_loss = state.get("prev_loss")
    if old_dirs is not None:
        _fill_history(old_dirs, old_stps, ro, history_size, flat_grad, prev_flat_grad, d, t)

    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        state["n_iter"] += 1
        if state["n_iter"] == 1:
            d = flat_grad.neg()
            old_dirs, old_stps, ro = [], [], []
            H_diag = 1
        else:
            y = flat_grad.sub(prev_flat_grad)
            s = d.mul(t)
            ys = y.dot(s)
            if len(old_dirs) == history_size:  # every pair is stored (y.s > 1e-10 assumed)
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1. / ys)
            H_diag = ys / y.dot(y)
            num_old = len(old_dirs)
            if "al" not in state:
                state["al"] = [None] * history_size
            al = state["al"]
            q = flat_grad.neg()
            for i in range(num_old - 1, -1, -1):
                al[i] = old_stps[i].dot(q) * ro[i]
                q.add_(old_dirs[i], alpha=-al[i])
            d = r = torch.mul(q, H_diag)
            for i in range(num_old):
                be_i = old_dirs[i].dot(r) * ro[i]
                r.add_(old_stps[i], alpha=al[i] - be_i)
        if prev_flat_grad is None:
            prev_flat_grad = flat_grad.clone(memory_format=torch.contiguous_format)
        else:
            prev_flat_grad.copy_(flat_grad)
        prev_loss = loss
        if state["n_iter"] == 1:
            t = min(1., 1. / flat_grad.abs().sum()) * lr
        else:
            t = lr
        gtd = flat_grad.dot(d)  # a descent direction is assumed: the loop goes on
        ls_func_evals = 0
        if line_search_fn is not None:
            x_init = opt._clone_param()

            def obj_func(x, t, d):
                return opt._directional_evaluate(closure, x, t, d)
            loss, flat_grad, t, ls_func_evals = _strong_wolfe_longest(obj_func, x_init, t, d, loss, flat_grad, gtd)
            opt._add_grad(t, d)
            _converged(flat_grad, tolerance_grad)
        else:
            opt._add_grad(t, d)
            if n_iter != max_iter:
                with torch.enable_grad():
                    loss = float(closure())
                flat_grad = opt._gather_flat_grad()
                _converged(flat_grad, tolerance_grad)
                ls_func_evals = 1
        current_evals += ls_func_evals
        state["func_evals"] += ls_func_evals
        if n_iter == max_iter or current_evals >= max_eval:
            break
        d.mul(t).abs().max() <= tolerance_change  # the lack-of-progress test's temporaries

    state["d"], state["t"] = d, t
    state["old_dirs"], state["old_stps"], state["ro"] = old_dirs, old_stps, ro
    state["H_diag"], state["prev_flat_grad"], state["prev_loss"] = H_diag, prev_flat_grad, prev_loss
    return orig_loss


def _fill_history(old_dirs, old_stps, ro, history_size, flat_grad, prev_flat_grad, d, t):
    """Pairs made as the step makes them, until the history is full (module docstring)."""
    while len(old_dirs) < history_size:
        y = flat_grad.sub(prev_flat_grad)
        s = d.mul(t)
        old_dirs.insert(0, y)
        old_stps.insert(0, s)
        ro.insert(0, 1. / y.dot(s))


def _strong_wolfe_longest(obj_func, x, t, d, f, g, gtd, max_ls=25):
    """torch.optim.lbfgs._strong_wolfe on the path that evaluates and holds the most: one
    extrapolation, a bracket, then zoom steps until max_ls evaluations."""
    d_norm = d.abs().max()
    g = g.clone(memory_format=torch.contiguous_format)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    # bracketing: the first trial extrapolates ...
    g_prev, gtd_prev = g_new.clone(memory_format=torch.contiguous_format), gtd_new
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals += 1
    gtd_new = g_new.dot(d)
    ls_iter = 1
    # ... the second brackets the minimum
    bracket_g = [g_prev, g_new.clone(memory_format=torch.contiguous_format)]
    bracket_gtd = [gtd_prev, gtd_new]  # g_prev stays referenced, as in PyTorch's function
    low_pos = 0
    while ls_iter < max_ls:
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        # the trial lowers f: it replaces the bracket's low end (a copy of its gradient)
        bracket_g[low_pos] = g_new.clone(memory_format=torch.contiguous_format)
        bracket_gtd[low_pos] = gtd_new
    return f_new, bracket_g[low_pos], t, ls_func_evals
