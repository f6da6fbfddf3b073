"""forked_probe.run (what the --script tests start the probe with) against a fresh `python3 -m
colo_probe`: the same exit status, stdout, stderr (the script's sys.argv, sys.path and __name__
among it) and trace, and a run past its timeout killed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import forked_probe

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))

SCRIPT = """
    import sys, torch, torch.nn as nn
    print("argv", sys.argv, "path", sys.path[:3], "main", __name__)
    if sys.argv[1:] == ["fail"]:
        raise ValueError("the script failed")
    dev = torch.device("cuda")
    model = nn.Linear(64, 8).to(dev)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(16, 64, device=dev)).sum().backward()
        opt.step()
"""


class ForkedProbe(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="colo-forked-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        with open(os.path.join(self.dir, "train.py"), "w") as f:
            f.write(textwrap.dedent(SCRIPT))
        self.env = dict(os.environ, PYTHONPATH=PYTHON_DIR, CUDA_VISIBLE_DEVICES="")

    def both(self, *args):
        """(fresh, forked): each CompletedProcess with the trace it wrote (or None) as .trace."""
        out = []
        for how in ("fresh", "forked"):
            trace = os.path.join(self.dir, how + ".trace")
            argv = ["--out", trace, *args]
            if how == "fresh":
                p = subprocess.run([sys.executable, "-m", "colo_probe", *argv], capture_output=True,
                                   text=True, env=self.env, cwd=self.dir, timeout=600)
            else:
                p = forked_probe.run(argv, env=self.env, cwd=self.dir, timeout=600)
            p.trace = None
            if os.path.exists(trace):
                with open(trace) as f:
                    p.trace = [line for line in f.read().splitlines() if not line.startswith("E ")]
                    f.seek(0)
                    footer = json.loads([x for x in f.read().splitlines() if x.startswith("E ")][0][2:])
                    footer.pop("seconds", None)
                    p.trace.append(footer)
                os.remove(trace)
            out.append(p)
        return out

    def assertSame(self, fresh, forked):
        self.assertEqual(forked.returncode, fresh.returncode, (fresh.stderr, forked.stderr))
        self.assertEqual(forked.stdout, fresh.stdout)
        self.assertEqual(forked.stderr, fresh.stderr)
        self.assertEqual(forked.trace, fresh.trace)

    def test_a_trace_a_failing_script_and_bad_arguments_come_out_the_same(self):
        fresh, forked = self.both("--script", "train.py", "a", "b")
        self.assertEqual(fresh.returncode, 0, fresh.stderr)
        self.assertIn("argv ['train.py', 'a', 'b'] path ['%s', '%s', '%s'] main __main__" % (self.dir, self.dir, PYTHON_DIR),
                      fresh.stderr)  # the script's prints go to stderr
        self.assertIsNotNone(fresh.trace)
        self.assertSame(fresh, forked)
        fresh, forked = self.both("--script", "train.py", "fail")
        self.assertEqual(fresh.returncode, 1)
        self.assertIn("the script failed", fresh.stderr)
        self.assertSame(fresh, forked)
        fresh, forked = self.both("--steps", "zero", "--script", "train.py")
        self.assertEqual(fresh.returncode, 2)
        self.assertSame(fresh, forked)

    def test_a_run_past_its_timeout_is_killed_and_the_next_one_runs(self):
        with open(os.path.join(self.dir, "stuck.py"), "w") as f:
            f.write("import threading\nthreading.Event().wait()  # never set: no step, no end\n")
        with self.assertRaises(subprocess.TimeoutExpired):
            forked_probe.run(["--out", "t.trace", "--script", "stuck.py"], env=self.env, cwd=self.dir, timeout=3)
        p = forked_probe.run(["--out", "t.trace", "--script", "train.py"], env=self.env, cwd=self.dir, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main()
