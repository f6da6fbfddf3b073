"""scripts/fresh-debian-check.sh (a README command on a fresh debootstrapped Debian 12): its
arguments are checked before anything is installed, made or mounted. (The run itself needs root,
the network and ~20 minutes: it is a campaign of its own, not part of the tests.)"""
import os
import subprocess
import unittest

from script_test import ScriptTest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class FreshDebianCheck(ScriptTest):
    def test_a_command_other_than_1_or_2_is_refused_before_anything_is_made(self):
        target = os.path.join(self.dir, "chroot")
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "fresh-debian-check.sh"), "3", target],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr, "fresh-debian-check: the README command is 1 or 2, not '3'\n")
        self.assertFalse(os.path.exists(target))


if __name__ == "__main__":
    unittest.main()
