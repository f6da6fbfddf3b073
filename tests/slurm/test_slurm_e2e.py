"""colo on a real Slurm 22.05 (slurm_cluster.py): colo sbatch sizes GPU shards from the estimate
and the history, two jobs share one GPU, job_submit.lua sizes and refuses requests, a job that
runs out of memory (the fake training job under its MPS memory limit) is held, escalated by
`colo slurm recover`, released and completes, and killing the agent between its plan and Slurm's
change loses nothing. Every wait polls Slurm's or the agent's recorded state under a deadline
that only bounds a failure.

Needs root (daemons, mknod, jobs run as `nobody`); skipped otherwise."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
from colod_fixture import build_dir, wait_for  # noqa: E402
from slurm_cluster import SlurmCluster  # noqa: E402


@unittest.skipUnless(os.geteuid() == 0, "the Slurm cluster needs root")
class SlurmEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        b = build_dir()
        cls.colo = os.path.join(b, "colo")
        cls.fake_job = os.path.join(b, "colo-fake-job")
        cls.root = tempfile.mkdtemp(prefix="colo-slurm-")
        cls.cluster = SlurmCluster(cls.root, cls.colo)
        cls.agent = None
        try:
            cls.cluster.start()
            cls.start_agent()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.stop_agent(signal.SIGTERM)
        cls.cluster.stop()
        if os.environ.get("COLO_KEEP_SLURM_DIR"):
            print("kept", cls.root)
        else:
            shutil.rmtree(cls.root, ignore_errors=True)

    @classmethod
    def start_agent(cls, env_extra=None):
        env = dict(cls.cluster.env, **(env_extra or {}))
        cls.agent_log = open(os.path.join(cls.root, "log", "agent.log"), "ab")
        cls.agent = subprocess.Popen([cls.colo, "slurm", "recover", "--interval", "0.5"], env=env,
                                     stdout=cls.agent_log, stderr=subprocess.STDOUT)

    @classmethod
    def stop_agent(cls, sig):
        if cls.agent and cls.agent.poll() is None:
            cls.agent.send_signal(sig)
            cls.agent.wait(timeout=30)
        cls.agent = None
        if getattr(cls, "agent_log", None):
            cls.agent_log.close()
            cls.agent_log = None

    def fail_with_logs(self, msg):
        with open(os.path.join(self.root, "log", "agent.log"), errors="replace") as f:
            agent = f.read()[-3000:]
        self.fail(f"{msg}\n--- agent\n{agent}\n{self.cluster.log_tail()}")

    def sbatch(self, colo_flags, script, extra=(), check=True, out=None):
        out = out or f"{script}.out"
        r = self.cluster.run([self.colo, "sbatch", *colo_flags, "--parsable", "-o", out, *extra, script],
                             check=False, as_user=True)
        if check and r.returncode != 0:
            self.fail_with_logs(f"colo sbatch failed ({r.returncode}): {r.stderr}")
        return r

    def job_script(self, name, body):
        return self.cluster.script(name, body)

    def wrapped(self, mem, until=None):
        """The script line of a training job: the fake job needing `mem`, under colo run."""
        until_arg = f" --until-file {until}" if until else ""
        return f"{self.colo} run -- {self.fake_job} --mem {mem}{until_arg}\n"

    def job_id(self, r):
        return int(r.stdout.strip().split(";")[0])

    def test_conf_describes_the_node(self):
        with open(os.path.join(self.cluster.conf_dir, "gres.conf")) as f:
            gres = f.read()
        self.assertIn("AutoDetect=off", gres)
        self.assertEqual(gres.count("Name=shard Count=40"), 4)
        out = self.cluster.run(["scontrol", "show", "node", "colo0"]).stdout
        self.assertIn("shard:160", out)

    def test_sbatch_sizes_shards_and_two_jobs_share_a_gpu(self):
        release = os.path.join(self.root, "jobs", "share.release")
        s = self.job_script("share.sh", 'echo "GPUS=$SLURM_JOB_GPUS SHARDS=$SLURM_SHARDS_ON_NODE '
                                        'LIMIT=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"\n' + self.wrapped("8GiB", release))
        # Each job its own output file: Slurm truncates an output file when a job starts, so a
        # shared one lost the first job's line whenever the second started after it was written.
        outs = [f"{s}.{name}.out" for name in ("first", "second")]
        a = self.job_id(self.sbatch(["--gpu-mem", "8GiB", "--no-history"], s, out=outs[0]))
        b = self.job_id(self.sbatch(["--gpu-mem", "8GiB", "--no-history"], s, extra=["-J", "second"], out=outs[1]))
        ja, jb = self.cluster.wait_state(a, "RUNNING"), self.cluster.wait_state(b, "RUNNING")
        # 8 GiB + 10 % margin = 9 shards of 1 GiB; colo's record in the comment.
        self.assertEqual(ja["tres_per_node"], "gres:shard:9")
        self.assertTrue(ja["comment"].startswith("colo:mem_mib=8192,est=user,fp=u"), ja["comment"])
        # Both wrote their line before the fake job took its memory: both are on one GPU now.
        def lines():
            got = []
            for out in outs:
                if os.path.exists(out):
                    with open(out) as f:
                        got += [ln for ln in f.read().splitlines() if ln.startswith("GPUS=")]
            return got if len(got) == 2 else None
        got = wait_for("both jobs' GPU lines", lines, timeout=60)
        gpus = {re.search(r"GPUS=(\S*)", ln).group(1) for ln in got}
        self.assertEqual(len(gpus), 1, got)
        # The MPS task prolog pinned each job's memory to its share.
        for ln in got:
            self.assertIn("SHARDS=9", ln)
            self.assertIn("LIMIT=0=9216M", ln)
        open(release, "w").close()
        self.cluster.wait_state(a, "COMPLETED")
        self.cluster.wait_state(b, "COMPLETED")

    def test_oom_is_held_escalated_released_and_completes_then_history_sizes_the_rerun(self):
        # Estimate 4 GiB (5 shards, MPS limit 5 GiB); the job needs 12 GiB: OOM at 5, at 10, fits 15.
        s = self.job_script("oom.sh", 'echo "attempt $SLURM_RESTART_COUNT $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"\n' +
                            self.wrapped("12GiB"))
        j = self.job_id(self.sbatch(["--gpu-mem", "4GiB"], s))
        done = self.cluster.wait_state(j, ("COMPLETED", "FAILED"), timeout=240)
        if done["job_state"] != "COMPLETED":
            self.fail_with_logs(f"job {j} ended {done['job_state']}")
        self.assertEqual(done["tres_per_node"], "gres:shard:15")
        self.assertEqual(done["restart_cnt"], 2)
        with open(os.path.join(self.cluster.state_dir, "reports", f"{j}.0.json")) as f:
            first = json.load(f)
        self.assertEqual(first["outcome"], "oom")
        self.assertEqual(first["exit_code"], 75)
        self.assertIn("CUDA out of memory", first["oom_line"])
        # The agent records the completed run's peak; the same submission is then sized by it.
        def recorded():
            with open(os.path.join(self.cluster.state_dir, "agent.json")) as f:
                return json.load(f)["jobs"].get(str(j), {}).get("phase") == "recorded"
        wait_for("the peak recorded", recorded, timeout=60)
        with open(os.path.join(self.cluster.state_dir, "history.json")) as f:
            peaks = json.load(f)["peaks"]
        self.assertIn(12288, [p["peak_mib"] for p in peaks.values()])
        r = self.sbatch(["--gpu-mem", "4GiB"], s, extra=["--hold"])
        self.assertIn("12288 MiB (history", r.stderr)
        again = self.job_id(r)
        self.assertEqual(self.cluster.job(again)["tres_per_node"], "gres:shard:14")  # 12288 × 1.1 / 1024
        self.cluster.run(["scancel", str(again)])

    def test_killing_the_agent_between_plan_and_release_loses_nothing(self):
        type(self).stop_agent(signal.SIGTERM)
        pause = os.path.join(self.root, "agent.paused")
        type(self).start_agent({"COLO_SLURM_AGENT_PAUSE_AFTER_PLAN": pause})
        try:
            s = self.job_script("kill.sh", self.wrapped("8GiB"))
            j = self.job_id(self.sbatch(["--gpu-mem", "4GiB", "--no-history"], s))
            wait_for("the agent to plan and pause", lambda: os.path.exists(pause), timeout=120)
            type(self).stop_agent(signal.SIGKILL)
            held = self.cluster.job(j)
            self.assertEqual(held["job_state"], "SPECIAL_EXIT")
            self.assertEqual(held["tres_per_node"], "gres:shard:5")  # the plan was not applied yet
            with open(os.path.join(self.cluster.state_dir, "agent.json")) as f:
                planned = json.load(f)["jobs"][str(j)]
            self.assertEqual(planned["phase"], "planned")
            self.assertEqual(planned["tres"], "gres:shard:10")
        finally:
            type(self).stop_agent(signal.SIGKILL)
            type(self).start_agent()
        done = self.cluster.wait_state(j, ("COMPLETED", "FAILED"), timeout=120)
        self.assertEqual(done["job_state"], "COMPLETED")
        self.assertEqual(done["tres_per_node"], "gres:shard:10")
        self.assertEqual(done["restart_cnt"], 1)  # one OOM, one retry: the plan was applied once

    def node_weight(self):
        self.cluster.run([self.colo, "slurm", "node-weight", "--once", "--node", "colo0"])
        out = self.cluster.run(["scontrol", "show", "node", "colo0"]).stdout
        return int(re.search(r"Weight=(\d+)", out).group(1))

    def test_node_weight_follows_the_gpus(self):
        self.assertEqual(self.node_weight(), 1)  # an empty GPU under the SMACT cap
        until = os.path.join(self.root, "jobs", "weight.release")
        env = dict(self.cluster.env, COLO_FAKE_NVML_GPUS=self.cluster.gpus, COLO_FAKE_NVML_DIR=self.cluster.fake_dir)
        jobs = []
        try:
            # Every GPU 30 of 40 GiB full and 90 % busy: no SM headroom under the 80 % cap.
            for i in range(4):
                p = subprocess.Popen([self.fake_job, "--mem", "30GiB", "--sm-activity", "0.9", "--until-file", until],
                                     env=dict(env, CUDA_VISIBLE_DEVICES=str(i)), stdout=subprocess.PIPE, text=True)
                jobs.append(p)
                self.assertIn("holds 30720 MiB", p.stdout.readline())  # allocated: the fake GPU shows it
            self.assertEqual(self.node_weight(), 1001 + 750)  # busy + 1000 × (1 − 10/40)
        finally:
            open(until, "w").close()
            for p in jobs:
                p.wait(timeout=60)
                p.stdout.close()
        self.assertEqual(self.node_weight(), 1)

    def test_job_submit_sizes_a_sizeless_request_from_the_comment_or_the_default(self):
        s = self.job_script("plain.sh", "true\n")
        r = self.cluster.run(["sbatch", "--parsable", "--hold", "--gres=shard", "--comment=colo:mem_mib=8192",
                              "-o", "/dev/null", s], as_user=True)
        j = self.job_id(r)
        self.assertEqual(self.cluster.job(j)["tres_per_node"], "gres:shard:9")
        self.assertIn("9 shards", r.stderr)
        r = self.cluster.run(["sbatch", "--parsable", "--hold", "--gres=shard", "-o", "/dev/null", s], as_user=True)
        k = self.job_id(r)
        self.assertEqual(self.cluster.job(k)["tres_per_node"], "gres:shard:10")  # a quarter of a 40-shard GPU
        self.cluster.run(["scancel", str(j), str(k)])

    def test_a_request_too_large_for_one_gpu_gets_a_clear_error(self):
        s = self.job_script("big.sh", "true\n")
        r = self.cluster.run(["sbatch", "--gres=shard:50", "-o", "/dev/null", s], check=False, as_user=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("colo: 50 shards (51200 MiB) is more than one GPU has (40 shards, 40960 MiB)", r.stderr)
        # A count that cannot be one is refused, not replaced by the default or overflowed.
        for gres, why in (("shard:0", "--gres=shard:0 asks for no GPU memory"),
                          ("shard:9223372036854775807", "--gres=shard:9223372036854775807 is not a shard count")):
            r = self.cluster.run(["sbatch", "--gres=" + gres, "-o", "/dev/null", s], check=False, as_user=True)
            self.assertNotEqual(r.returncode, 0, gres)
            self.assertIn(why, r.stderr)
        # A count with sbatch's unit suffix (1k = 1024) is never read as "no count: the default".
        r = self.cluster.run(["sbatch", "--gres=shard:1k", "-o", "/dev/null", s], check=False, as_user=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("colo: ", r.stderr)
        r = self.sbatch(["--gpu-mem", "60GiB", "--no-history"], s, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("more than one GPU's 40", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
