"""A colod for the web tests: on fake GPUs, its web listener on a free port (the address read from
web.addr), jobs that are colo-fake-job processes. Every wait polls observed state under a deadline
that only bounds a failure.

Binaries: $COLO_BUILD_DIR, else <repo>/build-test, else <repo>/build (colod, colo, colo-fake-job)."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = ("colod", "colo", "colo-fake-job")
ACTIVE = ("queued", "estimating", "running", "recovering")


def build_dir():
    tried = []
    for d in (os.environ.get("COLO_BUILD_DIR"), os.path.join(ROOT, "build-test"), os.path.join(ROOT, "build")):
        if not d:
            continue
        tried.append(d)
        if all(os.access(os.path.join(d, b), os.X_OK) for b in BINARIES):
            return d
    raise RuntimeError(f"{', '.join(BINARIES)} are not built in any of {tried}: set COLO_BUILD_DIR or build "
                       "build-test/ first")


def wait_for(what, check, timeout=60.0, interval=0.1):
    """Polls check() until it returns something truthy; the deadline only bounds a failure."""
    deadline = time.monotonic() + timeout
    while True:
        v = check()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def http_get(url, timeout=10):
    """(status, headers, body text), for any status."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def get_json(url, timeout=10):
    """(status, decoded JSON or None)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        try:
            return e.code, json.loads(body)
        except ValueError:
            return e.code, None


class Colod:
    """colod on fake GPUs with the web listener on a free port, in a temporary state dir."""

    def __init__(self, extra_config="", gpus="2x40GiB", state_dir=None):
        """state_dir: an earlier (terminated) colod's, to restart on its state."""
        self.build = build_dir()
        self.dir = state_dir or tempfile.mkdtemp(prefix="colo-web-")
        os.chmod(self.dir, 0o755)
        if state_dir:
            try:
                os.unlink(os.path.join(self.dir, "web.addr"))  # wait for the new one
            except FileNotFoundError:
                pass
        self.jobs = []
        args = [os.path.join(self.build, "colod"), "--fake-gpus", gpus, "--state-dir", self.dir,
                "--metrics-listen", "127.0.0.1:0"]
        if extra_config:
            cfg = os.path.join(self.dir, "colod.toml")
            with open(cfg, "w") as f:
                f.write(extra_config)
            args += ["--config", cfg]
        self.log = open(os.path.join(self.dir, "colod.log"), "a")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        addr_file = os.path.join(self.dir, "web.addr")

        def bound():
            if self.proc.poll() is not None:
                raise AssertionError(f"colod exited with {self.proc.returncode}: {self.read_log()}")
            if not os.path.exists(addr_file):
                return None
            with open(addr_file) as f:
                line = f.read().strip()
            return line if re.fullmatch(r"[0-9.]+:\d+", line) else None  # the whole line, not half of it
        try:
            self.addr = wait_for("colod's web.addr", bound)
        except BaseException:
            self.stop()
            raise
        self.base = f"http://{self.addr}"

    def read_log(self):
        with open(os.path.join(self.dir, "colod.log")) as f:
            return f.read()

    def colo(self, *args):
        r = subprocess.run([os.path.join(self.build, "colo"), "--socket", os.path.join(self.dir, "colo.sock"), *args],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"colo {' '.join(args)} failed: {r.stderr}")
        return r.stdout

    def submit(self, name, mem="6GiB", sm="0.4", until_file=None):
        """A job (8 GiB estimate) that holds `mem` of GPU memory and `sm` SM activity until
        cancelled, or until `until_file` exists (then it ends by itself, done)."""
        extra = ["--until-file", until_file] if until_file else []
        out = self.colo("submit", "--gpus", "1", "--mem", "8GiB", "--name", name, "--",
                        os.path.join(self.build, "colo-fake-job"), "--mem", mem, "--hold", "inf",
                        "--sm-activity", sm, "--sm-occupancy", "0.2", *extra)
        ids = re.findall(r"\d+", out)
        if not ids:
            raise AssertionError(f"colo submit printed no job id: {out!r}")
        self.jobs.append(int(ids[-1]))
        return self.jobs[-1]

    def job_state(self, job):
        return json.loads(self.colo("show", str(job), "--json"))["state"]

    def overview(self):
        status, ov = get_json(self.base + "/api/v1/overview")
        if status != 200:
            raise AssertionError(f"/api/v1/overview answered {status}: {ov}")
        return ov

    def wait_running(self, ids):
        def running():
            states = {j["id"]: j["state"] for j in self.overview()["jobs"]}
            bad = {i: states.get(i) for i in ids if states.get(i) not in ("running", "queued", "estimating", None)}
            if bad:
                raise AssertionError(f"jobs ended instead of running: {bad}\n{self.read_log()}")
            return all(states.get(i) == "running" for i in ids)
        wait_for(f"jobs {ids} running", running)

    def wait_samples(self, after, count=3):
        """Until every GPU has `count` samples taken after `after` (Unix time)."""
        def sampled():
            status, s = get_json(self.base + f"/api/v1/gpu-samples?since={after}")
            return status == 200 and s["gpus"] and all(len(g["t"]) >= count for g in s["gpus"])
        wait_for(f"{count} GPU samples after the jobs started", sampled)

    def terminate(self):
        """Cancels the jobs still active and stops colod (SIGTERM); the state dir stays."""
        if self.proc.poll() is not None:
            return
        for j in self.jobs:
            try:
                if json.loads(self.colo("show", str(j), "--json"))["state"] in ACTIVE:
                    self.colo("cancel", str(j))
            except AssertionError:
                pass
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        try:
            self.terminate()
        finally:
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)
