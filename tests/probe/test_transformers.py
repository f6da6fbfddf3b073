"""The plain-PyTorch transformer model files (models/pytorch/: CARMA's BERT, GPT-2 and XLNet
workloads), the probe's --input shape for input_fn(batch, input_shape), and --data-parallel N
(torch.nn.DataParallel as GPU 0 sees it)."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

import torch

from probe_util import Trace  # noqa: F401  (also puts python/ on sys.path)
from colo_probe import models, train
from colo_probe.factories import MetaInit

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = os.path.join(ROOT, "models", "pytorch")
PYTHON_DIR = os.path.join(ROOT, "python")

# Hugging Face's parameter counts for the configurations CARMA's scripts build. Sources: CARMA's
# module summaries (data/carma/summaries/*.model, printed from the Hugging Face models the scripts ran)
# and docs/ESTIMATION.md. BERT: the summaries' totals count the tied decoder weight and the shared
# decoder bias twice (130,638,728 - 28,996 x 768 - 28,996; 363,331,208 - 28,996 x 1,024 - 28,996).
# GPT-2: the GPT2Model totals (the LM head is the token embedding). XLNet: XLNetForSequenceClassification
# (the scripts' class), XLNetModel 116,718,336 / 360,268,800 plus summary and logits_proj.
REFERENCE = {
    ("bert.py", "bert_base"): 108_340_804,
    ("bert.py", "bert_large"): 333_610_308,
    ("gpt2.py", "gpt2_large"): 774_030_080,
    ("gpt2.py", "gpt2_xl"): 1_557_611_200,
    ("xlnet.py", "xlnet_base_cased"): 117_310_466,
    ("xlnet.py", "xlnet_large_cased"): 361_320_450,
}
XLNET_BACKBONE = {"xlnet_base_cased": 116_718_336, "xlnet_large_cased": 360_268_800}


def load_file(name):
    spec = importlib.util.spec_from_file_location("colo_test_" + name[:-3], os.path.join(MODELS, name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(spec, batch, input_shape=None, data_parallel=1, optimizer="adamw", steps=2):
    with tempfile.NamedTemporaryFile("r", suffix=".trace", delete=False) as f:
        path = f.name
    try:
        opts = {"model": spec, "batch": batch, "optimizer": optimizer, "foreach": True, "amp": "none",
                "checkpointing": False, "set_to_none": True, "steps": steps, "out": path,
                "header": {"model": "test", "data_parallel": data_parallel}, "input_fn": None,
                "input_shape": input_shape, "data_parallel": data_parallel}
        rec = train.run_probe(opts)
        with open(path) as f:
            text = f.read()
    finally:
        os.unlink(path)
    return Trace(text), text, rec


def forward_sizes(trace, step=2):
    return [a[0] for a in trace.allocs.values() if a[1] == "forward" and a[3] == step]


class ParameterCounts(unittest.TestCase):
    def test_unique_parameters_match_hugging_face(self):
        for (name, fn), expected in REFERENCE.items():
            with self.subTest(model=fn):
                spec = models.load(os.path.join(MODELS, name) + ":" + fn)
                self.assertEqual(sum(p.numel() for p in spec.module.parameters()), expected)
                if fn in XLNET_BACKBONE:
                    self.assertEqual(sum(p.numel() for p in spec.module.transformer.parameters()), XLNET_BACKBONE[fn])

    def test_heads_are_tied_as_in_hugging_face(self):
        bert = models.load(os.path.join(MODELS, "bert.py:bert_base")).module
        self.assertIs(bert.cls.predictions.decoder.weight, bert.bert.embeddings.word_embeddings.weight)
        self.assertIs(bert.cls.predictions.decoder.bias, bert.cls.predictions.bias)
        gpt = models.load(os.path.join(MODELS, "gpt2.py:gpt2_large")).module
        self.assertIs(gpt.lm_head.weight, gpt.transformer.wte.weight)
        self.assertEqual(tuple(gpt.transformer.h[0].attn.c_attn.weight.shape), (1280, 3840), "Conv1D: [in, out]")

    def test_models_are_built_on_the_meta_device(self):
        spec = models.load(os.path.join(MODELS, "gpt2.py:gpt2_xl"))
        self.assertTrue(all(p.device.type == "meta" for p in spec.module.parameters()))


class ProbesEveryModel(unittest.TestCase):
    def test_each_model_probes_at_a_small_size(self):
        for (name, fn), expected in REFERENCE.items():
            with self.subTest(model=fn):
                spec = models.load(os.path.join(MODELS, name) + ":" + fn)
                t, text, rec = run(spec, batch=1, input_shape=(16,))
                self.assertIn("S 2", text)
                self.assertEqual(sum(a[0] for _, a in t.by_op("param")), 4 * expected)
                self.assertIn('"cpu_fallbacks": {}', text)


class Attention(unittest.TestCase):
    B, S = 3, 32

    def score_sizes(self, heads):
        n = self.B * heads * self.S * self.S
        return {4 * n, n}  # float32 scores / probabilities, bool dropout mask

    def test_sdpa_models_keep_no_score_matrix(self):
        for name, fn, heads in (("bert.py", "bert_base", 12), ("gpt2.py", "gpt2_large", 20)):
            with self.subTest(model=fn):
                t, _, _ = run(models.load(os.path.join(MODELS, name) + ":" + fn), self.B, (self.S,))
                self.assertFalse(self.score_sizes(heads) & set(forward_sizes(t)), "no [B, H, S, S] tensor")
                lse = [a for a in t.allocs.values() if a[0] == self.B * heads * self.S * 4 and a[1] == "forward"]
                self.assertTrue(lse, "the fused kernel's log-sum-exp")

    def test_xlnet_materialises_its_relative_attention(self):
        t, _, _ = run(models.load(os.path.join(MODELS, "xlnet.py:xlnet_base_cased")), self.B, (self.S,))
        sizes = forward_sizes(t)
        probs = 4 * self.B * 12 * self.S * self.S
        self.assertGreaterEqual(sizes.count(probs), 2 * 12, "softmax output and dropped-out probabilities per layer")
        self.assertGreaterEqual(sizes.count(probs // 4), 12, "dropout mask per layer")
        self.assertIn(2 * probs, sizes, "position scores over 2S relative positions")

    def test_gpt2_output_keeps_past_key_values(self):
        gpt2 = load_file("gpt2.py")
        spec = models.load(os.path.join(MODELS, "gpt2.py:gpt2_large"))
        t, _, _ = run(spec, 1, (16,), steps=1)
        c_attn = [i for i, a in t.by_op("addmm") if a[0] == 16 * 3 * 1280 * 4 and a[1] == "forward"]
        self.assertEqual(len(c_attn), 36)
        self.assertTrue(all(i not in t.frees for i in c_attn), "kept by outputs.past_key_values after backward")
        self.assertEqual(gpt2.SEQ_LEN, 512)


class InputShape(unittest.TestCase):
    def test_input_fn_receives_the_input_shape(self):
        seen = []

        def input_fn(batch, input_shape):
            seen.append(input_shape)
            return torch.zeros((batch, 8))

        spec = models.ModelSpec(_meta(lambda: torch.nn.Linear(8, 2)), input_fn, lambda o, b: o.sum(), "test")
        run(spec, batch=2, input_shape=(7, 3), steps=1)
        run(spec, batch=2, input_shape=None, steps=1)
        self.assertEqual(seen, [(7, 3), None])

    def test_one_argument_input_fn_still_works(self):
        spec = models.ModelSpec(_meta(lambda: torch.nn.Linear(8, 2)), lambda b: torch.zeros((b, 8)),
                                lambda o, b: o.sum(), "test")
        t, _, _ = run(spec, batch=4, input_shape=(5,), steps=1)
        self.assertEqual([a[0] for _, a in t.by_op("input")], [4 * 8 * 4])
        self.assertFalse(train.takes_input_shape(lambda b: b))
        self.assertTrue(train.takes_input_shape(lambda b, s=None: b))

    def test_sequence_length_reaches_the_model_files(self):
        t, _, _ = run(models.load(os.path.join(MODELS, "bert.py:bert_base")), 2, (24,), steps=1)
        self.assertEqual([a[0] for _, a in t.by_op("input")], [2 * 24 * 8] * 3, "input_ids, attention_mask, labels")
        t, _, _ = run(models.load(os.path.join(MODELS, "gpt2.py:gpt2_large")), 2, (24,), steps=1)
        self.assertEqual([a[0] for _, a in t.by_op("input")], [2 * 24 * 8] * 2, "labels is input_ids: one copy")


def _meta(ctor):
    with torch.no_grad(), MetaInit():
        return ctor()


class DataParallel(unittest.TestCase):
    def small_bert(self):
        bert = load_file("bert.py")
        module = _meta(lambda: bert.BertForMaskedLM(bert.BertConfig(layers=2, hidden=64, heads=4, intermediate=256)))
        return models.ModelSpec(module, bert.input_fn, bert.loss_fn, "small-bert"), bert.VOCAB

    def test_gpu0_holds_half_the_activations_and_the_gathered_output(self):
        batch, seq = 8, 64
        spec, vocab = self.small_bert()
        one, _, _ = run(spec, batch, (seq,), data_parallel=1)
        spec, _ = self.small_bert()
        two, text, _ = run(spec, batch, (seq,), data_parallel=2)
        self.assertIn('"data_parallel": 2', text)
        self.assertLess(two.live_peak(), one.live_peak())
        gathered = [a[0] for _, a in two.by_op("gather")]
        self.assertIn(batch * seq * vocab * 4, gathered, "the full-batch logits, new on GPU 0")
        self.assertIn(2 * 4, gathered, "one loss per replica")
        logits = [a for a in two.allocs.values() if a[2] in ("mm", "addmm", "matmul", "bmm") and a[0] == batch * seq * vocab * 4]
        self.assertFalse(logits, "replica 0 computes only its half of the logits")
        params = sum(a[0] for _, a in two.by_op("param"))
        reduced = [a[0] for a in two.allocs.values() if a[2] == "reduce_add" and a[3] == 1]
        self.assertEqual(sum(reduced), params, "ReduceAddCoalesced buffers: one gradient's worth on GPU 0")
        self.assertTrue(all(r <= 10 * 2**20 or r == vocab * 64 * 4 for r in reduced), "<= 10 MiB chunks, or one big tensor")
        inputs = [a[0] for _, a in two.by_op("input")]
        self.assertEqual(inputs, [batch * seq * 8] * 3 + [batch * seq * 8] * 3, "the whole batch lands on GPU 0")

    def test_one_gpu_is_plain_training(self):
        spec, _ = self.small_bert()
        t, _, _ = run(spec, 4, (16,), data_parallel=1, steps=1)
        self.assertFalse(t.by_op("gather") + t.by_op("reduce_add"))

    def test_chunk_sizes_follow_torch_chunk(self):
        self.assertEqual(train.chunk_sizes(8, 2), [4, 4])
        self.assertEqual(train.chunk_sizes(5, 2), [3, 2])
        self.assertEqual(train.chunk_sizes(3, 4), [1, 1, 1])
        for n, parts in ((8, 2), (5, 2), (3, 4), (10, 3)):
            self.assertEqual(train.chunk_sizes(n, parts), [len(c) for c in torch.arange(n).chunk(parts)])


class CommandLine(unittest.TestCase):
    def run_probe(self, *args):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run([sys.executable, "-m", "colo_probe", *args], capture_output=True, text=True, env=env)

    def test_bad_data_parallel_is_a_one_line_error(self):
        for value, needle in (("0", "argument --data-parallel: 0 is out of range"),
                              ("two", "argument --data-parallel: 'two' is not an integer"),
                              ("1.5", "argument --data-parallel: '1.5' is not an integer")):
            with self.subTest(value=value):
                r = self.run_probe("--model", "torchvision:resnet18", "--batch", "4", "--data-parallel", value)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(needle, r.stderr)

    def test_model_file_with_data_parallel_and_sequence_length(self):
        r = self.run_probe("--model", os.path.join(MODELS, "xlnet.py:xlnet_base_cased"), "--batch", "2",
                           "--input", "16", "--optimizer", "adamw", "--data-parallel", "2", "--steps", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"data_parallel": 2', r.stdout)
        self.assertIn('"input": [16]', r.stdout)
        self.assertIn(" gather\n", r.stdout)


if __name__ == "__main__":
    unittest.main()
