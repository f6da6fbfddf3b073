"""scripts/power-table.py (docs/GPU-VALIDATION.md §5): the table of the measured runs, and one-line errors for
measurement files it would otherwise misread (a value out of range shown or fitted as if measured)."""
import copy
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "power-table.py")
DOCS = os.path.join(ROOT, "docs", "gpu-validation")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)


class PowerTable(ScriptTest):
    def setUp(self):
        super().setUp()
        with open(os.path.join(DOCS, "power-run1-mps.json")) as f:
            self.base = json.load(f)

    def variant(self, name, change):
        j = copy.deepcopy(self.base)
        change(j)
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(j, f)
        return path

    def test_the_measured_runs(self):
        r = run("--run", "r1=" + os.path.join(DOCS, "power-run1-mps.json") + "," + os.path.join(DOCS, "power-run1-streams.json"),
                "--run", "r2=" + os.path.join(DOCS, "power-run2-mps.json") + "," + os.path.join(DOCS, "power-run2-streams.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all runs: floor B 85.8 W ± 4.8 W (standard error) over 12 pairs", r.stdout)

    def test_values_it_would_misread_are_one_line_errors(self):
        def set_pair(key, value):
            return lambda j: j["pairs"][0].__setitem__(key, value)

        def second_solo(j):
            j["solo"].append(dict(j["solo"][0], watts=100.0))
        cases = [
            (set_pair("smact", 7.0), "pair r50+mnv2 smact 7 is outside [0, 1]"),  # was printed as the GPU's SMACT
            (set_pair("smact", float("nan")), "pair r50+mnv2 smact: not a finite number"),
            (set_pair("smact", "high"), "pair r50+mnv2 smact: not a finite number"),  # was shown as "-"
            (set_pair("slowdown", [1e-320, 1.5]), "slowdown of r50 is 9.99989e-321, outside [0.001, 1e6]"),  # nan fits
            (second_solo, "job r50 has two solo runs"),  # the second replaced the first
            (lambda j: j.__setitem__("idle", 80.0), "'idle' is not an object"),  # the idle reading was dropped
            (lambda j: j["idle"].__setitem__("processes", "none"), "idle processes: not a count"),
            (lambda j: j.__setitem__("sharing", 1), "'sharing' is not a string"),
        ]
        for n, (change, want) in enumerate(cases):
            path = self.variant(f"v{n}.json", change)
            r = run("--run", "a=" + path)
            self.assertEqual(r.returncode, 1, (want, r.stdout, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_file_given_twice_in_one_run_is_refused(self):
        path = os.path.join(DOCS, "power-run1-mps.json")
        for spec, want in (("a=%s,%s" % (path, path), "the file is given twice in one run"),  # its pairs counted twice
                           ("a=%s," % path, "--run: an empty file name")):
            r = run("--run", spec)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
