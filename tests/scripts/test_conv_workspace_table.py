"""scripts/conv-workspace-table.py: measured convolution allocations -> the table colo reads; several
measured files make one table (the first file's measurement of a key kept), one software stack only."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "conv-workspace-table.py")
HEAD = {"torch": "2.11.0+cu130", "gpu": "GPU A", "cudnn": 91900, "cuda": "13.0", "keys": 2}
K1 = "f:8x3x32x32:16x3x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"
K2 = "f:8x16x32x32:16x16x3x3:s1x1:p1x1:d1x1:g1:t0:float32:b1"


class ConvWorkspaceTable(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name

    def write(self, name, records):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        return path

    def run_script(self, *paths):
        out = os.path.join(self.dir, "t.tsv")
        r = subprocess.run([sys.executable, SCRIPT, *paths, "--out", out], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            return r, None
        with open(out) as f:
            return r, f.read().splitlines()

    def test_steps_outputs_transients_and_frees(self):
        a = self.write("a.jsonl", [HEAD, {"key": K1, "events": [["alloc", 1000, 0], ["alloc", 500, 1], ["free", 500, 1]]},
                                   {"key": K2, "error": "out of memory"}])
        r, lines = self.run_script(a)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[0], "colo-conv-workspace 1")
        self.assertEqual(json.loads(lines[1][2:])["gpu"], "GPU A")
        self.assertEqual(lines[2:], [K1 + "\to +500 -0"])
        self.assertIn("1 keys, 1 not measured", r.stderr)

    def test_several_files_make_one_table_and_the_first_measurement_is_kept(self):
        a = self.write("a.jsonl", [HEAD, {"key": K1, "events": [["alloc", 1000, 0]]}])
        b = self.write("b.jsonl", [dict(HEAD, gpu="GPU B"), {"key": K1, "events": [["alloc", 9, 0], ["alloc", 5, 1], ["free", 5, 1]]},
                                   {"key": K2, "events": [["alloc", 2000, 0], ["alloc", 7, 1], ["free", 7, 1]]}])
        r, lines = self.run_script(a, b)
        self.assertEqual(r.returncode, 0, r.stderr)
        head = json.loads(lines[1][2:])
        self.assertEqual((head["gpu"], head["gpus"], head["measured"]), ("GPU A", "GPU A + GPU B", "a.jsonl + b.jsonl"))
        self.assertEqual(lines[2:], [K1 + "\to", K2 + "\to +7 -0"])
        self.assertIn("2 keys, 0 not measured, 1 measured again (the first kept)", r.stderr)

    def test_other_software_and_bad_files_are_one_line_errors(self):
        a = self.write("a.jsonl", [HEAD, {"key": K1, "events": [["alloc", 1000, 0]]}])
        b = self.write("b.jsonl", [dict(HEAD, cudnn=90100), {"key": K2, "events": [["alloc", 1, 0]]}])
        cases = [((a, b), "b.jsonl: cudnn 90100 differs from"),
                 ((a, os.path.join(self.dir, "missing.jsonl")), "cannot read"),
                 ((self.write("h.jsonl", [{"key": K1}]),), "the first line is not gpu-conv-workspace.py's header"),
                 ((self.write("j.jsonl", [HEAD]) + "x",), "cannot read")]
        with open(os.path.join(self.dir, "bad.jsonl"), "w") as f:
            f.write(json.dumps(HEAD) + "\n{not json\n")
        cases.append(((os.path.join(self.dir, "bad.jsonl"),), "bad.jsonl:2: not a JSON line"))
        for paths, want in cases:
            r, _ = self.run_script(*paths)
            self.assertEqual(r.returncode, 1, (paths, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_records_it_would_misread_are_one_line_errors_and_no_table_is_written(self):
        out = os.path.join(self.dir, "t.tsv")
        cases = [({"key": K1, "events": [["malloc", 5, 0]]}, 'event ["malloc", 5, 0] is not'),  # was skipped
                 ({"key": K1, "events": [["alloc", "x", 0], ["free", "x", 0]]}, 'event ["alloc", "x", 0] is not'),
                 ({"key": K1, "events": [["alloc", -5, 0]]}, 'event ["alloc", -5, 0] is not'),
                 ({"key": K1, "events": [["alloc", 1 << 51, 0]]}, 'event ["alloc", 2251799813685248, 0] is not'),
                 ({"key": K1, "events": [["alloc", 5]]}, 'event ["alloc", 5] is not'),
                 ({"key": K1, "events": "alloc"}, "events is not a list"),
                 ({"key": K1, "events": [["free", 5, 3]]}, "free of a block never allocated in the call"),
                 ({"key": K1 + "\tx", "events": [["alloc", 5, 0]]}, "not a record"),  # a tab splits the table's line
                 ({"events": [["alloc", 5, 0]]}, "not a record"),
                 ([1, 2], "not a record")]
        for n, (record, want) in enumerate(cases):
            path = self.write(f"m{n}.jsonl", [HEAD, {"key": K2, "events": [["alloc", 1, 0]]}, record])
            r, _ = self.run_script(path)
            self.assertEqual(r.returncode, 1, (record, r.stderr))
            self.assertIn(f"m{n}.jsonl:3: {want}", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertFalse(os.path.exists(out), record)

    def test_an_output_path_it_cannot_write_is_a_one_line_error(self):
        a = self.write("a.jsonl", [HEAD, {"key": K1, "events": [["alloc", 1000, 0]]}])
        for out, want in ((os.path.join(self.dir, "no-such-dir", "t.tsv"), "no directory"),
                          (self.dir, "is a directory"),
                          (a, "is one of the measured files")):  # (it was overwritten)
            r = subprocess.run([sys.executable, SCRIPT, a, "--out", out], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, (out, r.stderr))
            self.assertIn(f"--out {out}", r.stderr)
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        with open(a) as f:
            self.assertEqual(json.loads(f.readline()), HEAD)


if __name__ == "__main__":
    unittest.main()
