"""scripts/conv-workspace-lono.py (docs/GPU-VALIDATION.md §9) without a GPU: leave one network out on
two of the configurations measured there, probed here and estimated by this build's colo."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "conv-workspace-lono.py")
DOCS = os.path.join(ROOT, "docs", "gpu-validation")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))


class LeaveOneNetworkOut(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name
        self.configs = os.path.join(self.dir, "two.configs")
        with open(self.configs, "w") as f:
            f.write("r18-c10-sgdm --probe torchvision:resnet18 --input 3x32x32 --num-classes 10 --batch 256 "
                    "--optimizer sgd-momentum\n"
                    "dn121-c100 --probe torchvision:densenet121 --input 3x32x32 --num-classes 100 --batch 128 "
                    "--optimizer adamw\n")

    def run_script(self, *extra):
        return subprocess.run([sys.executable, SCRIPT, "--configs", self.configs,
                               "--measured", os.path.join(DOCS, "measured-othernets-h200.jsonl"),
                               "--shapes", os.path.join(DOCS, "conv-shapes.jsonl"),
                               os.path.join(DOCS, "conv-shapes-othernets.jsonl"),
                               "--gpu", "h100-80gb", "--colo", COLO, *extra],
                              capture_output=True, text=True, timeout=600)

    def test_a_network_no_shape_file_names_keeps_every_key(self):
        out = os.path.join(self.dir, "lono.json")
        r = self.run_script("--max-k", "1", "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The source label is the configuration file's name, so these two match no shape file: no
        # key is theirs alone, and the table keeps every key (their shapes stay measured).
        self.assertIn("torchvision:resnet18: 1 configuration(s), table keeps", r.stdout)
        with open(out) as f:
            res = json.load(f)
        self.assertEqual(sorted(res["per_configuration"]), ["dn121-c100", "r18-c10-sgdm"])
        self.assertEqual(res["results"]["1"]["rows"], 2)
        # With every shape measured these two replay exactly as GPU-VALIDATION §9 reports (0.0 / +0.4 %).
        self.assertAlmostEqual(res["per_configuration"]["r18-c10-sgdm"]["1"], 0.0, delta=0.5)
        self.assertAlmostEqual(res["per_configuration"]["dn121-c100"]["1"], 0.4, delta=0.5)

    def test_their_own_keys_removed_when_the_sources_name_them(self):
        # Named as in conv-shapes-othernets.jsonl, the networks lose the keys only they ran.
        named = os.path.join(self.dir, "gpu-validate-othernets.configs")
        os.rename(self.configs, named)
        self.configs = named
        out = os.path.join(self.dir, "lono.json")
        r = self.run_script("--max-k", "1", "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = [int(line.split("table keeps ")[1].split(" of ")[0]) for line in r.stdout.splitlines() if "keeps" in line]
        total = [int(line.split(" of ")[1].split(" keys")[0]) for line in r.stdout.splitlines() if "keeps" in line]
        self.assertTrue(all(k < t for k, t in zip(kept, total)), r.stdout)

    def test_bad_arguments_are_one_line_errors(self):
        r = self.run_script("--max-k", "0")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--max-k must be in [1, 16]", r.stderr)
        with open(self.configs, "w") as f:
            f.write("nothing --probe torchvision:resnet18 --batch 2\n")
        r = self.run_script()
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "conv-workspace-lono: no configuration has a measurement")

    def test_bad_inputs_are_one_line_errors_naming_where(self):
        def write(name, text):
            path = os.path.join(self.dir, name)
            with open(path, "w") as f:
                f.write(text)
            return path
        measured = os.path.join(DOCS, "measured-othernets-h200.jsonl")
        shapes = os.path.join(DOCS, "conv-shapes.jsonl")
        flags = write("flags.configs", "r18 --probe torchvision:resnet18 --batch two\n")
        cases = [
            # argparse's usage on several lines, without the file, before
            ((flags, measured, shapes), [], f"{flags}:1: r18: argument --batch: invalid int value: 'two'"),
            ((self.configs, write("m.jsonl", '{"name": "r18-c10-sgdm", "max_reserved_mib": 0}\n'), shapes), [],
             "m.jsonl:1: max_reserved_mib 0 is not a number > 0"),  # a division by zero, after the probes
            ((self.configs, write("bad.jsonl", '{"name": "x"}\n{not json\n'), shapes), [], "bad.jsonl:2: not a JSON line"),
            ((self.configs, measured, write("s.jsonl", '{"key": "k", "sources": "carma:x"}\n')), [],
             "s.jsonl:1: not a line of scripts/conv-shapes.py"),  # the string's characters were the sources
            ((self.configs, measured, shapes), ["--colo", self.dir], f"--colo {self.dir}: not an executable program"),
            ((self.configs, measured, shapes), ["--json", self.dir], f"--json {self.dir}: is a directory"),
        ]
        for (configs, meas, shp), extra, want in cases:
            r = subprocess.run([sys.executable, SCRIPT, "--configs", configs, "--measured", meas, "--shapes", shp,
                                "--colo", COLO, *extra], capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 1, (want, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
