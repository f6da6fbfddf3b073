"""scripts/thesis-table.py: a --colo that is not colo is a one-line error naming the flag or the command,
not an errno or a JSON parser's message."""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "thesis-table.py")


class ThesisTable(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)

    def assertOneLineError(self, r, want):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(want, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_colo_that_is_not_colo_is_a_one_line_error(self):
        self.assertOneLineError(self.run_script("--colo", self.dir), f"--colo {self.dir}: not an executable program")
        missing = os.path.join(self.dir, "colo")
        self.assertOneLineError(self.run_script("--colo", missing), f"--colo {missing}: no such program")
        with open(missing, "w") as f:
            f.write(f"#!{sys.executable}\nprint('colo 0.1')\n")
        os.chmod(missing, stat.S_IRWXU)
        r = self.run_script("--colo", missing)
        self.assertOneLineError(r, "printed no JSON (is it colo?): colo 0.1")
        self.assertIn(f"`{missing} sim --trace ", r.stderr)


if __name__ == "__main__":
    unittest.main()
