"""scripts/fit-power.py: the fit through this build's colo, and one-line errors for a --colo that is not
colo and for a model file or energies it cannot fit (never a division by zero)."""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_test import ScriptTest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPTS = os.path.join(ROOT, "scripts")
COLO = os.environ.get("COLO_BIN", os.path.join(ROOT, "build", "colo"))


class FitPower(ScriptTest):
    def run_script(self, *args, script=os.path.join(SCRIPTS, "fit-power.py")):
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=300)

    def constant_colo(self):
        """A colo whose exclusive energy does not depend on the model file."""
        return self.stand_in("print(json.dumps({'energy_mj': 30.0}))")

    def test_the_model_file_holds_the_fitted_value(self):
        if not os.access(COLO, os.X_OK):
            self.skipTest(f"no colo binary at {COLO} (ctest sets COLO_BIN)")
        r = self.run_script("--colo", COLO, "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fitted max_watts = ", r.stdout)

    def test_a_colo_that_is_not_a_program_is_a_one_line_error(self):
        r = self.run_script("--colo", self.dir)
        self.assertOneLineError(r, f"--colo {self.dir}: not an executable program")

    def test_energies_that_do_not_grow_with_max_watts_are_not_fitted(self):
        r = self.run_script("--colo", self.constant_colo())
        self.assertOneLineError(r, "the exclusive energy does not grow with max_watts")

    def test_a_model_file_without_max_watts_is_named(self):
        tree = os.path.join(self.dir, "tree")
        os.makedirs(os.path.join(tree, "scripts"))
        os.makedirs(os.path.join(tree, "models", "sim"))
        for name in ("fit-power.py", "script_errors.py"):
            shutil.copy(os.path.join(SCRIPTS, name), os.path.join(tree, "scripts"))
        with open(os.path.join(tree, "models", "sim", "a100-thesis.toml"), "w") as f:
            f.write("[power]\nmax_watts = 300\n")
        r = self.run_script("--colo", self.constant_colo(), script=os.path.join(tree, "scripts", "fit-power.py"))
        self.assertOneLineError(r, "a100-thesis.toml: no 'max_watts = { value = N, ... }' line")


if __name__ == "__main__":
    unittest.main()
