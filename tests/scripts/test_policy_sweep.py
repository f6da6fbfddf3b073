"""scripts/policy-sweep.py (docs/SIMULATOR.md, "Against the published numbers"): a small grid through
this build's colo sim; the best setting per trace and for all traces are the runs' own minima."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "policy-sweep.py")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, "--colo", COLO, *args], capture_output=True, text=True, timeout=600)


class PolicySweep(unittest.TestCase):
    def test_the_best_settings_are_the_runs_minima(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "runs.json")
            r = run("--policies", "magm,lug", "--caps", "80,100", "--backfill", "0,10", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                runs = json.load(f)
        self.assertEqual(len(runs), 2 * 2 * 2 * 2)
        for trace in ("philly_mix_90_tasks.csv", "philly_heavy_60_tasks.csv"):
            mine = [x for x in runs if x["trace"] == trace]
            best = min(mine, key=lambda x: (x["oom_crashes"] > 0 or x["completed"] < x["jobs"], x["makespan_s"]))
            self.assertIn(f"{trace}: best {best['policy']} cap {best['smact_cap']} % backfill {best['backfill']}: "
                          f"{best['makespan_s']:.0f} s", r.stdout)
            self.assertTrue(all(x["completed"] == x["jobs"] for x in mine))
        worst = {}
        for x in runs:
            key = (x["policy"], x["smact_cap"], x["backfill"])
            worst[key] = max(worst.get(key, -1), x["above_bound"])
        joint = min(worst, key=lambda k: (worst[k], k))
        self.assertIn(f"one setting for all: {joint[0]} cap {joint[1]} % backfill {joint[2]}:", r.stdout)

    def test_progress_sweeps_the_adds_progress_rule(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "runs.json")
            r = run("--policies", "magm", "--caps", "90", "--backfill", "100", "--progress", "off,on", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                runs = json.load(f)
        self.assertEqual(sorted(x["adds_progress"] for x in runs), [False, False, True, True])
        for trace in ("philly_mix_90_tasks.csv", "philly_heavy_60_tasks.csv"):
            off, on = (min((x for x in runs if x["trace"] == trace and x["adds_progress"] == p),
                           key=lambda x: x["makespan_s"]) for p in (False, True))
            self.assertNotEqual(off["makespan_s"], on["makespan_s"])  # the flag reached colo sim
            best = min(off, on, key=lambda x: x["makespan_s"])
            arm = "adds-progress" if best["adds_progress"] else "no adds-progress"
            self.assertIn(f"{trace}: best magm cap 90 % backfill 100 {arm}: {best['makespan_s']:.0f} s", r.stdout)
        r = run("--progress", "sometimes")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.strip(), "policy-sweep: --progress 'sometimes': expected off, on or off,on")

    def test_bad_arguments_are_one_line_errors(self):
        for args, want in ((["--caps", "8x"], "--caps '8x': expected comma-separated integers"),
                           (["--policies", "magm,,lug"], "--policies 'magm,,lug': expected comma-separated names"),
                           (["--estimator", "oracle"], "knows each job's true memory"),
                           (["--policies", "nope", "--caps", "80", "--backfill", "0"], "--policy must be")):
            r = run(*args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_values_given_twice_are_refused(self):
        # Each would have counted twice in its setting's runs (a trace listed twice in "one setting for all").
        trace = os.path.join(ROOT, "data", "carma", "traces", "philly_mix_90_tasks.csv")
        with tempfile.TemporaryDirectory() as d:
            other = os.path.join(d, "philly_mix_90_tasks.csv")
            for args, want in ((["--caps", "80,80"], "--caps '80,80': 80 is given twice"),
                               (["--policies", "magm,lug,magm"], "--policies 'magm,lug,magm': magm is given twice"),
                               (["--floors", "unknown,unknown"], "unknown is given twice"),
                               (["--trace", trace, other], "--trace: more than one trace named philly_mix_90_tasks.csv")):
                r = run(*args)
                self.assertEqual(r.returncode, 1, (args, r.stderr))
                self.assertIn(want, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_bad_colo_or_json_path_is_a_one_line_error_before_the_runs(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "colo")
            with open(fake, "w") as f:
                f.write(f"#!{sys.executable}\nprint('not json')\n")
            os.chmod(fake, 0o700)
            small = ["--policies", "magm", "--caps", "80", "--backfill", "0"]
            for args, want in ((["--colo", d], f"--colo {d}: not an executable program"),
                               (["--colo", fake], "printed no JSON (is it colo?): not json"),
                               (["--json", os.path.join(d, "no-such-dir", "runs.json")], "no directory"),
                               (["--json", d], f"--json {d}: is a directory"),
                               (["--json", ""], "--json: an empty path")):  # (no file was written, silently)
                r = subprocess.run([sys.executable, SCRIPT, "--colo", COLO, *small, *args], capture_output=True,
                                   text=True, timeout=600)
                self.assertEqual(r.returncode, 1, (args, r.stderr))
                self.assertIn(want, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
