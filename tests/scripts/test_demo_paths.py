"""scripts/demo-run.sh and scripts/daemon-demo.sh (the README's first command after its build)
share scripts/demo-paths.sh: a BUILD_DIR without colo, colod and colo-fake-job is refused on one
line naming the missing binary, from whichever directory the caller runs them (a relative
BUILD_DIR is the caller's), before anything starts."""
import os
import subprocess
import unittest

from script_test import ScriptTest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class DemoPaths(ScriptTest):
    def run_demo(self, script, build):
        return subprocess.run(["bash", os.path.join(ROOT, "scripts", script), build], cwd=self.dir,
                              capture_output=True, text=True, timeout=60)

    def test_a_build_without_the_binaries_is_refused_on_one_line(self):
        os.makedirs(os.path.join(self.dir, "b", "colo"))  # a directory is no binary, though -x holds
        for script, name in (("demo-run.sh", "demo"), ("daemon-demo.sh", "daemon-demo")):
            r = self.run_demo(script, "b")  # relative: the caller's directory, not the repository
            self.assertOneLineError(r, f"{name}: {os.path.realpath(self.dir)}/b/colo: not built (scripts/demo.sh builds it)")

    def test_the_first_missing_binary_is_named(self):
        b = os.path.join(self.dir, "b")
        os.mkdir(b)
        for bin in ("colo", "colod"):
            path = self.write(os.path.join("b", bin), "#!/bin/sh\nexit 0\n")
            os.chmod(path, 0o700)
        r = self.run_demo("demo-run.sh", b)
        self.assertOneLineError(r, f"demo: {os.path.realpath(b)}/colo-fake-job: not built")
        self.assertEqual(r.stdout, "")  # nothing ran


if __name__ == "__main__":
    unittest.main()
