"""scripts/slurm-compare.py (docs/SLURM.md): arguments it would ignore or could not run, and a trace colo
refuses, are one-line errors before any scenario runs; the trace's errors name its own lines."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "slurm-compare.py")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))


class SlurmCompare(ScriptTest):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, "--colo", COLO, "--out", os.path.join(self.dir, "out"), *args],
                              capture_output=True, text=True, timeout=300)

    def assertOneLineError(self, r, want):
        super().assertOneLineError(r, want)
        self.assertNotIn("done in", r.stderr)

    def test_arguments_it_would_ignore_or_could_not_run_are_refused(self):
        # --quick used to replace a --scale, --jobs or --servers given beside it without a word.
        self.assertOneLineError(self.run_script("--quick", "--scale", "3"), "--quick sets --scale, --jobs and --servers")
        self.assertOneLineError(self.run_script("--quick", "--jobs", "0"), "--quick sets --scale, --jobs and --servers")
        # More GPUs than colo sim takes (100000): refused before the copies of the trace are made.
        self.assertOneLineError(self.run_script("--scale", "25001"), "--scale at most 25000")
        self.assertOneLineError(self.run_script("--servers", "12501"), "--servers at most 12500")
        self.assertOneLineError(self.run_script("--jobs", "5000001"), "--jobs at most 5000000")
        self.assertOneLineError(self.run_script("--scale", "0"), "must be positive")
        r = subprocess.run([sys.executable, SCRIPT, "--colo", COLO, "--out", self.write("f", ""), "--quick"],
                           capture_output=True, text=True, timeout=60)
        self.assertOneLineError(r, "--out %s: not a directory" % os.path.join(self.dir, "f"))
        r = subprocess.run([sys.executable, SCRIPT, "--colo", self.dir, "--out", os.path.join(self.dir, "o"), "--quick"],
                           capture_output=True, text=True, timeout=60)
        self.assertOneLineError(r, f"--colo {self.dir}: not an executable program")

    def test_a_trace_colo_refuses_is_named_at_its_own_line(self):
        if not os.access(COLO, os.X_OK):
            self.skipTest(f"no colo binary at {COLO} (ctest sets COLO_BIN)")
        # The third row's workload is unknown: the error names this file and line 3, not a copy of it.
        trace = self.write("t.csv", "submit_offset_s,workload\n0,BERT_base\n5,no_such_workload\n")
        self.assertOneLineError(self.run_script("--quick", "--trace", trace),
                                f"{trace}:3: unknown workload 'no_such_workload'")
        swapped = self.write("s.csv", "workload,submit_offset_s\nBERT_base,0\n")
        self.assertOneLineError(self.run_script("--quick", "--trace", swapped),
                                f"{swapped}:1: expected the header submit_offset_s,workload")


if __name__ == "__main__":
    unittest.main()
