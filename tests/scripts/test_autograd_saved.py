"""scripts/autograd-saved.py --diff (docs/ESTIMATION.md, "The probe on PyTorch 2"): two outputs compared
case by case, a case only one of them has included; files it cannot read are one-line errors."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "autograd-saved.py")


class AutogradSavedDiff(ScriptTest):
    def write(self, name, text):
        return super().write(name, text if isinstance(text, str) else json.dumps(text))

    def diff(self, a, b):
        return subprocess.run([sys.executable, SCRIPT, "--diff", a, b], capture_output=True, text=True, timeout=60)

    def test_a_case_only_one_version_has_is_a_difference(self):
        a = self.write("a.json", {"sum": ["SumBackward.self(2, 3)"], "mean": []})
        b = self.write("b.json", {"sum": ["SumBackward.self(2, 3)"], "mean": [], "gelu": ["GeluBackward.self(2, 3)"]})
        for x, y in ((a, b), (b, a)):
            r = self.diff(x, y)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("gelu\n"), r.stdout)
            self.assertNotIn("sum", r.stdout)

    def test_files_it_cannot_read_are_one_line_errors(self):
        ok = self.write("ok.json", {"sum": []})
        for path, want in ((os.path.join(self.dir, "missing.json"), "missing.json: No such file or directory"),
                           (self.dir, "Is a directory"),
                           (self.write("bad.json", "{not json"), "bad.json: Expecting property name"),
                           (self.write("list.json", [1, 2]), "list.json: not this script's output")):
            r = self.diff(ok, path)
            self.assertEqual(r.returncode, 1, (path, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
