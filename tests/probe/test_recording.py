"""What the probe records: parameters, optimizer state, gradients, autograd's saved tensors (freed
in backward, not when the forward's Python references die), the target GPU's dropout mask and fused
attention, checkpointing, mixed precision, zero_grad(set_to_none) and user model files."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

import forked_probe
from probe_util import probe, meta_module, Trace  # noqa: F401
from colo_probe import models

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


class Parameters(unittest.TestCase):
    def test_params_adam_state_and_grads(self):
        m = meta_module(lambda: nn.Linear(64, 32, bias=False))
        t, _ = probe(m, input_shape=(64,), batch=4, optimizer="adam")
        params = t.by_op("param")
        self.assertEqual([a[0] for _, a in params], [64 * 32 * 4])
        live = t.live_at_end()
        state = [a for a in live.values() if a[1] == "optimizer" and a[3] == 1 and a[0] == 8192]
        self.assertEqual(len(state), 2, "exp_avg and exp_avg_sq, created at the first step, kept")
        grads = [a for a in live.values() if a[1] == "backward" and a[0] == 8192]
        self.assertEqual(len(grads), 1, "the weight's gradient of step 2 is alive until the next zero_grad")
        late = [a for a in live.values() if a[1] == "optimizer" and a[3] == 2 and a[0] == 8192]
        self.assertEqual(late, [], "the second step creates no new optimizer state")

    def test_sgd_without_momentum_keeps_no_state(self):
        m = meta_module(lambda: nn.Linear(64, 32, bias=False))
        t, _ = probe(m, input_shape=(64,), optimizer="sgd")
        self.assertFalse([a for a in t.live_at_end().values() if a[1] == "optimizer"])

    def test_set_to_none_false_keeps_gradients_from_the_first_step(self):
        m = meta_module(lambda: nn.Linear(64, 32, bias=False))
        t, _ = probe(m, input_shape=(64,), optimizer="sgd", set_to_none=False)
        first = [a for a in t.live_at_end().values() if a[1] == "backward" and a[3] == 1 and a[0] == 8192]
        self.assertEqual(len(first), 1)

    def test_torchvision_parameter_bytes_are_exact(self):
        import torchvision
        spec = models.load("torchvision:resnet18", 10)
        t, _ = probe(spec=spec, input_shape=(3, 32, 32), batch=2)
        real = torchvision.models.resnet18(num_classes=10)
        self.assertEqual(sum(a[0] for _, a in t.by_op("param")), sum(p.numel() * 4 for p in real.parameters()))
        self.assertEqual(sum(a[0] for _, a in t.by_op("buffer")),
                         sum(b.numel() * b.element_size() for b in real.buffers()))


class SavedTensors(unittest.TestCase):
    def test_saved_relu_output_lives_until_backward(self):
        m = meta_module(lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
        t, _ = probe(m, input_shape=(8,), batch=4)
        relus = [i for i, a in t.by_op("relu") if a[3] == 2]
        self.assertEqual(len(relus), 1)
        self.assertEqual(t.frees[relus[0]][0], "backward")

    def test_activations_are_freed_by_backward(self):
        m = meta_module(lambda: nn.Sequential(*[nn.Linear(32, 32) for _ in range(6)]))
        t, _ = probe(m, input_shape=(32,), batch=8)
        fwd = [i for i, a in t.allocs.items() if a[1] == "forward" and a[3] == 2 and a[2] == "addmm"]
        self.assertEqual(len(fwd), 6)
        self.assertTrue(all(i in t.frees for i in fwd[:-1]))


class AllocatorSettings(unittest.TestCase):
    def header(self, text):
        import json
        return json.loads(text.splitlines()[1][2:])

    def test_the_allocator_settings_at_the_first_allocation_are_in_the_header(self):
        m = meta_module(lambda: nn.Linear(8, 4))
        saved = {k: os.environ.pop(k, None) for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
        try:
            _, text = probe(m, input_shape=(8,), batch=2)
            self.assertNotIn("alloc_conf", self.header(text))
            os.environ["PYTORCH_ALLOC_CONF"] = "max_split_size_mb:64"
            _, text = probe(meta_module(lambda: nn.Linear(8, 4)), input_shape=(8,), batch=2)
            self.assertEqual(self.header(text)["alloc_conf"], "max_split_size_mb:64")
            # Both set: current PyTorch reads PYTORCH_ALLOC_CONF (the older name is deprecated).
            os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
            _, text = probe(meta_module(lambda: nn.Linear(8, 4)), input_shape=(8,), batch=2)
            self.assertEqual(self.header(text)["alloc_conf"], "max_split_size_mb:64")
            del os.environ["PYTORCH_ALLOC_CONF"]
            _, text = probe(meta_module(lambda: nn.Linear(8, 4)), input_shape=(8,), batch=2)
            self.assertEqual(self.header(text)["alloc_conf"], "expandable_segments:True")
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


class TargetGpuKernels(unittest.TestCase):
    def test_dropout_keeps_a_bool_mask(self):
        m = meta_module(lambda: nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 4)))
        t, _ = probe(m, input_shape=(8,), batch=4)
        sizes = sorted(a[0] for _, a in t.by_op("native_dropout") if a[3] == 2)
        self.assertEqual(sizes, [4 * 16, 4 * 16 * 4], "mask (1 byte per element) and output")
        self.assertFalse(t.by_op("bernoulli_") + t.by_op("bernoulli"))

    def test_fused_attention_never_materialises_the_score_matrix(self):
        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(16, 48)

            def forward(self, x):
                b, s, _ = x.shape
                q, k, v = self.qkv(x).view(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
                return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, 16)

        m = meta_module(Attn)
        batch, seq = 4, 64

        def input_fn(n):
            return torch.empty((n, seq, 16), device="cuda")

        def loss_fn(out, b):
            return out.float().pow(2).mean()
        t, _ = probe(m, batch=batch, input_fn=input_fn, loss_fn=loss_fn)
        scores = batch * 2 * seq * seq * 4
        self.assertFalse([a for a in t.allocs.values() if a[0] >= scores], "no [B, H, S, S] tensor")
        self.assertTrue([a for a in t.allocs.values() if a[0] == batch * 2 * seq * 4], "the log-sum-exp")
        # Its output, saved for the backward, is saved as it is: the detach autograd takes of it
        # inside the dispatcher was recorded as a copy with a storage of its own (BERT-base: 24).
        self.assertEqual([a for a in t.allocs.values() if a[2].endswith(".default")], [])
        out = batch * 2 * seq * 8 * 4  # the input, the kernel's output and the loss's square: once a step
        self.assertEqual(sorted(a[2] for a in t.allocs.values() if a[0] == out and a[1] == "forward"),
                         ["input", "input", "new_empty", "new_empty", "pow", "pow"])


    def test_multihead_attention_without_weights_runs_as_pytorch2_does(self):
        # nn.MultiheadAttention(need_weights=False) (nn.TransformerEncoderLayer, torchvision's ViT):
        # PyTorch 2 projects q, k, v and calls the fused kernel, so no [B, H, S, S] tensor either;
        # PyTorch 1.13's own path would keep the softmax and its dropout at that size.
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(16, 2, dropout=0.1, batch_first=True)

            def forward(self, x):
                return self.attn(x, x, x, need_weights=False)[0]

        batch, seq = 4, 64

        def input_fn(n):
            return torch.empty((n, seq, 16), device="cuda")

        def loss_fn(out, b):
            return out.float().pow(2).mean()
        t, _ = probe(meta_module(Block), batch=batch, input_fn=input_fn, loss_fn=loss_fn)
        self.assertFalse([a for a in t.allocs.values() if a[0] >= batch * 2 * seq * seq * 4], "no [B, H, S, S] tensor")
        self.assertTrue([a for a in t.allocs.values() if a[0] == batch * 2 * seq * 4], "the fused kernel's log-sum-exp")
        # q, k and v: PyTorch 2 copies the packed projection into one [3, S, B, E] block (1.13 returned
        # three chunks, which the probe copied into three blocks)
        clones = [a[0] for a in t.allocs.values() if a[2] == "clone" and a[1] == "forward"]
        self.assertEqual(clones.count(3 * batch * seq * 16 * 4), 2, clones)  # one per step
        self.assertEqual(len(clones), 6, clones)  # and the input's and the output's layout copies


class Recorders(unittest.TestCase):
    def test_a_storage_freed_during_a_later_probe_is_not_freed_in_that_trace(self):
        # A storage kept by a reference cycle can be collected while the next probe of the same
        # process records (colo_probe.gpumemnet probes a whole CSV in one): its free belongs to the
        # trace it was allocated in, or the later trace frees an id it never allocated.
        from colo_probe import tensor as pt

        class Log:
            def __init__(self):
                self.events = []

            def malloc(self, nbytes, op):
                self.events.append(("M", nbytes))
                return len(self.events)

            def free(self, ident, nbytes):
                self.events.append(("F", ident))
        first, second = Log(), Log()
        saved = pt.RECORDER
        try:
            pt.RECORDER = first
            s = pt.Storage(64, "x")
            pt.RECORDER = second
            del s
            self.assertEqual(second.events, [])
            pt.RECORDER = first
            s = pt.Storage(32, "y")
            del s
            self.assertEqual(first.events, [("M", 64), ("M", 32), ("F", 2)])
        finally:
            pt.RECORDER = saved


class InPlaceViews(unittest.TestCase):
    def test_metadata_changing_inplace_ops_keep_autograd_shapes_right(self):
        # nn.Linear on a 1-D input runs mm(input.unsqueeze(0), w.t()).squeeze_(0): the wrapper autograd
        # sees must take the squeezed shape, or backward rejects the gradient's shape.
        m = meta_module(lambda: nn.Linear(8, 4))
        t, _ = probe(m, input_shape=(), batch=8, input_fn=lambda b: (torch.empty(b, device="meta"),),
                     loss_fn=lambda out, batch: out.sum(), optimizer="sgd")
        self.assertTrue(t.by_op("param"))


class Checkpointing(unittest.TestCase):
    def test_checkpointing_lowers_the_live_peak(self):
        def build():
            # Each block keeps a 1024-wide hidden activation that checkpointing drops and recomputes.
            return nn.Sequential(*[nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)) for _ in range(8)])
        plain, _ = probe(meta_module(build), input_shape=(256,), batch=4096, optimizer="sgd")
        ckpt, _ = probe(meta_module(build), input_shape=(256,), batch=4096, optimizer="sgd", checkpointing=True)
        self.assertLess(ckpt.live_peak(), plain.live_peak())


    def test_checkpointing_under_amp_recomputes_in_half_precision(self):
        # The recompute in backward runs under the forward's autocast, as torch.utils.checkpoint
        # restores it; before, it ran in float32 and the fp16 weights' matmul refused the mix.
        def build():
            return nn.Sequential(*[nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)) for _ in range(4)])
        for amp in ("fp16", "bf16"):
            plain, _ = probe(meta_module(build), input_shape=(256,), batch=4096, optimizer="sgd", amp=amp)
            ckpt, _ = probe(meta_module(build), input_shape=(256,), batch=4096, optimizer="sgd", amp=amp,
                            checkpointing=True)
            self.assertLess(ckpt.live_peak(), plain.live_peak(), amp)
            recomputed = [a for _, a in ckpt.by_op("addmm") if a[1] == "backward" and a[3] == 2]
            self.assertTrue(recomputed and all(a[0] in (4096 * 1024 * 2, 4096 * 256 * 2) for a in recomputed),
                            recomputed)


class MixedPrecision(unittest.TestCase):
    def test_einsum_and_tensordot_run_in_half_precision(self):
        # Not on autocast's lists, but they run as bmm/mm, which are.
        class Ein(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.empty(64, 64))

            def forward(self, x):
                return torch.tensordot(torch.einsum("bi,ij->bj", x, self.w), self.w, dims=1)
        t, _ = probe(meta_module(Ein), input_shape=(64,), batch=8, amp="fp16", optimizer="sgd")
        forward = [a[0] for _, a in t.allocs.items() if a[1] == "forward" and a[3] == 2 and a[2] != "_to_copy"]
        self.assertIn(8 * 64 * 2, forward)
        self.assertNotIn(8 * 64 * 4, [a[0] for _, a in t.by_op("mm") if a[3] == 2 and a[1] == "forward"])

    def test_bf16_casts_weights_once_and_keeps_fp32_master_weights(self):
        m = meta_module(lambda: nn.Sequential(nn.Linear(64, 64, bias=False), nn.ReLU(), nn.Linear(64, 10, bias=False)))
        t, _ = probe(m, input_shape=(64,), batch=8, amp="bf16")
        casts = sorted(a[0] for _, a in t.by_op("_to_copy") if a[3] == 2 and a[1] == "forward")
        self.assertIn(64 * 64 * 2, casts)
        self.assertIn(64 * 10 * 2, casts)
        mm = [a for _, a in t.by_op("mm") if a[3] == 2 and a[1] == "forward"]
        self.assertTrue(mm and all(a[0] in (8 * 64 * 2, 8 * 10 * 2) for a in mm), mm)

    def test_an_operator_is_cast_by_whichever_name_calls_it(self):
        # Autocast acts on the operator: x.exp() and x ** 2 run in float32 as torch.exp(x) and
        # torch.pow(x, 2) do, x.mv(v) in half precision as torch.mv does. Before, only the torch.X
        # spelling of a short list was cast.
        class Mixed(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(64, 64)
                self.v = nn.Parameter(torch.empty(64))

            def forward(self, x):
                h = self.lin(x)                            # float16
                a = h.exp() + torch.exp(h)                 # float32 both
                b = h ** 2 + h.pow(2) + 1 / h + h.rsqrt()  # float32
                c = h.mv(self.v)                           # float16
                return a.sum() + b.sum() + c.float().sum()
        t, _ = probe(meta_module(Mixed), input_shape=(64,), batch=8, amp="fp16", optimizer="sgd", loss_fn=lambda o, b: o)
        step2 = [(a[2], a[0]) for a in t.allocs.values() if a[3] == 2 and a[1] == "forward"]
        for op in ("exp", "pow", "reciprocal", "rsqrt"):
            sizes = [n for o, n in step2 if o == op]
            self.assertTrue(sizes and all(n == 8 * 64 * 4 for n in sizes), (op, sizes))
        self.assertIn(("mv", 8 * 2), step2)

    def test_fp16_runs_with_a_grad_scaler(self):
        m = meta_module(lambda: nn.Linear(64, 10))
        t, text = probe(m, input_shape=(64,), batch=8, amp="fp16")
        self.assertIn("S 2", text)


class LayersOfEveryKind(unittest.TestCase):
    """Layers whose operators 1.13 has no meta kernel for, or whose kernel needs values: each
    trains through the probe's own step with no operator run on the CPU (before, 3-D pooling ran
    there, cdist with p != 2 and CTC with host lengths failed)."""

    class Apply(nn.Module):
        def __init__(self, body, fn):
            super().__init__()
            self.body = body
            self.fn = fn

        def forward(self, x):
            return self.fn(self.body, x)

    def check(self, ctor, fn, shape):
        module = meta_module(lambda: self.Apply(ctor(), fn))
        t, text = probe(module=module, batch=shape[0], input_shape=shape[1:], loss_fn=lambda out, b: out.float().sum(),
                        input_fn=lambda n: (torch.randn((n,) + tuple(shape[1:]), device="meta"),))
        footer = json.loads(text.splitlines()[-1][2:])
        self.assertEqual(footer["cpu_fallbacks"], {})
        return t

    def test_each_trains_on_meta_kernels(self):
        cases = {
            "3-d max pooling": (lambda: nn.Conv3d(4, 8, 3, padding=1), lambda m, x: F.max_pool3d(m(x), 2), (2, 4, 8, 16, 16)),
            "cdist, p = 1": (lambda: nn.Linear(16, 16), lambda m, x: torch.cdist(m(x), x, p=1), (2, 32, 16)),
            "pdist": (lambda: nn.Linear(16, 16), lambda m, x: torch.pdist(m(x[0])), (2, 32, 16)),
            "weight norm": (lambda: nn.utils.weight_norm(nn.Conv1d(8, 8, 3, padding=1)), lambda m, x: m(x), (2, 8, 64)),
            "smooth L1": (lambda: nn.Linear(16, 16), lambda m, x: F.smooth_l1_loss(m(x), x), (4, 16)),
            "max unpooling": (lambda: nn.Conv2d(4, 4, 1), lambda m, x: F.max_unpool2d(*F.max_pool2d(m(x), 2, return_indices=True), 2),
                              (2, 4, 16, 16)),
            "median": (lambda: nn.Linear(16, 16), lambda m, x: m(x) - m(x).median(-1, keepdim=True)[0], (4, 16)),
            "ctc, host lengths": (lambda: nn.Linear(16, 10), lambda m, x: F.ctc_loss(
                m(x).log_softmax(-1).transpose(0, 1), torch.ones(x.shape[0], 5, dtype=torch.long, device=x.device),
                torch.full((x.shape[0],), x.shape[1], dtype=torch.long), torch.tensor([5, 3])), (2, 20, 16)),
        }
        for name, (ctor, fn, shape) in cases.items():
            with self.subTest(layer=name):
                self.check(ctor, fn, shape)


class UserFiles(unittest.TestCase):
    def test_file_with_input_fn_and_loss_fn(self):
        src = textwrap.dedent("""
            import torch, torch.nn as nn
            def build():
                return nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 100))
            def input_fn(batch):
                return {"ids": torch.randint(0, 100, (batch, 16))}
            def loss_fn(output, batch):
                return nn.functional.cross_entropy(output.view(-1, 100), batch["ids"].view(-1))
            """)
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(src.replace("nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 100))", "Model()") + textwrap.dedent("""
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.e = nn.Embedding(100, 32)
                    self.o = nn.Linear(32, 100)
                def forward(self, ids):
                    return self.o(self.e(ids))
            """))
            path = f.name
        try:
            spec = models.load(path + ":build")
            t, _ = probe(spec=spec, batch=4)
            self.assertEqual(sum(a[0] for _, a in t.by_op("param")), (100 * 32 + 32 * 100 + 100) * 4)
            self.assertEqual([a[0] for _, a in t.by_op("input")], [4 * 16 * 8, 4 * 16 * 8])
        finally:
            os.unlink(path)

    def model_files(self, files):
        """A temporary folder holding `files` (name -> text), removed after the test."""
        d = tempfile.TemporaryDirectory(prefix="colo-model-")
        self.addCleanup(d.cleanup)
        for name, text in files.items():
            with open(os.path.join(d.name, name), "w") as f:
                f.write(textwrap.dedent(text))
        return d.name

    def test_a_models_code_reads_the_values_its_batch_was_made_with(self):
        # A model file's batch is made on the host; small tensors keep their values on the probe's
        # GPU, so the model's own reads (lengths, boxes it validates) see them. Before, it read 0 here
        # (and a detection model refused its "invalid box [0, 0, 0, 0]").
        d = self.model_files({"lengths.py": """
            import torch, torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(16, 4)
                def forward(self, x, lengths):
                    n = int(lengths.max())                    # read back on the host, as a script does
                    padded = x.new_zeros((x.shape[0], n, 16))
                    return self.fc(padded.sum(1) + x.sum(1))
            def build():
                return Net()
            def input_fn(batch):
                return torch.randn(batch, 5, 16), torch.tensor([37] + [3] * (batch - 1))
            def loss_fn(output, batch):
                return output.sum()
            """})
        spec = models.load(os.path.join(d, "lengths.py") + ":build")
        t, _ = probe(spec=spec, batch=2)
        self.assertIn(2 * 37 * 16 * 4, [a[0] for _, a in t.by_op("new_zeros")])

    def test_outputs_and_batches_a_loss_cannot_use_are_named(self):
        d = self.model_files({
            "empty.py": """
                import torch, torch.nn as nn
                def build():
                    return nn.Linear(8, 4)
                def input_fn(batch):
                    return (torch.randn(0, 8), torch.zeros(0, dtype=torch.long))
            """,
            "scalar.py": """
                import torch.nn as nn
                class S(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.l = nn.Linear(8, 4)
                    def forward(self, x):
                        return self.l(x).sum()
                def build():
                    return S()
            """,
            "ids.py": """
                import torch.nn as nn
                class Strict(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.l = nn.Linear(8, 4)
                    def forward(self, x):
                        if not x.is_floating_point():
                            raise TypeError("Strict wants float features")
                        return self.l(x)
                def build():
                    return Strict()
            """})
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)

        def run(*a):
            return subprocess.run([sys.executable, "-m", "colo_probe", *a, "--out", os.path.join(d, "t.trace")],
                                  capture_output=True, text=True, env=env, timeout=300)
        r = run("--model", os.path.join(d, "empty.py") + ":build", "--batch", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("returned an empty batch (0 rows)", r.stderr)
        r = run("--model", os.path.join(d, "scalar.py") + ":build", "--batch", "2", "--input", "8")
        self.assertEqual(r.returncode, 1)
        self.assertIn("the model returned a 0-dim tensor, not logits", r.stderr)
        r = run("--model", "torchvision:resnet18", "--batch", "2", "--input", "3x32x32", "--dtype", "int64")
        self.assertEqual(r.returncode, 1)
        self.assertIn("the model cannot train on int64 inputs", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        # Any other failure on integer inputs: PyTorch's (or the model's) own words, and the hint.
        r = run("--model", os.path.join(d, "ids.py") + ":build", "--batch", "2", "--input", "8", "--dtype", "int32")
        self.assertEqual(r.returncode, 1)
        self.assertIn("failed on int32 inputs: TypeError: Strict wants float features; perhaps the model cannot "
                      "train on int32 inputs", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_model_file_imports_modules_beside_it(self):
        d = self.model_files({
            "colo_test_layers.py": "import torch.nn as nn\ndef head():\n    return nn.Linear(8, 2)\n",
            "net.py": "from colo_test_layers import head\ndef build():\n    return head()\n"})
        spec = models.load(os.path.join(d, "net.py") + ":build")
        self.assertEqual(sum(p.numel() for p in spec.module.parameters()), 8 * 2 + 2)


class ConstructorsThatReadValues(unittest.TestCase):
    """A constructor that reads tensor values cannot run on the meta device; the model is built again
    with its smallest tensors real (factories.construct), and probes with exact parameter bytes."""

    def test_regnet_builds_and_its_parameter_bytes_are_exact(self):
        import torchvision
        spec = models.load("torchvision:regnet_x_400mf", 10)  # widths: arange(...).tolist() at construction
        real = torchvision.models.regnet_x_400mf(num_classes=10)
        self.assertEqual(sum(p.numel() for p in spec.module.parameters()), sum(p.numel() for p in real.parameters()))
        self.assertTrue(any(p.device.type == "meta" for p in spec.module.parameters()), "the weights stay on meta")
        t, _ = probe(spec=spec, input_shape=(3, 32, 32), batch=2)
        self.assertEqual(sum(a[0] for _, a in t.by_op("param")), sum(p.numel() * 4 for p in real.parameters()))
        self.assertEqual(sum(a[0] for _, a in t.by_op("buffer")),
                         sum(b.numel() * b.element_size() for b in real.buffers()))

    def test_a_model_file_that_reads_values_and_mixes_devices(self):
        d = UserFiles.model_files(self, {"widths.py": """
            import torch, torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    widths = (torch.arange(1, 4) * 16).tolist()      # needs data: [16, 32, 48]
                    self.layers = nn.Sequential(*[nn.Linear(a, b) for a, b in zip([8] + widths, widths)])
                    self.big = nn.Linear(48, 4096)                    # stays on meta (> SMALL_NUMEL)
                    with torch.no_grad():                              # a small real tensor times a meta one
                        self.big.weight.mul_(torch.ones(4096, 1))
                def forward(self, x):
                    return self.big(self.layers(x))
            def build():
                return Net()
            """})
        spec = models.load(os.path.join(d, "widths.py") + ":build")
        t, _ = probe(spec=spec, input_shape=(8,), batch=2, optimizer="sgd")
        n = (8 * 16 + 16) + (16 * 32 + 32) + (32 * 48 + 48) + (48 * 4096 + 4096)
        self.assertEqual(sum(a[0] for _, a in t.by_op("param")), n * 4)

    def test_a_constructor_that_fails_either_way_reports_its_own_error(self):
        d = UserFiles.model_files(self, {"broken.py": """
            import torch.nn as nn
            def build():
                raise ValueError("width must be positive")
            """})
        with self.assertRaisesRegex(ValueError, "width must be positive"):
            models.load(os.path.join(d, "broken.py") + ":build")


class CommandLine(unittest.TestCase):
    def run_probe(self, *args):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run([sys.executable, "-m", "colo_probe", *args], capture_output=True, text=True, env=env)

    def test_bad_arguments_are_one_line_errors(self):
        cases = [
            (["--model", "torchvision:resnet18", "--batch", "0"], "argument --batch: 0 is out of range"),
            (["--model", "torchvision:resnet18", "--batch", "4", "--input", "3xx2"], "input shape '3xx2'"),
            (["--model", "nofile", "--batch", "4"], "expected torchvision:NAME or path/to/file.py:function"),
            (["--model", "torchvision:resnet18", "--batch", "4", "--optimizer", "lion"], "invalid choice: 'lion'"),
            (["--batch", "4"], "the following arguments are required: --model"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                r = self.run_probe(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertTrue(r.stderr.startswith("colo_probe: error: "))

    def test_a_model_that_fails_names_the_exception(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("def build():\n    raise RuntimeError('boom\\nsecond line')\n")
            path = f.name
        try:
            r = self.run_probe("--model", path + ":build", "--batch", "2", "--input", "4")
            self.assertEqual(r.returncode, 1)
            self.assertIn("RuntimeError: boom second line", r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1)
        finally:
            os.unlink(path)


class ConvolutionKeys(unittest.TestCase):
    """Each C record carries the convolution's shape key (conv_shape.py), which a GPU's measured
    workspace table is keyed by: forward and backward, the dtype it runs in, the output mask."""

    def test_forward_and_backward_keys_name_the_shape(self):
        from colo_probe.conv_shape import parse_key
        build = lambda: nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.ReLU(),  # noqa: E731
                                      nn.Conv2d(16, 8, 1), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
        _, text = probe(meta_module(build), input_shape=(3, 32, 32), batch=4, optimizer="sgd", steps=1)
        keys = [line.split(" ")[6] for line in text.splitlines() if line.startswith("C ")]
        self.assertEqual(keys, ["f:4x3x32x32:16x3x3x3:s2x2:p1x1:d1x1:g1:t0:float32:b0",
                                "f:4x16x16x16:8x16x1x1:s1x1:p0x0:d1x1:g1:t0:float32:b1",
                                # backward: the second conv needs every gradient, the first none for its input
                                "b:4x16x16x16:8x16x1x1:s1x1:p0x0:d1x1:g1:t0:float32:m111",
                                "b:4x3x32x32:16x3x3x3:s2x2:p1x1:d1x1:g1:t0:float32:m010"])
        k = parse_key(keys[0])
        self.assertEqual((k["pass"], k["input"], k["weight"], k["stride"], k["padding"], k["groups"], k["bias"]),
                         ("forward", [4, 3, 32, 32], [16, 3, 3, 3], [2, 2], [1, 1], 1, False))
        self.assertEqual(parse_key(keys[3])["output_mask"], [False, True, False])

    def test_keys_carry_the_autocast_dtype_and_transposed_convolutions(self):
        build = lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 2, stride=2, output_padding=0), nn.Flatten(),  # noqa: E731
                                      nn.Linear(4 * 16 * 16, 10))
        _, text = probe(meta_module(build), input_shape=(3, 8, 8), batch=2, optimizer="sgd", amp="bf16", steps=1)
        keys = [line.split(" ")[6] for line in text.splitlines() if line.startswith("C ")]
        self.assertEqual(keys[0], "f:2x3x8x8:3x4x2x2:s2x2:p0x0:d1x1:g1:t1o0x0:bfloat16:b1")

    def test_malformed_keys_are_refused(self):
        from colo_probe.conv_shape import parse_key
        for bad in ("", "f:1x2", "q:1:2:s1:p0:d1:g1:t0:float32:b0", "f:1x2:3:s1:pX:d1:g1:t0:float32:b0"):
            with self.assertRaises(ValueError, msg=bad):
                parse_key(bad)


if __name__ == "__main__":
    unittest.main()


class TorchvisionFamilies(unittest.TestCase):
    """torchvision:NAME covers the video, segmentation, detection and optical-flow builders too,
    trained on their reference recipes' inputs; quantized models are refused with the reason."""

    def run_probe(self, *args):
        # `python3 -m colo_probe`, forked from a process that imported torch (forked_probe.py):
        # these tests are about the families; CommandLine and UserFiles start a fresh interpreter.
        return forked_probe.run(args, env=dict(os.environ, PYTHONPATH=PYTHON_DIR), timeout=600)

    def test_a_video_model_trains_on_clips(self):
        import torchvision
        spec = models.load("torchvision:r3d_18")
        self.assertEqual(spec.default_input, (3, 16, 112, 112))
        meta = sum(p.numel() for p in spec.module.parameters())
        self.assertEqual(meta, sum(p.numel() for p in torchvision.models.video.r3d_18().parameters()))
        self.assertEqual(models.load("torchvision:mvit_v2_s").default_input, (3, 16, 224, 224))
        with tempfile.NamedTemporaryFile("r", suffix=".trace") as f:
            r = self.run_probe("--model", "torchvision:r3d_18", "--batch", "2", "--out", f.name)
            self.assertEqual(r.returncode, 0, r.stderr)
            text = f.read()
        self.assertIn('"input": [3, 16, 112, 112]', text)
        self.assertTrue(Trace(text).by_op("convolution"))

    def test_a_segmentation_model_builds_offline_and_takes_a_per_pixel_loss(self):
        # Its builder's default fetches ImageNet backbone weights over the network: the probe asks for none.
        with tempfile.NamedTemporaryFile("r", suffix=".trace") as f:
            r = self.run_probe("--model", "torchvision:lraspp_mobilenet_v3_large", "--num-classes", "5",
                               "--batch", "2", "--out", f.name)
            self.assertEqual(r.returncode, 0, r.stderr)
            text = f.read()
        self.assertIn('"input": [3, 480, 480]', text)
        t = Trace(text)
        # The target is one class per pixel ([2, 480, 480] int64), not one per row of flattened logits.
        targets = [a[0] for a in t.allocs.values() if a[1] == "forward" and a[2] == "empty"]
        self.assertEqual(targets, [2 * 480 * 480 * 8] * 2, "one per-pixel target per step, not one per logits row")

    def probe_trace(self, *args):
        with tempfile.NamedTemporaryFile("r", suffix=".trace") as f:
            r = self.run_probe(*args, "--out", f.name)
            self.assertEqual(r.returncode, 0, r.stderr)
            return f.read()

    def test_a_detection_model_trains_on_pictures_with_targets(self):
        # torchvision's detection reference: a list of pictures (COCO's 480x640 by default) and their
        # targets, whose values the model checks (boxes of positive size), the losses it returns summed.
        # Before, detection models were refused.
        text = self.probe_trace("--model", "torchvision:maskrcnn_resnet50_fpn", "--num-classes", "3", "--batch", "2")
        self.assertIn('"input": [3, 480, 640]', text)
        t = Trace(text)
        step1 = sorted(a[0] for a in t.allocs.values() if a[2] == "input" and a[3] == 1)
        # per picture: the picture, 7 boxes (7 x 4 float32), 7 labels (int64), 7 masks (uint8)
        self.assertEqual(step1, sorted([3 * 480 * 640 * 4, 7 * 4 * 4, 7 * 8, 7 * 480 * 640] * 2))
        ops = {a[2] for a in t.allocs.values()}
        self.assertTrue({"torchvision::nms", "torchvision::roi_align", "torchvision::_roi_align_backward"} <= ops,
                        sorted(ops))
        # The heads run on the sample the probe assumes (detection.py): 512 proposals per picture for
        # the box head's class logits, 128 positives for the mask head's 28x28 logits.
        sizes = {(a[2], a[0]) for a in t.allocs.values()}
        self.assertIn(("addmm", 2 * 512 * 3 * 4), sizes)
        self.assertIn(("convolution", 2 * 128 * 3 * 28 * 28 * 4), sizes)

    def test_keypoint_and_one_stage_detectors_get_the_targets_they_need(self):
        t = Trace(self.probe_trace("--model", "torchvision:keypointrcnn_resnet50_fpn", "--batch", "1",
                                   "--input", "3x320x320"))
        inputs = sorted(a[0] for a in t.allocs.values() if a[2] == "input" and a[3] == 1)
        self.assertEqual(inputs, sorted([3 * 320 * 320 * 4, 7 * 4 * 4, 7 * 8, 7 * 17 * 3 * 4]))  # keypoints, no masks
        t = Trace(self.probe_trace("--model", "torchvision:ssdlite320_mobilenet_v3_large", "--batch", "2"))
        inputs = sorted(a[0] for a in t.allocs.values() if a[2] == "input" and a[3] == 1)
        self.assertEqual(inputs, sorted([3 * 480 * 640 * 4, 7 * 4 * 4, 7 * 8] * 2))

    def test_checkpointing_a_detection_model_recomputes_its_backbone(self):
        # The heads' proposal samples are data-dependent: only the backbone's stages are checkpointed
        # (before, recomputing the heads drew another sample and backward failed on its shapes).
        plain = Trace(self.probe_trace("--model", "torchvision:fasterrcnn_resnet50_fpn", "--batch", "1",
                                       "--input", "3x320x320"))
        checkpointed = Trace(self.probe_trace("--model", "torchvision:fasterrcnn_resnet50_fpn", "--batch", "1",
                                              "--input", "3x320x320", "--checkpointing"))
        self.assertLess(checkpointed.live_peak(), plain.live_peak())

    def test_optical_flow_trains_on_picture_pairs_with_flow_targets(self):
        # RAFT as torchvision's reference trains it: two pictures (FlyingChairs' 368x496 crops), the
        # flow and its validity mask; 12 flow updates, every estimate in the sequence loss.
        text = self.probe_trace("--model", "torchvision:raft_small", "--batch", "2", "--optimizer", "adamw")
        self.assertIn('"input": [3, 368, 496]', text)
        t = Trace(text)
        pixels = 368 * 496
        inputs = sorted(a[0] for a in t.allocs.values() if a[2] == "input" and a[3] == 1)
        self.assertEqual(inputs, sorted([2 * 3 * pixels * 4] * 2 + [2 * 2 * pixels * 4, 2 * pixels]))
        stacked = [a[0] for a in t.allocs.values() if a[2] == "stack" and a[3] == 1]
        self.assertIn(12 * 2 * 2 * pixels * 4, stacked)  # the 12 flow estimates, stacked by the loss
        self.assertTrue(t.by_op("grid_sampler_2d"))

    def test_bad_options_for_a_family_are_refused_in_one_line(self):
        for args, needle in ((["torchvision:maskrcnn_resnet50_fpn", "--input", "3x224x224x4"],
                              "a detection model trains on pictures, 3xHEIGHTxWIDTH"),
                             (["torchvision:retinanet_resnet50_fpn", "--input", "3x16x16"], "at least 32x32 pixels"),
                             (["torchvision:fcos_resnet50_fpn", "--data-parallel", "2"],
                              "DataParallel's scatter cannot split its list of pictures"),
                             (["torchvision:raft_small", "--input", "3x100x100"], "multiples of 8"),
                             (["torchvision:raft_large", "--num-classes", "3"], "an optical-flow model, it has no classes"),
                             (["torchvision:raft_small", "--data-parallel", "2"], "DistributedDataParallel")):
            with self.subTest(args=args):
                r = self.run_probe("--model", *args, "--batch", "2")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(needle, r.stderr)

    def test_families_the_probe_cannot_train_say_why(self):
        for name, needle in (("quantized_resnet18", "its float version trains: torchvision:resnet18"),
                             ("get_model", "torchvision has no model 'get_model'"),
                             ("ResNet", "torchvision has no model 'ResNet'"),
                             ("no_such_net", "torchvision has no model 'no_such_net'")):
            with self.subTest(name=name):
                r = self.run_probe("--model", "torchvision:" + name, "--batch", "2")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(needle, r.stderr)
