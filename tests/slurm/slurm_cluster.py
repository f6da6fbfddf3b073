"""A real Slurm 22.05 cluster on localhost for the tests: munged, slurmctld and slurmd from
Debian's packages (installed with apt when missing), started in the foreground without systemd
and stopped by PID. Its configuration comes from `colo slurm conf` on fake GPUs whose device
files are character devices made with mknod under the cluster's own directory; job_submit.lua
and RequeueExitHold are colo's. Nothing outside the directory is touched; the ports are free
ones picked at start."""
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
from colod_fixture import wait_for  # noqa: E402

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
PROGRAMS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol")


def ensure_installed():
    missing = [p for p in PROGRAMS if not shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
    if not missing:
        return
    if os.geteuid() != 0:
        raise RuntimeError(f"{', '.join(missing)} missing and not root: apt-get install {' '.join(PACKAGES)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, root, colo, gpus="4x40GiB", mps=True, oversize="reject", user="nobody"):
        self.root, self.colo, self.gpus, self.mps, self.oversize, self.user = root, colo, gpus, mps, oversize, user
        self.conf_dir = os.path.join(root, "etc")
        self.site = os.path.join(self.conf_dir, "colo-slurm.toml")
        self.state_dir = os.path.join(root, "colo-state")
        self.fake_dir = os.path.join(root, "fake-gpus")
        self.munge_socket = os.path.join(root, "munge", "munge.socket")
        self.procs = {}
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.conf_dir, "slurm.conf"), COLO_SLURM_SITE=self.site)
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self):
        ensure_installed()
        for d in ("etc", "dev", "log", "spool", "state", "munge", "jobs"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        os.chmod(self.root, 0o755)
        os.chmod(os.path.join(self.root, "jobs"), 0o1777)  # job scripts and outputs of the test user
        n = int(self.gpus.split("x")[0])
        for i in range(n):
            dev = os.path.join(self.root, "dev", f"nvidia{i}")
            if not os.path.exists(dev):
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, as gres File= needs
        args = [self.colo, "slurm", "conf", "--out", self.conf_dir, "--node", "colo0", "--fake-gpus", self.gpus,
                "--fake-gpu-dir", self.fake_dir, "--dev-prefix", os.path.join(self.root, "dev", "nvidia"),
                "--state-dir", self.state_dir, "--site-path", self.site, "--oversize", self.oversize]
        if self.mps:
            args.append("--mps")
        subprocess.run(args, check=True, env=self.env, stdout=subprocess.DEVNULL)
        self.write_slurm_conf()
        key = os.path.join(self.root, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._spawn("munged", ["munged", "-F", f"--key-file={key}", f"--socket={self.munge_socket}",
                               f"--pid-file={self.root}/munge/munged.pid", f"--log-file={self.root}/log/munged.log",
                               f"--seed-file={self.root}/munge/seed", "--force"])
        wait_for("munged's socket", lambda: os.path.exists(self.munge_socket), timeout=30)
        conf = self.env["SLURM_CONF"]
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", conf])
        wait_for("slurmctld to answer", lambda: self.run(["scontrol", "ping"], check=False).returncode == 0, timeout=60)
        self._spawn("slurmd", ["slurmd", "-D", "-N", "colo0", "-f", conf])
        wait_for("node colo0 idle", lambda: "idle" in self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False).stdout,
                 timeout=60)

    def write_slurm_conf(self):
        r = self.root
        with open(os.path.join(self.conf_dir, "slurm.conf.colo")) as f:
            colo_lines = [ln for ln in f if ln.strip() and not ln.startswith("#")]
        host = socket.gethostname().split(".")[0]
        base = f"""ClusterName=colotest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
MinJobAge=600
"""
        with open(os.path.join(self.conf_dir, "slurm.conf"), "w") as f:
            f.write(base)
            f.writelines(colo_lines)
            f.write("NodeName=colo0 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=16 RealMemory=4000 "
                    f"Gres=gpu:{self.gpus.split('x')[0]},shard:{self.total_shards()} State=UNKNOWN\n")
            f.write("PartitionName=main Nodes=colo0 Default=YES MaxTime=INFINITE State=UP\n")

    def total_shards(self):
        with open(os.path.join(self.conf_dir, "gres.conf")) as f:
            return sum(int(ln.split("Count=")[1].split()[0]) for ln in f if "Name=shard" in ln)

    def stop(self):
        """Stops every daemon it started, by PID (SIGTERM, then SIGKILL)."""
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def _spawn(self, name, argv):
        with open(os.path.join(self.root, "log", f"{name}.out"), "wb") as log:  # the child keeps its copy
            self.procs[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    # -- helpers -----------------------------------------------------------------------------
    def run(self, argv, check=True, as_user=False, input=None):
        if as_user and self.user and os.geteuid() == 0:
            argv = ["runuser", "-u", self.user, "--", *argv]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, check=check, input=input,
                              cwd=os.path.join(self.root, "jobs"))

    def jobs(self):
        out = self.run(["squeue", "--json"]).stdout
        return {j["job_id"]: j for j in json.loads(out)["jobs"]}

    def job(self, job_id):
        return self.jobs().get(job_id)

    def wait_state(self, job_id, states, timeout=120):
        states = (states,) if isinstance(states, str) else states
        return wait_for(f"job {job_id} in {states}", lambda: (self.job(job_id) or {}).get("job_state") in states and
                        self.job(job_id), timeout=timeout, interval=0.25)

    def log_tail(self):
        out = []
        for name in ("slurmctld.log", "slurmd.log"):
            p = os.path.join(self.root, "log", name)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out.append(f"--- {name}\n" + "".join(f.readlines()[-30:]))
        return "\n".join(out)

    def script(self, name, body):
        """A batch script in the jobs directory, readable by the test user."""
        p = os.path.join(self.root, "jobs", name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(p, 0o755)
        return p
