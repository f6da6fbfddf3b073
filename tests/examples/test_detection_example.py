"""examples/detection_finetune.py: it trains for real on the CPU (one step of a small detector), and
the probe records it as colo estimate --script would, with the sample torchvision's sampler takes."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SCRIPT = os.path.join(ROOT, "examples", "detection_finetune.py")
SMALL = ["--model", "fasterrcnn_mobilenet_v3_large_320_fpn", "--height", "240", "--width", "320"]


class DetectionExample(unittest.TestCase):
    def test_it_trains_on_the_cpu(self):
        # One real step (the probe's figures are of this script, so it must be one that runs).
        p = subprocess.Popen([sys.executable, SCRIPT, *SMALL, "--epochs", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        first = p.stdout.readline()
        p.kill()
        p.communicate()
        self.assertTrue(first.startswith("epoch 0 step 0 loss "), first)

    def test_the_probe_records_a_full_sample_per_image(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.trace")
            env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "CUDA_VISIBLE_DEVICES": ""}
            p = subprocess.run([sys.executable, "-m", "colo_probe", "--out", out, "--script", SCRIPT, *SMALL,
                                "--batch-size", "2"], capture_output=True, text=True, env=env, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                lines = f.read().splitlines()
        footer = json.loads(lines[-1][2:])
        self.assertGreater(footer["peak_live_bytes"], 100 << 20)
        # The box head's class logits: 2 images x 512 sampled proposals x 2 classes (float32).
        allocs = {(int(line.split()[2]), line.split()[5]) for line in lines if line.startswith("M ")}  # M id bytes stream phase op
        self.assertIn((2 * 512 * 2 * 4, "addmm"), allocs)


if __name__ == "__main__":
    unittest.main()
