"""scripts/trace-shortfall.py (docs/ESTIMATION.md, "Failure modes"): per architecture, how far the
margin-free replay falls short of the measured rows, over each network's largest convolution
input. A stand-in colo answers `colo estimate eval --rows --json`; the traces are written here."""
import os
import subprocess
import sys
import unittest

from script_test import ScriptTest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "trace-shortfall.py")
MIB = 2**20


class TraceShortfall(ScriptTest):
    def setUp(self):
        super().setUp()
        self.traces = os.path.join(self.dir, "traces")
        os.mkdir(self.traces)
        # Two resnet rows (shortfall 100 and 300 MiB over a 100 MiB and a 50 MiB largest input), one
        # vgg row, one row whose probe failed (left out) and one that ran out of memory (left out).
        index = []
        for i, (name, conv_inputs) in enumerate((("arch:resnet_a", [10, 100]), ("arch:resnet_b", [50]),
                                                  ("arch:vgg_c", [200]), ("arch:vgg_bad", [1]))):
            trace = f"t{i}.trace"
            with open(os.path.join(self.traces, trace), "w") as f:
                f.write("".join(f"C fwd conv2d {m * MIB} {m * MIB} 0\n" for m in conv_inputs) + "M alloc 1\n")
            index.append(f'{{"filename": "{name}", "status": "{"failed" if name.endswith("bad") else "ok"}", '
                         f'"trace": "{trace}"}}\n')
        self.write(os.path.join("traces", "index.jsonl"), "".join(index))
        self.colo = self.stand_in("""
            assert sys.argv[1:3] == ["estimate", "eval"] and "--rows" in sys.argv, sys.argv
            assert sys.argv[sys.argv.index("--split") + 1] == "test", sys.argv
            rows = [{"id": "arch:resnet_a", "measured_mib": 1100, "estimate_mib": 1000},
                    {"id": "arch:resnet_b", "measured_mib": 1300, "estimate_mib": 1000},
                    {"id": "arch:vgg_c", "measured_mib": 1000, "estimate_mib": 1100},
                    {"id": "arch:vgg_bad", "measured_mib": 5000, "estimate_mib": 1000},
                    {"id": "arch:vgg_c", "measured_mib": 9000, "estimate_mib": 1000, "oom": True}]
            print(json.dumps({"rows": rows}))
        """)

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)

    def test_the_shortfall_is_per_architecture_over_the_largest_convolution_input(self):
        r = self.run_script(self.traces, "test", "--colo", self.colo)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GPUMemNet CNN, test split", r.stdout)
        # resnet: 100/100 = 1.00 and 300/50 = 6.00; vgg: -100/200 = -0.50 (the failed and OOM rows left out).
        self.assertIn(f"{'resnet':<12} {2:>5} {1.0:>7.2f} {6.0:>7.2f} {6.0:>7.2f} {6.0:>7.2f}", r.stdout)
        self.assertIn(f"{'vgg':<12} {1:>5} {-0.5:>7.2f} {-0.5:>7.2f} {-0.5:>7.2f} {-0.5:>7.2f}", r.stdout)

    def test_bad_inputs_are_one_line_errors(self):
        self.assertOneLineError(self.run_script(self.traces, "--colo", os.path.join(self.dir, "none")),
                                "--colo %s: no such program" % os.path.join(self.dir, "none"))
        r = self.run_script(self.traces, "sometimes", "--colo", self.colo)
        self.assertEqual(r.returncode, 2, r.stderr)  # argparse's usage error
        self.assertIn("invalid choice: 'sometimes'", r.stderr)
        self.assertOneLineError(self.run_script(self.dir, "test", "--colo", self.colo), f"no {self.dir}/index.jsonl")
        with open(os.path.join(self.traces, "t1.trace"), "a") as f:
            f.write("C fwd conv2d\n")
        self.assertOneLineError(self.run_script(self.traces, "test", "--colo", self.colo),
                                "t1.trace:3: a convolution record without its input bytes")
        with open(os.path.join(self.traces, "index.jsonl"), "a") as f:
            f.write('{"filename": "arch:x", "status": "ok"}\n')
        self.assertOneLineError(self.run_script(self.traces, "test", "--colo", self.colo),
                                "index.jsonl:5: a recorded (\"ok\") probe without its \"trace\" file")
        # The index is read before colo runs: with a colo that fails, the index is still what is reported.
        broken = self.stand_in("sys.exit('the replay ran')", name="broken-colo")
        self.assertOneLineError(self.run_script(self.traces, "test", "--colo", broken),
                                "index.jsonl:5: a recorded")
        self.write(os.path.join("traces", "index.jsonl"), "[1]\n")
        self.assertOneLineError(self.run_script(self.traces, "test", "--colo", self.colo),
                                "index.jsonl:1: expected an object with a \"filename\"")


if __name__ == "__main__":
    unittest.main()
