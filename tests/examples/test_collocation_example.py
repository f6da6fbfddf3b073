"""examples/collocation_job.py follows `colo bench collocation`'s progress protocol (cli/bench_job.h):
after every step the file $COLO_BENCH_PROGRESS holds the samples trained so far, a whole number.
Runs on Debian's PyTorch 1.13 (CPU), a small network at a small size."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "collocation_job.py")


class CollocationExample(unittest.TestCase):
    def run_job(self, args, env):
        return subprocess.run([sys.executable, SCRIPT] + args, env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=600)

    def test_progress_is_the_samples_trained(self):
        with tempfile.TemporaryDirectory() as d:
            progress = os.path.join(d, "p")
            p = self.run_job(["--model", "mobilenet_v3_small", "--batch", "4", "--image-size", "32", "--classes", "10",
                              "--max-steps", "3"], {"COLO_BENCH_PROGRESS": progress})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(open(progress).read(), "12\n")
            self.assertFalse(os.path.exists(progress + ".tmp"))

    def test_without_the_harness_or_with_an_unknown_model(self):
        env = {k: v for k, v in os.environ.items() if k != "COLO_BENCH_PROGRESS"}
        p = subprocess.run([sys.executable, SCRIPT, "--max-steps", "1"], env=env, capture_output=True, text=True, timeout=600)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("COLO_BENCH_PROGRESS is not set", p.stderr)
        with tempfile.TemporaryDirectory() as d:
            p = self.run_job(["--model", "no_such_net"], {"COLO_BENCH_PROGRESS": os.path.join(d, "p")})
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("torchvision has no model 'no_such_net'", p.stderr)


if __name__ == "__main__":
    unittest.main()
