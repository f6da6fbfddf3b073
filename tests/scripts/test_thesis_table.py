"""scripts/thesis-table.py: a --colo that is not colo is a one-line error naming the flag or the command,
not an errno or a JSON parser's message."""
import os
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "thesis-table.py")


class ThesisTable(ScriptTest):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)

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
