"""What the script tests share (not a test file itself): a temporary directory per test, files and
stand-in programs written into it, and the check every bad-input case makes — exit status 1 and
the expected message on one line, never a traceback."""
import os
import stat
import sys
import tempfile
import textwrap
import unittest


class ScriptTest(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def stand_in(self, body, name="colo"):
        """An executable `name` in the test's directory that runs the Python `body` (with json and
        sys imported; sys.argv as the real program's): a colo that answers what the test needs."""
        path = self.write(name, f"#!{sys.executable}\nimport json, sys\n" + textwrap.dedent(body))
        os.chmod(path, stat.S_IRWXU)
        return path

    def assertOneLineError(self, r, want):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(want, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
