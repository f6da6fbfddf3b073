"""GPUMemNet rows rebuilt as modules (python/colo_probe/gpumemnet.py): real rows of every CNN and MLP
architecture rebuild with every layer's parameter count and H*W (width) equal to the row's, corrupted
rows are refused with a reason, rows that never trained are skipped with theirs, and the batch mode
writes traces the C++ reader's rules accept plus an index.jsonl. Reads the repository's data/gpumemnet."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

import probe_util  # noqa: F401  (puts python/ on sys.path)
from colo_probe import gpumemnet as g
from colo_probe.conv_shape import parse_key

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "data", "gpumemnet")
_ROWS = {}


def rows(kind):
    if kind not in _ROWS:
        _ROWS[kind] = g.read_rows(os.path.join(DATA, f"{kind}.csv"), kind)
    return _ROWS[kind]


def cost(row):
    """A rough size of a row's probe: parameters plus batch x activations."""
    return sum(t[2] for t in row.layers) + row.hp["batch"] * sum(t[1] for t in row.layers)


def pick(kind, pred, n=2):
    """The n cheapest rows with a layer list for which pred(row) holds."""
    found = [r for r in rows(kind) if not r.error and r.layers and pred(r)]
    return sorted(found, key=cost)[:n]


def check_trace(text, where):
    """The rules of src/estimate/trace/probe_trace.cpp: version line, one H before any record, M/F/C/B/S
    records with the right fields, unique ids, frees of live ids only, steps in order, E last."""
    lines = text.split("\n")
    assert lines[0] == "colo-probe-trace 1", f"{where}: first line {lines[0]!r}"
    phases = {"load", "forward", "backward", "optimizer"}
    live, seen = set(), set()
    header = footer = None
    steps = 0
    for n, line in enumerate(lines[1:], 2):
        if not line or line.startswith("#"):
            continue
        assert footer is None, f"{where}:{n}: record after the footer"
        kind, f = line[0], line.split()
        assert line[1:2] == " ", f"{where}:{n}: unknown record"
        if kind in "HE":
            obj = json.loads(line[2:])
            assert isinstance(obj, dict), f"{where}:{n}"
            if kind == "H":
                assert header is None, f"{where}:{n}: second header"
                header = obj
            else:
                footer = obj
            continue
        assert header is not None, f"{where}:{n}: record before the header"
        if kind == "M":
            assert len(f) == 6 and f[4] in phases and f[3].isdigit() and f[2].isdigit(), f"{where}:{n}: {line}"
            assert f[1] not in seen, f"{where}:{n}: storage allocated twice"
            assert all(c.isalnum() or c in "_.:-" for c in f[5]), f"{where}:{n}: bad op"
            seen.add(f[1])
            live.add(f[1])
        elif kind == "F":
            assert len(f) == 2 and f[1] in live, f"{where}:{n}: free of a storage that is not live"
            live.discard(f[1])
        elif kind == "C":
            # the optional seventh field (probe 1.1): the convolution's shape key
            assert len(f) in (6, 7) and f[1] in phases and f[3].isdigit() and f[4].isdigit() and f[5] in "01", f"{where}:{n}"
            if len(f) == 7:
                parse_key(f[6])
        elif kind == "B":
            assert len(f) == 3 and f[1] in phases, f"{where}:{n}"
        elif kind == "S":
            assert len(f) == 2 and int(f[1]) == steps + 1, f"{where}:{n}: step out of order"
            steps += 1
        else:
            raise AssertionError(f"{where}:{n}: unknown record {kind!r}")
    assert header is not None and footer is not None and steps > 0, f"{where}: incomplete trace"
    return header, footer


class RebuildsExactly(unittest.TestCase):
    def assert_exact(self, row):
        module, src = g.rebuild(row)
        self.assertEqual(src, "row")
        # every parameterised layer, in forward order, has the row's parameter count
        seen = []
        hooks = [m.register_forward_hook(lambda m, i, o: seen.append(sum(p.numel() for p in m.parameters())))
                 for m in module.modules() if isinstance(m, (nn.Conv2d, nn.BatchNorm2d, nn.BatchNorm1d, nn.Linear))]
        with torch.no_grad():
            module(torch.empty((2,) + g.input_shape(row), device="meta"))
        for h in hooks:
            h.remove()
        want = [t[2] for t in row.layers if t[0] in ("conv2d", "batch_norm2d", "batch_normalization", "linear")]
        self.assertEqual(seen, want, row.filename)
        # and the whole summary (types, H*W or widths, params) is the row's
        self.assertEqual(g.summarise(module, row.kind, g.input_shape(row)), [tuple(t) for t in row.layers])
        total = sum(p.numel() for p in module.parameters()) - g.prelu_params(module)
        self.assertEqual(total, sum(t[2] for t in row.layers))
        self.assertIsNone(g.generator_check(row, module), row.filename)
        # activation, dropout rate and batch norm as the filename says
        act = g.ACTIVATIONS[row.hp["act"]]
        self.assertTrue(any(isinstance(m, act) for m in module.modules()))
        drops = [m.p for m in module.modules() if isinstance(m, nn.Dropout)]
        self.assertEqual(bool(drops), row.hp["dropout"])
        self.assertTrue(all(p == row.hp["dropout_rate"] for p in drops))
        bns = [m for m in module.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]
        self.assertEqual(bool(bns), row.hp["batchnorm"])
        return module

    def test_every_cnn_architecture(self):
        archs = sorted({r.arch for r in rows("cnn") if not r.error})
        self.assertTrue({"uniform", "pyramid", "gradual", "bottleneck", "hourglass", "residual", "dense"} <= set(archs))
        for arch in archs:
            for row in pick("cnn", lambda r, a=arch: r.arch == a):
                with self.subTest(arch=arch, row=row.index):
                    self.assert_exact(row)

    def test_cnn_with_batch_norm_dropout_and_each_activation(self):
        for act in g.ACTIVATIONS:
            if act == "identity":
                continue
            for row in pick("cnn", lambda r, a=act: r.hp["act"] == a and r.hp["batchnorm"] and r.hp["dropout"], 1):
                with self.subTest(act=act, row=row.index):
                    self.assert_exact(row)

    def test_residual_strides_and_shortcuts(self):
        row = pick("cnn", lambda r: r.arch == "residual" and r.hp["input_size"] >= 32 and r.hp["depth"] >= 6, 1)[0]
        module = self.assert_exact(row)
        blocks = list(module.blocks)
        self.assertTrue(all(isinstance(b, g.ResidualBlock) for b in blocks))
        strides = [b.conv1.block[0].stride[0] for b in blocks]
        self.assertEqual(strides, [s for _, s in g.generator_residual_blocks(row.hp["depth"], row.hp["base_filters"],
                                                                            row.hp["input_size"])])
        self.assertIn(2, strides)
        self.assertIsInstance(blocks[0].shortcut[0], nn.Conv2d)
        self.assertEqual(blocks[0].shortcut[0].kernel_size, (1, 1))

    def test_dense_blocks_and_transitions(self):
        row = pick("cnn", lambda r: r.arch == "dense" and any(t[0] == "d" for t in r.layers), 1)[0]
        module = self.assert_exact(row)
        kinds = [type(b).__name__ for b in module.blocks]
        self.assertIn("TransitionBlock", kinds)
        dense = [b for b in module.blocks if isinstance(b, g.DenseBlock)]
        self.assertTrue(all(len(b.layers) == 4 for b in dense))
        self.assertEqual(dense[0].layers[1].block[0].in_channels, row.hp["input_channels"] + 32)
        transition = next(b for b in module.blocks if isinstance(b, g.TransitionBlock))
        self.assertIsInstance(transition.conv.block[-1], nn.ReLU, "the transition's ConvBlock keeps its default ReLU")

    def test_every_mlp_architecture_and_head(self):
        for arch in g.MLP_ARCHS:
            for row in pick("mlp", lambda r, a=arch: r.arch == a):
                with self.subTest(arch=arch, row=row.index):
                    self.assert_exact(row)
        for head in ("Sigmoid", "Identity"):
            row = pick("mlp", lambda r, h=head: r.hp["output"] == 1 and r.layers[-1][0] == h, 1)[0]
            with self.subTest(head=head, row=row.index):
                module = self.assert_exact(row)
                self.assertEqual(type(module.model[-1]).__name__, head)
                self.assertIs(g.loss_fn(row), g._bce_with_logits_loss)
        row = pick("mlp", lambda r: r.hp["act"] == "identity" and r.hp["output"] > 1, 1)[0]
        self.assert_exact(row)

    def test_input_shape_from_the_filename(self):
        row = pick("cnn", lambda r: r.hp["input_channels"] == 1, 1)[0]
        self.assertEqual(g.input_shape(row), (1, row.hp["input_size"], row.hp["input_size"]))
        x, y = g.input_fn(row)(5)
        self.assertEqual(tuple(x.shape), (5, 1, row.hp["input_size"], row.hp["input_size"]))
        self.assertEqual(y.dtype, torch.long)
        row = pick("mlp", lambda r: True, 1)[0]
        self.assertEqual(g.input_shape(row), (row.hp["input"],))


class Refused(unittest.TestCase):
    def corrupt(self, kind, typ):
        """A real row with one more parameter in the last layer of type `typ` (and the layer's index)."""
        row = pick(kind, lambda r: sum(t[0] == typ for t in r.layers) >= 2 or typ == "linear", 1)[0]
        i = max(i for i, t in enumerate(row.layers) if t[0] == typ)
        layers = list(row.layers)
        layers[i] = (layers[i][0], layers[i][1], layers[i][2] + 1)
        bad = g.Row(row.index, {"Filename": row.filename, "Activations-Params": repr(layers),
                                "Max GPU Memory (MiB)": str(row.measured_mib)}, kind)
        return bad, i

    def test_wrong_conv_param_count(self):
        bad, i = self.corrupt("cnn", "conv2d")
        with self.assertRaises(g.RebuildError) as e:
            g.rebuild(bad)
        self.assertIn(f"layer {i + 1}", str(e.exception))
        self.assertIn("conv2d", str(e.exception))
        rec = g.probe_row(bad, tempfile.mkdtemp())
        self.assertEqual(rec["status"], "skipped")
        self.assertIn(f"layer {i + 1}", rec["reason"])

    def test_wrong_linear_and_batch_norm_param_count(self):
        for kind, typ in (("mlp", "linear"), ("cnn", "linear")):
            bad, i = self.corrupt(kind, typ)
            with self.subTest(kind=kind), self.assertRaises(g.RebuildError) as e:
                g.rebuild(bad)
            self.assertIn(f"layer {i + 1}", str(e.exception))
        row = pick("mlp", lambda r: r.hp["batchnorm"], 1)[0]
        bad = g.Row(row.index, {"Filename": row.filename, "Activations-Params": repr(
            [(t[0], t[1], t[2] + (t[0] == "batch_normalization")) for t in row.layers])}, "mlp")
        with self.assertRaisesRegex(g.RebuildError, "batch_normalization"):
            g.rebuild(bad)

    def test_wrong_layer_order_and_filename(self):
        row = pick("cnn", lambda r: r.hp["dropout"] and r.arch == "uniform", 1)[0]
        swapped = list(row.layers)
        swapped[1], swapped[2] = swapped[2], swapped[1]  # dropout before the activation
        bad = g.Row(row.index, {"Filename": row.filename, "Activations-Params": repr(swapped)}, "cnn")
        with self.assertRaisesRegex(g.RebuildError, "layer 2"):
            g.rebuild(bad)
        bad = g.Row(0, {"Filename": "resnet50_32.model", "Activations-Params": "[]"}, "cnn")
        with self.assertRaisesRegex(g.RebuildError, "pattern"):
            g.rebuild(bad)

    def test_rows_that_never_trained(self):
        tiny = next(r for r in rows("cnn") if not r.layers and r.hp["input_size"] < 7)
        with self.assertRaisesRegex(g.RebuildError, r"log2"):
            g.rebuild(tiny)
        one = next(r for r in rows("cnn") if r.hp and r.hp["num_classes"] == 1)
        rec = g.probe_row(one, tempfile.mkdtemp())
        self.assertEqual(rec["status"], "skipped")
        self.assertIn("BCELoss", rec["reason"])

    def test_head_only_rows_come_from_the_generator(self):
        row = next(r for r in rows("cnn") if not r.layers and r.arch == "dense" and r.hp["input_size"] >= 7)
        module, src = g.rebuild(row)
        self.assertEqual(src, "generator")
        self.assertEqual(len(module.blocks), 0)
        self.assertEqual(module.fc.in_features, row.hp["input_channels"])
        self.assertEqual(module.fc.out_features, row.hp["num_classes"])


class BatchMode(unittest.TestCase):
    def test_three_rows_write_traces_and_an_index(self):
        picked = [pick("cnn", lambda r: r.arch == "residual", 1)[0], pick("cnn", lambda r: r.arch == "dense", 1)[0],
                  next(r for r in rows("cnn") if not r.layers and r.hp["input_size"] < 7)]
        out = tempfile.mkdtemp()
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        cmd = [sys.executable, "-m", "colo_probe.gpumemnet", "--csv", os.path.join(DATA, "cnn.csv"), "--kind", "cnn",
               "--out-dir", out, "--rows", ",".join(str(r.index) for r in picked), "--quiet"]
        subprocess.run(cmd, check=True, env=env, timeout=120)
        with open(os.path.join(out, "index.jsonl")) as f:
            index = [json.loads(line) for line in f]
        self.assertEqual(sorted(r["row"] for r in index), sorted(r.index for r in picked))
        by_row = {r["row"]: r for r in index}
        for row in picked:
            rec = by_row[row.index]
            self.assertEqual(rec["filename"], row.filename)
            self.assertEqual(rec["measured_mib"], row.measured_mib)
            self.assertIn("seconds", rec)
            if row.layers:
                self.assertEqual(rec["status"], "ok", rec)
                self.assertEqual(rec["trace"], f"{row.index}.trace")
                prelus = sum(1 for t in row.layers if t[0] == "PReLU")  # one parameter each, listed as 0
                self.assertEqual(rec["params"], sum(t[2] for t in row.layers) + prelus)
                with open(os.path.join(out, rec["trace"])) as f:
                    text = f.read()
                header, footer = check_trace(text, rec["trace"])
                self.assertEqual(header["batch"], row.hp["batch"])
                self.assertEqual(header["optimizer"], "adam")
                self.assertAlmostEqual(footer["peak_live_bytes"] / 2**20, rec["peak_live_mib"], delta=0.1)
                self.assertEqual(footer["cpu_fallbacks"], {})
                # torchsummary's two-sample forward comes first, then the training batches
                allocs = [line.split() for line in text.splitlines() if line.startswith("M ") and " forward " in line]
                c, s = row.hp["input_channels"], row.hp["input_size"]
                self.assertEqual(allocs[0][5], "rand")
                self.assertEqual(int(allocs[0][2]), 2 * c * s * s * 4)
                inputs = [a for a in allocs if a[5] == "input"]
                self.assertEqual(int(inputs[0][2]), row.hp["batch"] * c * s * s * 4)
                self.assertEqual(int(inputs[1][2]), row.hp["batch"] * 8, "int64 labels")
            else:
                self.assertEqual(rec["status"], "skipped")
                self.assertNotIn("trace", rec)
                self.assertFalse(os.path.exists(os.path.join(out, f"{row.index}.trace")))
        colo = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))
        if os.access(colo, os.X_OK):  # the C++ reader itself, where a build is at hand
            for rec in index:
                if rec["status"] == "ok":
                    r = subprocess.run([colo, "estimate", "--trace", os.path.join(out, rec["trace"]), "--estimator",
                                        "faketensor", "--json"], capture_output=True, text=True, timeout=60)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertGreater(json.loads(r.stdout)["estimate_mib"], 0)

    def test_a_file_of_something_else_or_an_out_dir_that_is_a_file_is_one_line(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        base = [sys.executable, "-m", "colo_probe.gpumemnet", "--kind", "cnn", "--quiet"]
        d = tempfile.mkdtemp()
        not_a_dir = os.path.join(d, "f")
        open(not_a_dir, "w").close()
        for args, code, message in (
                (["--csv", os.path.join(ROOT, "data", "carma", "workloads.csv"), "--out-dir", d], 1,
                 "not a GPUMemNet data set: no column 'Filename', 'Activations-Params', 'Max GPU Memory (MiB)'"),
                (["--csv", os.path.join(DATA, "cnn.csv"), "--out-dir", not_a_dir, "--limit", "1"], 2,
                 "exists and is not a directory")):
            p = subprocess.run(base + args, capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(p.returncode, code, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(message, p.stderr)

    def test_mlp_rows_in_process_and_without_the_summary_pass(self):
        picked = [pick("mlp", lambda r: r.hp["output"] == 1, 1)[0], pick("mlp", lambda r: r.hp["batchnorm"], 1)[0]]
        out = tempfile.mkdtemp()
        recs = g.run_batch(picked, out, summary=False)
        self.assertEqual([r["status"] for r in recs], ["ok", "ok"], recs)
        for rec, row in zip(recs, picked):
            with open(os.path.join(out, rec["trace"])) as f:
                text = f.read()
            header, _ = check_trace(text, rec["trace"])
            self.assertFalse(header["summary_pass"])
            self.assertNotIn(" forward rand", text)
        with open(os.path.join(out, "index.jsonl")) as f:
            self.assertEqual(len(f.read().splitlines()), 2)


if __name__ == "__main__":
    unittest.main()
