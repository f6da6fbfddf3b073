"""scripts/conv-shapes.py: the convolution keys a configuration and a carma row run, each with its
sources; bad arguments and input files are one-line errors before any probing."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "conv-shapes.py")
CARMA_HEADER = "workload,model,dataset,batch_size,gpus\n"


class ConvShapes(ScriptTest):
    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.dir, "shapes.jsonl")

    def run_script(self, *args, out=None):
        return subprocess.run([sys.executable, SCRIPT, "--out", out or self.out, *args],
                              capture_output=True, text=True, timeout=300)

    def assertOneLineError(self, r, want):
        super().assertOneLineError(r, want)
        self.assertFalse(os.path.exists(self.out))

    def test_keys_of_a_configuration_and_a_carma_row(self):
        configs = self.write("c.configs", "r18 --probe torchvision:resnet18 --input 3x32x32 --num-classes 10 --batch 2\n")
        carma = self.write("w.csv", CARMA_HEADER + "w1,resnet18,cifar10,2,1\nw2,BERT_base,wiki,2,1\n")
        r = self.run_script("--configs", configs, "--carma", carma)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.out) as f:
            lines = [json.loads(line) for line in f]
        self.assertTrue(lines)
        self.assertEqual(lines[0]["sources"], ["c.configs:r18", "carma:w1"])

    def test_an_output_path_it_cannot_write_is_an_error_before_probing(self):
        r = self.run_script(out=os.path.join(self.dir, "no-such-dir", "s.jsonl"))
        self.assertOneLineError(r, "--out")
        self.assertIn("no directory", r.stderr)
        r = self.run_script(out=self.dir)
        self.assertOneLineError(r, "is a directory")

    def test_bad_configurations_and_gpumemnet_files_are_one_line_errors(self):
        r = self.run_script("--configs", self.write("q.configs", "\n# c\nx --probe 'torchvision:resnet18\n"))
        self.assertOneLineError(r, "q.configs:3: No closing quotation")
        r = self.run_script("--gpumemnet-cnn", self.write("g.csv", "a,b\n1,2\n"))
        self.assertOneLineError(r, "g.csv: not a GPUMemNet data set")

    def test_bad_carma_rows_are_one_line_errors(self):
        r = self.run_script("--carma", self.write("short.csv", CARMA_HEADER + "w1,resnet18,cifar10\n"))
        self.assertOneLineError(r, "short.csv:2: not as many cells as the header has columns")
        r = self.run_script("--carma", self.write("gpus.csv", CARMA_HEADER + "w1,resnet18,cifar10,2,two\n"))
        self.assertOneLineError(r, "gpus.csv:2: gpus 'two' is not an integer")

    def test_a_limit_it_would_misread_is_refused(self):
        # rows[:-3] would have dropped the last three rows; without --gpumemnet-cnn it would be ignored.
        r = self.run_script("--gpumemnet-limit", "-3")
        self.assertOneLineError(r, "--gpumemnet-limit must be >= 1, with --gpumemnet-cnn")


if __name__ == "__main__":
    unittest.main()
