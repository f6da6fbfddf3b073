"""examples/train_with_checkpoints.py follows colod's checkpoint protocol (daemon/checkpoint_request.h):
asked by the file or by the signal, it saves and exits 75; started again, it resumes where it saved.
Runs on Debian's PyTorch 1.13 (CPU). Every wait is on the script's own output, never a sleep."""
import os
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "train_with_checkpoints.py")


def run(args, env, **kw):
    return subprocess.Popen([sys.executable, SCRIPT] + args, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


class CheckpointExample(unittest.TestCase):
    def test_the_request_file_then_resume(self):
        with tempfile.TemporaryDirectory() as d:
            ckpt, req = os.path.join(d, "ckpt.pt"), os.path.join(d, "request")
            open(req, "w").write("stop_at=0\n")
            env = {"COLO_CHECKPOINT_FILE": req, "COLO_CHECKPOINT_EXIT": "75", "COLO_CHECKPOINT_SIGNAL": "USR1"}
            p = run(["--checkpoint", ckpt, "--steps", "50"], env)
            out, err = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 75, err)
            self.assertIn("checkpointed at step 1", out)
            os.remove(req)
            p = run(["--checkpoint", ckpt, "--steps", "50"], env)
            out, err = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("resumed at step 1", out)
            self.assertIn("done after 50 steps", out)

    def test_the_signal(self):
        with tempfile.TemporaryDirectory() as d:
            ckpt = os.path.join(d, "ckpt.pt")
            env = {"COLO_CHECKPOINT_FILE": os.path.join(d, "absent"), "COLO_CHECKPOINT_SIGNAL": "USR2"}
            p = run(["--checkpoint", ckpt, "--steps", "100000000"], env)
            self.assertEqual(p.stdout.readline().strip(), "training from step 0")
            p.send_signal(signal.SIGUSR2)
            out, err = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 75, err)
            self.assertIn("checkpointed at step", out)
            self.assertTrue(os.path.exists(ckpt))


if __name__ == "__main__":
    unittest.main()
