"""scripts/paired-compare.py (docs/SIMULATOR.md, "Admission on predicted progress"): a small grid
through this build's colo sim, each setting without and with a rule's flag; the summary is the
pairs' own makespan changes."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "paired-compare.py")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))
HEAVY = os.path.join(ROOT, "data", "carma", "traces", "philly_heavy_60_tasks.csv")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, "--colo", COLO, *args], capture_output=True, text=True, timeout=600)


class PairedCompare(unittest.TestCase):
    def test_the_summary_is_the_pairs_makespan_changes(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "pairs.json")
            r = run("--flag=--adds-progress", "--trace", HEAVY, "--estimators", "allocsim", "--policies", "magm,lug",
                    "--caps", "90", "--backfill", "100", "--seeds", "2", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                pairs = json.load(f)
        self.assertEqual(len(pairs), 2 * 2)
        for p in pairs:
            self.assertNotIn("adds_progress", p["without"]["policy"])
            self.assertIn("adds_progress", p["with"]["policy"])
        changes = [p["with"]["makespan_s"] / p["without"]["makespan_s"] - 1 for p in pairs]
        self.assertIn(f"all                                  n=4    median {100 * statistics.median(changes):+.1f} %",
                      r.stdout)
        magm = [c for c, p in zip(changes, pairs) if p["policy"] == "magm"]
        self.assertIn(f"policy magm                          n=2    median {100 * statistics.median(magm):+.1f} %",
                      r.stdout)

    def test_bad_arguments_are_one_line_errors(self):
        for args, want in ((["--flag=adds"], "--flag 'adds': expected colo sim flags"),
                           (["--flag=--adds-progress", "--caps", "9o"], "--caps '9o': expected comma-separated integers"),
                           (["--flag=--adds-progress", "--policies", "magm,magm"], "--policies 'magm,magm': magm is given twice"),
                           (["--flag=--adds-progress", "--estimators", "allocsim,"], "--estimators 'allocsim,': expected comma-separated names"),
                           (["--flag=--adds-progress", "--colo", "/nonexistent/colo"], "--colo /nonexistent/colo: no such program"),
                           (["--flag=--adds-progress", "--seeds", "0"], "--seeds 0: at least one replay"),
                           (["--flag=--adds-progress", "--jitter", "1"], "--jitter 1.0: expected a number in [0, 1)"),
                           (["--flag=--adds-progress", "--jitter", "0", "--seeds", "2"], "one pair counted 2 times"),
                           (["--flag=--adds-progress", "--trace", "/nonexistent.csv"], "--trace /nonexistent.csv: no such file"),
                           (["--flag=--nope", "--trace", HEAVY, "--estimators", "oracle", "--policies", "magm", "--caps", "90",
                             "--backfill", "0", "--seeds", "1"], "--nope")):
            r = run(*args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
