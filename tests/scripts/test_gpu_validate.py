"""scripts/gpu-validate.py (docs/GPU-VALIDATION.md) without a GPU: its training loop on the CPU
(--cpu-check: the same code path as on the GPU, batch 2), its configuration reader's errors, the
prediction through this build's colo, and the table it prints."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "gpu-validate.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=600)


class GpuValidate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(textwrap.dedent(text))
        return self.path(name)

    def test_the_training_loop_runs_every_option(self):
        # bert.py's own classes, input_fn (a dict batch) and loss at 2 layers of 64: BERT-base's
        # 108 M parameters take ~30 s of CPU for the same code path.
        self.write("small_bert.py", f"""
            import importlib.util
            _spec = importlib.util.spec_from_file_location("colo_bert", {os.path.join(ROOT, "models", "pytorch", "bert.py")!r})
            bert = importlib.util.module_from_spec(_spec)
            _spec.loader.exec_module(bert)
            input_fn, loss_fn = bert.input_fn, bert.loss_fn


            def small():
                return bert.BertForMaskedLM(bert.BertConfig(layers=2, hidden=64, heads=4, intermediate=256))
        """)
        configs = self.write("c.configs", f"""
            # a comment, then configurations
            tiny-bf16  --probe torchvision:resnet18 --input 3x32x32 --num-classes 10 --batch 4 --optimizer adam --amp bf16 --checkpointing
            tiny-fp16  --probe torchvision:mobilenet_v3_small --input 3x32x32 --num-classes 10 --batch 4 --optimizer sgd-momentum --amp fp16
            incv3      --probe torchvision:inception_v3 --input 3x299x299 --num-classes 10 --batch 4 --optimizer rmsprop
            bert       --probe {self.path("small_bert.py")}:small --input 16 --batch 4 --optimizer adamw --foreach off
            env        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True --probe torchvision:resnet18 --input 3x32x32 --num-classes 10 --batch 2
            missing    --probe torchvision:no_such_net --batch 4
        """)
        r = run("measure", "--cpu-check", "--configs", configs, "--out", self.path("m.jsonl"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.path("m.jsonl")) as f:
            recs = {x["name"]: x for x in map(json.loads, f)}
        self.assertEqual(list(recs), ["tiny-bf16", "tiny-fp16", "incv3", "bert", "env", "missing"])
        for name in ("tiny-bf16", "tiny-fp16", "incv3", "bert", "env"):
            self.assertEqual(recs[name].get("cpu_check"), "ok", recs[name])
            self.assertGreater(recs[name]["loss"], 0)
        # A configuration that cannot run is a record with the reason; the others still run.
        self.assertIn("no_such_net", recs["missing"]["error"])

    def test_bad_configuration_files_name_the_line(self):
        configs = self.write("bad.configs", "ok --probe torchvision:resnet18 --batch 2\nlonely\n")
        r = run("measure", "--cpu-check", "--configs", configs, "--out", self.path("m.jsonl"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bad.configs:2: expected a name, optional NAME=VALUE environment settings, then colo estimate "
                      "--probe flags", r.stderr)
        r = run("measure", "--cpu-check", "--configs", self.write("env.configs", "x A=1\n"), "--out", self.path("m.jsonl"))
        self.assertIn("env.configs:1: expected a name, optional NAME=VALUE", r.stderr)
        r = run("measure", "--configs", self.write("empty.configs", "# nothing\n"), "--out", self.path("m.jsonl"))
        self.assertIn("empty.configs: no configurations", r.stderr)
        # A bad flag is named at its line when the file is read, in one line (it was argparse's
        # usage on several, when the configuration's turn came).
        for text, want in (("ok --probe torchvision:resnet18 --batch 2\nb --probe torchvision:resnet18 --batch two\n",
                            "flags.configs:2: b: argument --batch: invalid int value: 'two'"),
                           ("a --probe torchvision:resnet18 --batch 2 --amp fp8\n", "flags.configs:1: a: argument --amp"),
                           ("a --batch 2 --optimizer sgd\n", "flags.configs:1: a: the following arguments are required: --probe")):
            r = run("measure", "--cpu-check", "--configs", self.write("flags.configs", text), "--out", self.path("m.jsonl"))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(want, r.stderr)
            self.assertTrue(r.stderr.startswith("gpu-validate: "), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_predict_through_colo_and_the_table(self):
        colo = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))
        if not os.access(colo, os.X_OK):
            self.skipTest(f"no colo binary at {colo} (ctest sets COLO_BIN)")
        configs = self.write("c.configs", """
            r18   --probe torchvision:resnet18 --input 3x64x64 --batch 8 --optimizer adam
            r18x  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True --probe torchvision:resnet18 --input 3x64x64 --batch 8 --optimizer adam
            nope  --probe torchvision:no_such_net --batch 8
        """)
        r = run("predict", "--configs", configs, "--colo", colo, "--out", self.path("p.jsonl"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.path("p.jsonl")) as f:
            pred = {x["name"]: x for x in map(json.loads, f)}
        self.assertGreater(pred["r18"]["peak_mib"], 0)
        self.assertGreater(pred["r18"]["estimate_mib"], pred["r18"]["peak_mib"])
        self.assertIn("no model 'no_such_net'", pred["nope"]["error"])
        # A configuration's environment reaches the probe (and, measured, the training process).
        self.assertIn("allocator settings expandable_segments:True", pred["r18x"]["explanation"])
        self.assertNotIn("allocator settings", pred["r18"]["explanation"])
        # Measured values chosen so that every error is known: reserved 10 % above the prediction.
        peak, est = pred["r18"]["peak_mib"], pred["r18"]["estimate_mib"]
        m = {"name": "r18", "flags": "x", "max_allocated_mib": 100.0, "max_reserved_mib": peak / 0.5,
             "context_mib": 500, "smi_process_mib": est * 2}
        with open(self.path("m.jsonl"), "w") as f:
            f.write(json.dumps(m) + "\n" + json.dumps({"name": "nope", "flags": "y", "error": "boom"}) + "\n")
        r = run("table", self.path("m.jsonl"), self.path("p.jsonl"))
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in r.stdout.splitlines()[2:]}
        self.assertEqual(rows["r18"][6], "-50.0 %", r.stdout)   # reserved: predicted half the measured
        self.assertEqual(rows["r18"][9].rstrip(" |"), "-50.0 %", r.stdout)  # estimate: half nvidia-smi
        self.assertIn("failed: boom", r.stdout)

    def test_margins_follow_the_profiles_rule(self):
        # h100-80gb: context 742 MiB without cuDNN, 762 with it (calibration/h100-80gb.json). Each
        # class gets the smallest margin on the grid that leaves no estimate under nvidia-smi.
        def pred(name, peak, context):
            return {"name": name, "peak_mib": peak,
                    "explanation": f"replayed 9 probe events (...) x (1 + margin 0.010) + context {context} MiB (h100)"}

        def meas(name, smi):
            return {"name": name, "flags": "x", "max_allocated_mib": 1.0, "max_reserved_mib": 1.0, "smi_process_mib": smi}
        preds = [pred("gpt", 1000.0, 742), pred("bert", 2000.0, 742), pred("cnn", 1000.0, 762), pred("extra", 1.0, 742)]
        # gpt needs (1757 - 742) / 1000 - 1 = 1.5 %: 0.02; cnn needs 3.05 %: 0.04 (0.03 gives ceil(1792) < 1793)
        meas_rows = [meas("gpt", 1757), meas("bert", 2742), meas("cnn", 1793), {"name": "failed", "flags": "y", "error": "x"}]
        with open(self.path("p.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in preds))
        with open(self.path("m.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in meas_rows))
        r = run("margins", "--gpu", "h100-80gb", "--measured", self.path("m.jsonl"), "--predicted", self.path("p.jsonl"))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("trace_safety_margin: 0.02 (2 configurations; the largest need gpt: +0.0150"), r.stdout)
        self.assertTrue(lines[1].startswith("trace_cudnn_safety_margin: 0.04 (1 configurations; the largest need cnn"), r.stdout)
        # A prediction made with another profile's context cannot be sorted: said, not guessed.
        with open(self.path("p2.jsonl"), "w") as f:
            f.write(json.dumps(pred("gpt", 1000.0, 1771)) + "\n")
        r = run("margins", "--gpu", "h100-80gb", "--measured", self.path("m.jsonl"), "--predicted", self.path("p2.jsonl"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("gpt: predicted with context 1771 MiB, not calibration/h100-80gb.json's (742 or 762)", r.stderr)
        r = run("margins", "--gpu", "h100-80gb", "--step", "0", "--measured", self.path("m.jsonl"), "--predicted", self.path("p.jsonl"))
        self.assertIn("--step must be in (0, 1], got 0", r.stderr)


if __name__ == "__main__":
    unittest.main()
