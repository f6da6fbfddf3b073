"""colod's web listener against the real tools: `promtool check metrics` on /metrics, a real
Prometheus server scraping it, and the listener's access rules (read-only, anonymous, no path
escapes). colod runs on the in-tree fake NVML with colo-fake-job jobs, so the GPU metrics have
memory and SM activity. Every wait polls observed state (a file, a job's state, a query result)
under a deadline that only bounds a failure.

Binaries and the colod under test: colod_fixture.py."""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from colod_fixture import Colod, build_dir, get_json, http_get, wait_for  # noqa: E402


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Colod()
        cls.job = cls.d.submit("metrics-a")
        wait_for("job running", lambda: cls.d.job_state(cls.job) == "running")
        # The monitor has sampled the job's memory once its observed peak is on /metrics.
        wait_for("the job's memory on /metrics",
                 lambda: f'colo_job_observed_peak_mib{{job_id="{cls.job}",estimator="user"}} 6144'
                 in http_get(cls.d.base + "/metrics")[2])

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_promtool_accepts_metrics(self):
        status, headers, body = http_get(self.d.base + "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers)
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for family in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE",
                       "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                       "colo_jobs", "colo_queue_length", "colo_queue_oldest_wait_seconds", "colo_oom_crashes_total",
                       "colo_oom_recoveries_total", "colo_slot_ends_total", "colo_job_estimated_mib", "colo_job_observed_peak_mib",
                       "colo_scheduler_decision_seconds", "colo_gpus_unhealthy", "colo_estimator_error_ratio"):
            self.assertIn(f"# TYPE {family} ", body)
        self.assertIn('DCGM_FI_DEV_FB_USED{gpu="0",', body)
        # The fake job declares SM activity 0.4; GPM reports it over the sample interval (ramping).
        self.assertRegex(body, r'DCGM_FI_PROF_SM_ACTIVE\{gpu="\d",UUID="GPU-[0-9a-f-]+",device="nvidia\d",Hostname="[^"]+"\} 0\.[1-9]')
        self.assertIn(f'colo_job_estimated_mib{{job_id="{self.job}",estimator="user",state="running"}} 8192', body)

    def test_dcgm_labels_on_request(self):
        status, _, body = http_get(self.d.base + "/metrics?labels=dcgm")
        self.assertEqual(status, 200)
        self.assertRegex(body, r'DCGM_FI_DEV_FB_USED\{gpu="0",UUID="GPU-[^"]+",device="nvidia0",Hostname="[^"]+",modelName="Fake NVIDIA GPU 40GiB"\}')
        # promtool lints only dcgm-exporter's camelCase label (as it does on dcgm-exporter itself).
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
        problems = {l for l in (r.stdout + r.stderr).splitlines() if l.strip()}
        self.assertTrue(problems)
        self.assertTrue(all("camelCase" in p for p in problems), problems)
        self.assertEqual(http_get(self.d.base + "/metrics?labels=x")[0], 400)

    def test_estimator_error_histogram(self):
        flag = os.path.join(self.d.dir, "end-short-job")
        job = self.d.submit("metrics-short", until_file=flag)
        # End the job only once the monitor has recorded its memory (its observed peak).
        wait_for("the short job's peak on /metrics",
                 lambda: f'colo_job_observed_peak_mib{{job_id="{job}",estimator="user"}} 6144'
                 in http_get(self.d.base + "/metrics")[2])
        open(flag, "w").close()
        wait_for("the short job to finish", lambda: self.d.job_state(job) == "done")
        body = http_get(self.d.base + "/metrics")[2]
        # planned 8192 MiB, used 6144: (8192 - 6144) / 6144 = +0.33 → first bucket at or above it is 0.5
        self.assertIn('colo_estimator_error_ratio_bucket{estimator="user",le="0.25"} 0', body)
        self.assertIn('colo_estimator_error_ratio_bucket{estimator="user",le="0.5"} 1', body)
        self.assertIn('colo_estimator_error_ratio_count{estimator="user"} 1', body)

    def test_listener_is_read_only_and_anonymous(self):
        req = urllib.request.Request(self.d.base + "/metrics", method="POST", data=b"")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        self.assertEqual(e.exception.code, 405)
        # Over TCP nobody is identified: names, users and job pages stay hidden by default.
        status, _, body = http_get(self.d.base + "/api/v1/overview")
        self.assertEqual(status, 200)
        o = json.loads(body)
        self.assertEqual(o["visibility"], "anonymous")
        job = next(j for j in o["jobs"] if j["id"] == self.job)
        self.assertIsNone(job["name"])
        self.assertIsNone(job["user"])
        self.assertEqual(job["state"], "running")
        self.assertEqual(job["need_mib"], 8192)
        self.assertEqual(http_get(f"{self.d.base}/api/v1/jobs/{self.job}")[0], 403)
        for path in ("/static/../colo.db", "/static/%2e%2e/colo.db", "/static/.hidden", "/../web.addr", "/nope"):
            status, _, body = http_get(self.d.base + path)
            self.assertEqual(status, 404, path)
            self.assertNotIn("SQLite", body)

    def test_only_loopback_hosts_and_every_answer_has_the_security_headers(self):
        host, port = self.d.addr.rsplit(":", 1)
        # DNS rebinding: a page whose name was rebound to 127.0.0.1 sends its own name as Host.
        for name in ("attacker.example", "attacker.example:" + port, "10.0.0.1", "127.0.0.1.attacker.example"):
            req = urllib.request.Request(self.d.base + "/api/v1/overview", headers={"Host": name})
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(e.exception.code, 403, name)
        for name in ("localhost:" + port, "127.0.0.1:" + port, "localhost"):
            req = urllib.request.Request(self.d.base + "/api/v1/overview", headers={"Host": name})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(r.status, 200, name)
        # Errors carry the headers too: the handler's, and those the server writes itself.
        for path in ("/static/nope.js", "/metrics?labels=x", "/nope", "/"):
            status, headers, _ = http_get(self.d.base + path)
            self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff", path)
            self.assertIn("frame-ancestors 'none'", headers.get("Content-Security-Policy", ""), path)
        with socket.create_connection((host, int(port)), timeout=10) as c:
            c.sendall(b"GET / HTTP/1.1\nHost: localhost\n\n")  # bare LF: the server's own 400
            raw = b""
            while b"\r\n\r\n" not in raw:
                chunk = c.recv(4096)
                if not chunk:
                    break
                raw += chunk
        self.assertTrue(raw.startswith(b"HTTP/1.1 400"), raw[:100])
        self.assertIn(b"X-Content-Type-Options: nosniff", raw)
        # HEAD is GET without the body; other methods name what is allowed.
        req = urllib.request.Request(self.d.base + "/api/v1/overview", method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertEqual(r.read(), b"")
        # ... with GET's Content-Length, not 0 (RFC 9110 §8.6); an asset's is fixed.
        req = urllib.request.Request(self.d.base + "/static/dashboard.js", method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as r:
            head_length = r.headers["Content-Length"]
        self.assertEqual(int(head_length), len(http_get(self.d.base + "/static/dashboard.js")[2].encode()))
        req = urllib.request.Request(self.d.base + "/metrics", method="DELETE")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        self.assertEqual(e.exception.code, 405)
        self.assertEqual(e.exception.headers["Allow"], "GET, HEAD")

    def test_samples_and_bad_queries(self):
        status, _, body = http_get(self.d.base + "/api/v1/gpu-samples?since=0")
        self.assertEqual(status, 200)
        g0 = json.loads(body)["gpus"][0]
        self.assertGreater(len(g0["t"]), 0)
        self.assertEqual(len(g0["t"]), len(g0["used_mib"]))
        self.assertEqual(http_get(self.d.base + "/api/v1/gpu-samples?since=yesterday")[0], 400)
        self.assertEqual(http_get(self.d.base + "/api/v1/jobs/abc")[0], 400)


class SamplesWindowTest(unittest.TestCase):
    def test_since_never_reaches_past_the_dashboards_window(self):
        """Anyone may ask for samples: an old `since` must not make colod serialise a day of
        them (the work of one request stays bounded); the answer starts 15 minutes back."""
        first = Colod()
        try:
            first.terminate()
            old = time.time() - 7200
            con = sqlite3.connect(os.path.join(first.dir, "colo.db"))
            con.executemany("INSERT INTO gpu_samples (time, slot, used_mib) VALUES (?, 0, 1234)",
                            [(old + k,) for k in range(100)])
            con.commit()
            con.close()
            second = Colod(state_dir=first.dir)
            try:
                status, s = get_json(second.base + "/api/v1/gpu-samples?since=0")
                self.assertEqual(status, 200)
                times = [t for g in s["gpus"] for t in g["t"]]
                self.assertTrue(all(t >= s["time"] - 15 * 60 for t in times), min(times, default=None))
            finally:
                second.terminate()
                second.log.close()
        finally:
            first.stop()


class PublicDetailsTest(unittest.TestCase):
    def test_admin_may_publish_job_details(self):
        d = Colod("[web]\npublic_job_details = true\n")
        try:
            job = d.submit("public-a")
            wait_for("job running", lambda: d.job_state(job) == "running")
            wait_for("a memory sample of the job",
                     lambda: json.loads(http_get(f"{d.base}/api/v1/jobs/{job}")[2])["memory"]["mib"])
            o = json.loads(http_get(d.base + "/api/v1/overview")[2])
            self.assertEqual(o["visibility"], "all")
            self.assertEqual(next(j for j in o["jobs"] if j["id"] == job)["name"], "public-a")
            page = json.loads(http_get(f"{d.base}/api/v1/jobs/{job}")[2])
            self.assertEqual(page["job"]["attempts"][0]["n"], 1)
            self.assertIn(6144, page["memory"]["mib"])
        finally:
            d.stop()

    def test_bad_listen_address_is_one_clear_line(self):
        b = build_dir()
        with tempfile.TemporaryDirectory() as tmp:
            for bad in ("9400", "example.com:9400", "127.0.0.1:99999", "[::1:9400"):
                r = subprocess.run([os.path.join(b, "colod"), "--fake-gpus", "1x40GiB", "--state-dir", tmp,
                                    "--metrics-listen", bad], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, bad)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn("--metrics-listen", r.stderr)


class DcgmMetricsTest(unittest.TestCase):
    def test_smact_from_dcgm_on_gpus_without_gpm(self):
        # An A100-like GPU (no NVML GPM) whose SM activity comes from the (fake) libdcgm, and one
        # without either: SMACT is exported for the first only.
        d = Colod(gpus="1x40GiB:nogpm:dcgm+1x40GiB:nogpm")
        try:
            body = http_get(d.base + "/metrics")[2]
            self.assertRegex(body, r'colo_gpu_info\{gpu="0",[^}]*smact_path="dcgm"\} 1')
            self.assertRegex(body, r'colo_gpu_info\{gpu="1",[^}]*smact_path="unavailable"\} 1')
            d.colo("drain", "1")  # the job goes to GPU 0 (colod's own uid may drain)
            job = d.submit("dcgm-a", sm="0.3")
            wait_for("job running", lambda: d.job_state(job) == "running")
            wait_for("DCGM's SM activity of the job on /metrics",
                     lambda: 'DCGM_FI_PROF_SM_ACTIVE{gpu="0",' in (b := http_get(d.base + "/metrics")[2])
                     and any(l.startswith('DCGM_FI_PROF_SM_ACTIVE{gpu="0",') and l.endswith(" 0.3")
                             for l in b.splitlines()))
            self.assertNotIn('DCGM_FI_PROF_SM_ACTIVE{gpu="1",', http_get(d.base + "/metrics")[2])
            r = subprocess.run(["promtool", "check", "metrics"], input=http_get(d.base + "/metrics")[2],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            d.stop()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusScrapeTest(unittest.TestCase):
    def test_real_prometheus_scrapes_colod(self):
        if not shutil.which("prometheus"):
            self.fail("prometheus is not installed (scripts/install-deps.sh installs it)")
        d = Colod()
        tmp = tempfile.mkdtemp(prefix="colo-prom-")
        prom = None
        try:
            job = d.submit("scraped")
            wait_for("job running", lambda: d.job_state(job) == "running")
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "scrape_configs:\n  - job_name: colod\n"
                        f"    static_configs:\n      - targets: ['{d.addr}']\n")
            # A port chosen here may be taken before Prometheus binds it: then it exits and the
            # next port is tried (observed: the process ended), never a guess by time.
            for attempt in range(5):
                port = free_port()
                with open(os.path.join(tmp, f"prometheus-{attempt}.log"), "w") as log:
                    prom = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
                api = f"http://127.0.0.1:{port}/api/v1"

                def answers():
                    if prom.poll() is not None:
                        return "exited"
                    try:
                        return http_get(api + "/status/buildinfo", timeout=2)[0] == 200 and "up"
                    except OSError:
                        return False
                if wait_for("prometheus to answer", answers, timeout=120) == "up":
                    break
            else:
                self.fail("prometheus did not start (see its logs)")

            def scraped():
                s, _, body = http_get(api + "/query?query=" + urllib.request.quote(f'colo_job_estimated_mib{{job_id="{job}"}}'))
                r = json.loads(body)["data"]["result"] if s == 200 else []
                return r
            result = wait_for("Prometheus to have scraped colod", scraped, timeout=120, interval=0.5)
            self.assertEqual(result[0]["value"][1], "8192")
            targets = json.loads(http_get(api + "/targets")[2])["data"]["activeTargets"]
            self.assertEqual(targets[0]["health"], "up", targets)
            self.assertEqual(targets[0]["lastError"], "")
            fb = json.loads(http_get(api + "/query?query=DCGM_FI_DEV_FB_USED")[2])["data"]["result"]
            self.assertEqual(len(fb), 2)
        finally:
            if prom and prom.poll() is None:
                prom.terminate()
                prom.wait(timeout=60)
            d.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
