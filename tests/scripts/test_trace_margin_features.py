"""scripts/trace-margin-features.py (docs/ESTIMATION.md, "A margin per network from its trace"):
the replay's peak and context taken apart from two margins, the trace features read, the quantile
fits scored on held-out and carma rows. A stand-in colo answers `colo estimate eval --rows --json`
as the trace estimator would (context + peak × (1 + the profile's margin)); every row's real
memory is the context plus 1.2 × its peak, so every fit must find that margin and be exact."""
import json
import os
import subprocess
import sys
import unittest

from script_test import ScriptTest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "trace-margin-features.py")
MIB = 2**20

try:
    import numpy  # noqa: F401  (Debian's python3-numpy, which python3-torch brings)
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False


class TraceMarginFeatures(ScriptTest):
    def setUp(self):
        super().setUp()
        self.gmn = os.path.join(self.dir, "gmn")
        self.carma = os.path.join(self.dir, "carma")
        for d in (self.gmn, self.carma):
            os.mkdir(d)

        def trace(directory, i, convs):
            # The summary pass and step 1 before the first "S", step 2 after it (what the features read).
            first = f"C forward convolution {MIB} {MIB} 0 f:2x3x8x8:4x3x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1\n"
            step = "".join(f"C forward convolution {(i + 1) * k * MIB} {(i + 2) * MIB} {k % 2} "
                           f"f:{i + 4}x{k + 3}x32x32:{k + 8}x{k + 3}x3x3:s{1 + k % 2}x1:p1x1:d1x1:g1:t0:float32:b1\n"
                           for k in range(1, convs + 1))
            name = f"{i}.trace"
            with open(os.path.join(directory, name), "w") as f:
                f.write("colo-probe-trace 1\nH {}\n" + first + "S 1\n" + step + "M 1 1024 0 forward cudnn_batch_norm\nS 2\n")
            return name

        # 14 train and 14 test rows of the GPUMemNet set, and two carma rows (one without convolutions,
        # which the carma score leaves out): peaks 1000 + 100 i MiB.
        lines = []
        for i in range(28):
            lines.append({"filename": f"arch:row{i}", "status": "ok", "trace": trace(self.gmn, i, 1 + i % 5),
                          "split": "train" if i < 14 else "test", "peak": 1000 + 100 * i})
        lines.append({"filename": "arch:broken", "status": "failed", "split": "train", "peak": 1})
        self.write(os.path.join("gmn", "index.jsonl"), "".join(json.dumps(j) + "\n" for j in lines))
        carma = [{"filename": "resnet3", "status": "ok", "trace": trace(self.carma, 0, 3), "split": "all", "peak": 12000},
                 {"filename": "BERT_base", "status": "ok", "trace": trace(self.carma, 1, 0), "split": "all", "peak": 18000}]
        self.write(os.path.join("carma", "index.jsonl"), "".join(json.dumps(j) + "\n" for j in carma))
        self.colo = self.stand_in("""
            import math, os
            assert sys.argv[1:3] == ["estimate", "eval"] and "--rows" in sys.argv, sys.argv
            arg = lambda flag: sys.argv[sys.argv.index(flag) + 1]
            with open(os.path.join(os.environ["COLO_CALIBRATION_DIR"], arg("--gpu") + ".json")) as f:
                margin = json.load(f)["trace_cudnn_safety_margin"]
            rows = []
            for line in open(os.path.join(arg("--traces"), "index.jsonl")):
                j = json.loads(line)
                if arg("--split") not in ("all", j["split"]):
                    continue
                context = 1771
                rows.append({"id": j["filename"], "measured_mib": math.ceil(context + j.get("ratio", 1.2) * j["peak"]),
                             "estimate_mib": math.ceil(context + j["peak"] * (1 + margin))})
            print(json.dumps({"rows": rows}))
        """)

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy (python3-numpy)")
    def test_every_fit_finds_the_one_margin_and_scores_it_on_rows_it_never_saw(self):
        r = self.run_script(self.gmn, "--colo", self.colo, "--carma", self.carma, "--taus", "0.5,0.9",
                            "--bootstrap", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GPUMemNet CNN rows: 14 train, 14 test; carma CNN rows: 1;", r.stdout)
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith(("constant ", "features "))]
        self.assertEqual([row[:2] for row in rows], [["constant", "0.50"], ["constant", "0.90"], ["features", "0.50"],
                                                     ["features", "0.90"]], r.stdout)
        for row in rows:
            # train median, test median / under by > 5 %, carma median / under by > 5 %: the exact margin
            # (within the MiB rounding of the measurements) everywhere.
            self.assertEqual((row[2], row[6], row[11], row[12], row[15]), ("0.0", "0.0", "0", "0.0", "0"), r.stdout)

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy (python3-numpy)")
    def test_nearest_networks_find_the_one_margin_and_select_reads_train_rows_only(self):
        r = self.run_script(self.gmn, "--colo", self.colo, "--carma", self.carma, "--taus", "0.9",
                            "--bootstrap", "2", "--nearest", "3,13", "--nearest-features", "convs,peak")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith("nearest")]
        self.assertEqual([row[:2] for row in rows[:2]], [["nearest3", "0.90"], ["nearest13", "0.90"]], r.stdout)
        for row in rows[:2]:
            # Leave-one-out train, test and carma: every neighbour's margin is the one margin.
            self.assertEqual((row[2], row[4], row[6], row[8], row[11], row[12], row[15]),
                             ("0.0", "0.0", "0.0", "0.0", "0", "0.0", "0"), r.stdout)
        self.assertIn("nearest3 0.90: resnet3 +0.0", r.stdout)
        # 13 neighbours of a row left out of 14: K 14 would need a 15th.
        self.assertOneLineError(self.run_script(self.gmn, "--colo", self.colo, "--carma", self.carma, "--nearest", "14"),
                                "--nearest 14: only 14 train rows with a measurement")
        r = self.run_script(self.gmn, "--colo", self.colo, "--carma", self.carma, "--taus", "0.5,0.9", "--nearest", "2",
                            "--select")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("test med", r.stdout)  # no held-out score in a selection
        best = [line.split() for line in r.stdout.splitlines() if line.startswith("  ")]
        self.assertEqual(len(best), 10, r.stdout)
        self.assertTrue(all(line[-5:] == ["train", "0.0", "/", "0.0", "%"] for line in best), r.stdout)

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy (python3-numpy)")
    def test_a_train_row_is_never_its_own_nearest_network(self):
        # Train rows alternate between needing 1.1 and 1.3 times their peak; along the peak each row's
        # nearest other row is of the other kind, so K 1 leave-one-out misses every one by ~8 %
        # (a row counted as its own neighbour would score 0.0).
        index = os.path.join(self.gmn, "index.jsonl")
        lines = [json.loads(line) for line in open(index)]
        for j in lines:
            if j["split"] == "train":
                j["ratio"] = 1.1 if j["peak"] // 100 % 2 else 1.3
        self.write(os.path.join("gmn", "index.jsonl"), "".join(json.dumps(j) + "\n" for j in lines))
        r = self.run_script(self.gmn, "--colo", self.colo, "--carma", self.carma, "--taus", "0.5", "--bootstrap", "0",
                            "--nearest", "1", "--nearest-features", "peak")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = next(line.split() for line in r.stdout.splitlines() if line.startswith("nearest1 "))
        self.assertGreater(float(row[2]), 5.0, r.stdout)

    def test_bad_inputs_are_one_line_errors(self):
        r = self.run_script(self.gmn, "--colo", self.colo, "--taus", "0.5,1.5")
        self.assertEqual(r.returncode, 2, r.stderr)  # argparse's usage error
        self.assertIn("--taus: '1.5' is not a quantile in (0, 1)", r.stderr)
        r = self.run_script(self.gmn, "--colo", self.colo, "--bootstrap", "101")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--bootstrap 101: expected 0..100", r.stderr)
        for args, want in ((["--nearest", "0"], "--nearest 0: each K must be 1..200"),
                           (["--nearest", "5", "--nearest-features", "peak,size"], "--nearest-features: 'size' is not one of"),
                           (["--select"], "--select ranks nearest-networks margins: give --nearest K,..."),
                           (["--nearest", "5", "--select", "--nearest-features", "peak"],
                            "--select chooses the features itself: --nearest-features would be ignored")):
            r = self.run_script(self.gmn, "--colo", self.colo, *args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(want, r.stderr)
        if HAVE_NUMPY:
            self.assertOneLineError(self.run_script(self.gmn, "--colo", os.path.join(self.dir, "none")),
                                    "--colo %s: no such program" % os.path.join(self.dir, "none"))
            self.assertOneLineError(self.run_script(self.dir, "--colo", self.colo), f"no {self.dir}/index.jsonl")


if __name__ == "__main__":
    unittest.main()
