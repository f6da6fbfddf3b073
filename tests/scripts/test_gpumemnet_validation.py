"""scripts/gpu-validate-gpumemnet.py's table and scripts/conv-workspace-neighbours-cv.py (docs/GPU-VALIDATION.md
§8) without a GPU: the table's groups and figures on made-up rows; the cross-validation on a few of the
H100 rows measured there, probed here and estimated by this build's colo."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
VALIDATE = os.path.join(ROOT, "scripts", "gpu-validate-gpumemnet.py")
CV = os.path.join(ROOT, "scripts", "conv-workspace-neighbours-cv.py")
MEASURED = os.path.join(ROOT, "docs", "gpu-validation", "measured-gpumemnet-cnn-h100.jsonl")
CSV = os.path.join(ROOT, "data", "gpumemnet", "cnn.csv")


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=600)


class GpuMemNetValidation(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, records):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        return path

    def test_the_table_splits_held_out_rows_and_families(self):
        name = "input_channels:3_num_classes:10_depth:2_arch:{}_base_filters:8_batch:4_input_size:32_act:relu" \
               "_dropout:0.1_dropout:False_batchnorm:False.out"
        measured = self.write("m.jsonl", [{"torch": "2"}] + [
            {"row": i, "status": "ok", "max_reserved_mib": 100.0, "filename": name.format(arch)}
            for i, arch in enumerate(["residual", "residual", "dense", "dense"])] + [
            {"row": 9, "status": "skipped", "reason": "out of memory on the A100"}])
        # Rows 0 and 2 are the table's sources; 1 and 3 held out. Errors: -10, +20, 0, +4 %.
        predicted = self.write("p.jsonl", [
            {"row": 0, "peak_mib": 90.0, "convs": 5, "convs_unlisted": 0},
            {"row": 1, "peak_mib": 120.0, "convs": 5, "convs_unlisted": 2},
            {"row": 2, "peak_mib": 100.0, "convs": 5, "convs_unlisted": 0},
            {"row": 3, "peak_mib": 104.0, "convs": 5, "convs_unlisted": 5},
            {"row": 9, "error": "not measured"}])
        shapes = self.write("s.jsonl", [{"key": "k1", "sources": ["gpumemnet-cnn:0", "carma:x"]},
                                        {"key": "k2", "sources": ["gpumemnet-cnn:2"]}])
        r = run(VALIDATE, "table", measured, predicted, "--shapes", shapes, "--families")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = {line.split(":")[0].strip(): line for line in r.stdout.splitlines()}
        self.assertIn("all rows: 4 rows", lines["all rows"])
        self.assertIn("median |error| 7.0 %", lines["all rows"])
        self.assertIn("under by > 5 %: 1 (25 %)", lines["all rows"])
        self.assertIn("2 rows", lines["held out (not among the table's sources)"])
        self.assertIn("median +12.0 %", lines["held out (not among the table's sources)"])
        self.assertIn("under: 0 (0 %)", lines["held out (not among the table's sources)"])
        self.assertIn("median -5.0 %", lines["rows the table was measured for"])
        self.assertIn("2 rows", lines["every conv in the table"])
        self.assertIn("median +20.0 %", lines["residual"])  # the held-out residual row only
        self.assertIn("median +4.0 %", lines["dense"])
        # The allocated peak, from the replay's explanation.
        m2 = self.write("m2.jsonl", [{"row": 0, "status": "ok", "max_reserved_mib": 100.0, "max_allocated_mib": 80.0}])
        p2 = self.write("p2.jsonl", [{"row": 0, "peak_mib": 90.0,
                                      "explanation": "peak reserved 90 MiB set by x (allocated 84, live tensors 70 MiB)"}])
        r = run(VALIDATE, "table", m2, p2, "--allocated")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all rows: 1 rows: allocated peak, predicted vs measured: median |error| 5.0 %", r.stdout)
        empty = self.write("e.jsonl", [{"row": 5, "peak_mib": 1.0}])
        r = run(VALIDATE, "table", measured, empty)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no row has both a measurement and a prediction", r.stderr)

    def test_the_cross_validation_runs_colo_on_measured_rows(self):
        colo = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))
        if not os.access(colo, os.X_OK):
            self.skipTest(f"no colo binary at {colo} (ctest sets COLO_BIN)")
        out = os.path.join(self.dir.name, "cv.json")
        r = run(CV, "--csv", CSV, "--measured", MEASURED, "--colo", colo, "--limit-rows", "6", "--max-k", "2",
                "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fold 2/2: 3 rows", r.stdout)
        with open(out) as f:
            res = json.load(f)
        self.assertEqual(sorted(res["results"]), ["0", "1", "2"])
        for k, s in res["results"].items():
            self.assertEqual(s["rows"], 6, k)
            self.assertLessEqual(s["min"], s["median"])
            self.assertLessEqual(s["median"], s["max"])
        self.assertIn(res["chosen"], (0, 1, 2))
        self.assertIn(f"chosen: trace_conv_workspace_neighbours = {res['chosen']}", r.stdout)

    def test_the_cross_validation_refuses_bad_arguments(self):
        for args, want in ((["--max-k", "0"], "--max-k must be in [1, 16]"),
                           (["--folds", "1"], "--folds >= 2"),
                           (["--gpu", "a100-40gb"], "names no conv_workspace_table"),
                           (["--gpu", "no-such-gpu"], "FileNotFoundError")):
            r = run(CV, "--csv", CSV, "--measured", MEASURED, *args)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(want, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_the_cross_validation_refuses_inputs_it_would_misread(self):
        colo = sys.executable  # (any program: these are refused before colo runs)
        shapes = self.write("s.jsonl", [{"key": "k", "sources": ["gpumemnet-cnn:two"]}])
        zero = self.write("m.jsonl", [{"row": 3, "status": "ok", "max_reserved_mib": 0}])
        for args, want in (
                # NaN or a negative limit chose k = 0 whatever the errors
                (["--median-limit", "nan"], "--median-limit nan: expected a number of percent >= 0"),
                (["--median-limit", "-1"], "--median-limit -1: expected a number of percent >= 0"),
                (["--shapes", shapes], "s.jsonl:1: not a line of scripts/conv-shapes.py"),  # int('two') later
                (["--measured", zero], "m.jsonl:1: max_reserved_mib 0 is not a number > 0")):
            r = run(CV, "--csv", CSV, "--measured", MEASURED, "--colo", colo, *args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertIn(want, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_the_cross_validation_refuses_what_it_cannot_run_before_probing(self):
        d = self.dir.name
        two = self.write("two.jsonl", [{"row": 1007, "status": "ok", "max_reserved_mib": 1726.0},
                                       {"row": 913, "status": "ok", "max_reserved_mib": 25540.0}])
        for args, want in ((["--measured", two, "--folds", "3"], "--folds 3: more folds than the 2 rows"),
                           # these came after the rows had been probed
                           (["--measured", two, "--colo", d], f"--colo {d}: not an executable program"),
                           (["--measured", two, "--json", os.path.join(d, "no-such-dir", "cv.json")], "no directory")):
            r = run(CV, "--csv", CSV, "--colo", sys.executable, *args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertIn(want, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
