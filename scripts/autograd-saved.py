#!/usr/bin/env python3
"""What autograd saves for backward, per operator, on the installed PyTorch: for each case, the
saved tensors (node.attribute and shape) of at least 8 elements in the graph it builds, as JSON.
Run it under two PyTorch versions and compare, e.g. Debian 12's 1.13 and the 2.6 chroot of
scripts/pytorch2-chroot.sh (docs/ESTIMATION.md, "The probe on PyTorch 2"):
  /usr/bin/python3 scripts/autograd-saved.py > a.json
  bash scripts/pytorch2-chroot.sh python scripts/autograd-saved.py > b.json
  python3 scripts/autograd-saved.py --diff a.json b.json
A difference is memory the probe records on one version and not on the other: the probe runs the
installed PyTorch's autograd, while the target GPU runs the job's."""
import json
import sys

if len(sys.argv) == 4 and sys.argv[1] == "--diff":
    def load(path):
        try:
            with open(path, encoding="utf-8") as f:
                j = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"autograd-saved: {path}: {' '.join((e.strerror if isinstance(e, OSError) else str(e)).split())}")
        if not isinstance(j, dict):
            sys.exit(f"autograd-saved: {path}: not this script's output (a JSON object of cases)")
        return j
    a, b = load(sys.argv[2]), load(sys.argv[3])
    for k in list(a) + [k for k in b if k not in a]:  # a case only one version has is a difference too
        if a.get(k) != b.get(k):
            print(f"{k}\n  {sys.argv[2]}: {a.get(k)}\n  {sys.argv[3]}: {b.get(k)}")
    sys.exit(0)
if len(sys.argv) > 1:
    print("usage: autograd-saved.py [--diff A.json B.json]", file=sys.stderr)
    sys.exit(2)
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(f"{sys.executable}: no PyTorch here (Debian's is /usr/bin/python3, python3-torch)")
x = torch.randn(2, 3, 4, 4, requires_grad=True)
cases = {
 "mean.dim": lambda: x.mean((2, 3)), "mean": lambda: x.mean(), "sum.dim": lambda: x.sum((2, 3)), "sum": lambda: x.sum(),
 "adaptive_avg_pool2d(1)": lambda: F.adaptive_avg_pool2d(x, 1), "adaptive_avg_pool2d(2)": lambda: F.adaptive_avg_pool2d(x, 2),
 "avg_pool2d": lambda: F.avg_pool2d(x, 2), "var": lambda: x.var((2, 3)), "std": lambda: x.std((2,3)), "amax": lambda: x.amax((2,3)),
 "logsumexp": lambda: x.logsumexp(1), "norm": lambda: x.norm(dim=1), "nansum": lambda: x.nansum((2,3)), "expand": lambda: x[:, :1].expand(2, 3, 4, 4),
 "repeat": lambda: x.repeat(1, 2, 1, 1), "mul scalar": lambda: x * 2, "add": lambda: x + x, "sub": lambda: x - 1, "div scalar": lambda: x / 2,
 "cumsum": lambda: x.cumsum(1), "prod": lambda: x.prod(1), "flip": lambda: x.flip(1), "roll": lambda: x.roll(1, 1), "pad": lambda: F.pad(x, (1, 1)),
 "interpolate nearest": lambda: F.interpolate(x, scale_factor=2), "bilinear": lambda: F.interpolate(x, scale_factor=2, mode="bilinear"),
 "cat": lambda: torch.cat([x, x], 1), "stack": lambda: torch.stack([x, x]), "index_select": lambda: x.index_select(1, torch.tensor([0, 2])),
 "gather": lambda: x.gather(1, torch.zeros(2, 1, 4, 4, dtype=torch.long)), "masked_fill": lambda: x.masked_fill(x > 0, 0),
 "where": lambda: torch.where(x > 0, x, x * 0), "clamp": lambda: x.clamp(0, 1), "pow2": lambda: x.pow(2), "mse": lambda: F.mse_loss(x, x.detach()),
 "l1": lambda: F.l1_loss(x, x.detach()), "softmax": lambda: x.softmax(1), "log_softmax": lambda: x.log_softmax(1), "layer_norm": lambda: F.layer_norm(x, (4,)),
 "group_norm": lambda: F.group_norm(x, 3), "dropout": lambda: F.dropout(x, 0.5), "max_pool": lambda: F.max_pool2d(x, 2), "unfold": lambda: F.unfold(x, 2),
 "pixel_shuffle": lambda: F.pixel_shuffle(x.repeat(1, 4, 1, 1)[:, :4], 2), "linalg_norm": lambda: torch.linalg.vector_norm(x, dim=1), "max.dim": lambda: x.max(1)[0],
 "topk": lambda: x.topk(2, 1)[0], "sort": lambda: x.sort(1)[0], "trace_sum_sq": lambda: (x * x).sum(), "einsum": lambda: torch.einsum("bchw->bc", x),
 "binary_cross_entropy_logits": lambda: F.binary_cross_entropy_with_logits(x, x.detach().sigmoid()), "smooth_l1": lambda: F.smooth_l1_loss(x, x.detach()),
 "cosine_similarity": lambda: F.cosine_similarity(x, x.detach() + 1, 1), "normalize": lambda: F.normalize(x, dim=1), "silu": lambda: F.silu(x), "gelu": lambda: F.gelu(x),
}
out = {}
for k, f in cases.items():
    y = f()
    seen = set(); saved = []
    def walk(fn):
        if fn is None or fn in seen: return
        seen.add(fn)
        for a in dir(fn):
            if a.startswith("_saved_"):
                v = getattr(fn, a)
                if isinstance(v, torch.Tensor) and v.numel() >= 8: saved.append(f"{type(fn).__name__}.{a[7:]}{tuple(v.shape)}")
        for n, _ in fn.next_functions: walk(n)
    walk(y.grad_fn)
    out[k] = sorted(saved)
print(json.dumps(out))
