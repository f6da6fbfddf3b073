"""scripts/estimator-table.py (docs/ESTIMATION.md, "The probe"): one row per workload every estimator took,
each estimator's errors counted once; a bad --colo or --estimators is a one-line error."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "estimator-table.py")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


class EstimatorTable(ScriptTest):
    def test_each_estimator_counts_each_workload_once(self):
        if not os.access(COLO, os.X_OK):
            self.skipTest(f"no colo binary at {COLO} (ctest sets COLO_BIN)")
        r = run("--colo", COLO, "--estimators", "horus,allocsim")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and not line.startswith("| workload")]
        for name in ("horus", "allocsim"):
            self.assertIn(f"{name}: n={len(rows)} median", r.stdout)

    def test_an_estimator_named_twice_is_refused(self):
        # Its errors would have been counted twice (n doubled) in its summary line.
        r = run("--colo", COLO, "--estimators", "horus,allocsim,horus")
        self.assertOneLineError(r, "--estimators horus,allocsim,horus: horus is named twice")

    def test_a_colo_that_is_not_colo_is_a_one_line_error(self):
        r = run("--colo", self.dir, "--estimators", "horus")
        self.assertOneLineError(r, f"--colo {self.dir}: not an executable program")
        r = run("--colo", self.stand_in("print('hello')\n"), "--estimators", "horus")
        self.assertOneLineError(r, "printed no JSON (is it colo?): hello")

    def test_no_workload_every_estimator_took_is_an_error_not_a_traceback(self):
        colo = self.stand_in("""
            name = sys.argv[sys.argv.index("--estimator") + 1]
            print(json.dumps({"rows": [{"id": name, "measured_mib": 100, "estimate_mib": 90}]}))
            """)
        r = run("--colo", colo, "--estimators", "a,b")
        self.assertOneLineError(r, "was estimated by every one of a, b")


if __name__ == "__main__":
    unittest.main()
