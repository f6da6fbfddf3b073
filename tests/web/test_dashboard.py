"""colod's web dashboard in headless Chromium, against a real colod on fake GPUs (2 × 40 GiB) with
its web listener on a free port. Jobs are colo-fake-job processes, so the GPUs show memory, SM
activity and power. Every wait polls observed state (web.addr appearing, a job's state in
/api/v1/overview, samples in /api/v1/gpu-samples, document.body.dataset.ready, a table row, a
chart's data) under a deadline that only bounds a failure.

- DashboardAnonymousTest: the default listener (anonymous visitors): the page loads, every chart
  has data points and gains new ones as the page polls, the submitted jobs are in the job and
  GPU-sharing tables with their names hidden ("—", never "null"), a job page answers 403 with a
  readable message, and the console has no SEVERE entry but that expected 403.
- DashboardJobPageTest: with [web] public_job_details = true: names are shown and a job page
  draws the observed memory curve against the estimate, with its attempts.
- DashboardOutageTest: when colod goes away, the page shows an error banner and keeps its data.

Binaries: $COLO_BUILD_DIR, else <repo>/build-test, else <repo>/build (colod, colo, colo-fake-job).
Screenshots: $COLO_SCREENSHOT_DIR (dashboard.png, dashboard-job.png).
Run: /usr/bin/python3 -m unittest discover -s tests/web -p 'test_*.py'"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = ("colod", "colo", "colo-fake-job")
ACTIVE = ("queued", "estimating", "running", "recovering")
DASH = "\u2014"


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

    def __init__(self, extra_config=""):
        self.build = build_dir()
        self.dir = tempfile.mkdtemp(prefix="colo-dash-")
        os.chmod(self.dir, 0o755)
        self.jobs = []
        args = [os.path.join(self.build, "colod"), "--fake-gpus", "2x40GiB", "--state-dir", self.dir,
                "--metrics-listen", "127.0.0.1:0"]
        if extra_config:
            cfg = os.path.join(self.dir, "colod.toml")
            with open(cfg, "w") as f:
                f.write(extra_config)
            args += ["--config", cfg]
        self.log = open(os.path.join(self.dir, "colod.log"), "w")
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

    def submit(self, name, mem="6GiB", sm="0.4"):
        """A job that holds `mem` of GPU memory and `sm` SM activity until cancelled."""
        out = self.colo("submit", "--gpus", "1", "--mem", "8GiB", "--name", name, "--",
                        os.path.join(self.build, "colo-fake-job"), "--mem", mem, "--hold", "inf",
                        "--sm-activity", sm, "--sm-occupancy", "0.2")
        ids = re.findall(r"\d+", out)
        if not ids:
            raise AssertionError(f"colo submit printed no job id: {out!r}")
        self.jobs.append(int(ids[-1]))
        return self.jobs[-1]

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


class DashboardCase(unittest.TestCase):
    CONFIG = ""
    JOBS = ()  # (name, mem, sm)

    @classmethod
    def setUpClass(cls):
        cls.d = Colod(cls.CONFIG)
        cls.driver = None
        try:
            cls.ids = [cls.d.submit(name, mem, sm) for name, mem, sm in cls.JOBS]
            cls.d.wait_running(cls.ids)
            ov = cls.d.overview()
            started = max([j["start_time"] for j in ov["jobs"] if j["id"] in cls.ids], default=ov["time"])
            cls.d.wait_samples(started)
            cls.driver = browser.chromium()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.driver is not None:
                cls.driver.quit()
        finally:
            cls.d.stop()

    def open_dashboard(self, fragment=""):
        browser.console_entries(self.driver)  # drop what earlier tests logged
        self.driver.get(self.d.base + "/" + fragment)
        browser.wait_ready(self.driver)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def row_cells(self, selector):
        return self.js("""
            return Array.prototype.map.call(document.querySelectorAll(arguments[0]), function (r) {
              return {id: r.dataset.jobId, jobs: r.dataset.jobs, cells: Array.prototype.map.call(r.cells,
                function (c) { return c.textContent; })}; });""", selector)

    def wait_charts_with_points(self, minimum):
        """Every chart has at least `minimum` x values and data points; returns the stats."""
        return browser.wait_js(self.driver, f"every chart with ≥ {minimum} points", """
            var o = window.coloDashboard;
            if (!o || !o.charts.length) return null;
            for (var i = 0; i < o.charts.length; i++) {
              var u = o.charts[i], pts = 0;
              for (var s = 1; s < u.data.length; s++)
                pts += u.data[s].filter(function (v) { return v !== null && v !== undefined; }).length;
              if (u.data[0].length < arguments[0] || pts < arguments[0]) return null;
            }
            return o.charts.length;""", minimum)

    def assert_no_missing_words(self):
        text = browser.page_text(self.driver)
        m = browser.BAD_WORDS.search(text)
        self.assertIsNone(m, f"the page shows '{m and m.group(0)}' where a value is missing: {text[:2000]}")


class DashboardAnonymousTest(DashboardCase):
    JOBS = (("web-a", "6GiB", "0.4"), ("web-b", "3GiB", "0.3"))

    def test_overview(self):
        self.open_dashboard()
        gpus = self.d.overview()["gpus"]
        self.assertEqual(len(gpus), 2)
        n = self.wait_charts_with_points(2)
        self.assertEqual(n, 2 * len(gpus), "a memory and an activity chart per GPU")
        stats = browser.chart_stats(self.driver, "coloDashboard")
        for c in stats:
            self.assertGreater(c["width"], 100, f"chart '{c['title']}' is not laid out: {stats}")

        # The submitted jobs are in the jobs table and on their GPUs; names and users are hidden.
        for jid in self.ids:
            browser.wait_js(self.driver, f"job {jid} in the jobs table",
                            "return document.querySelector('#jobs-table tr[data-job-id=\"' + arguments[0] + '\"]')",
                            str(jid))
        rows = {r["id"]: r["cells"] for r in self.row_cells("#jobs-table tbody tr")}
        for jid in self.ids:
            cells = rows[str(jid)]
            self.assertEqual(cells[1], DASH, f"an anonymous visitor sees job {jid}'s name: {cells}")
            self.assertEqual(cells[2], DASH, f"an anonymous visitor sees job {jid}'s user: {cells}")
            self.assertEqual(cells[3], "running", cells)
            self.assertEqual(cells[5], "8 GiB", cells)
        sharing = self.row_cells("#sharing-table tbody tr")
        self.assertEqual(len(sharing), len(gpus))
        on_gpus = [int(j) for r in sharing for j in (r["jobs"] or "").split(",") if j]
        self.assertEqual(sorted(on_gpus), sorted(self.ids), sharing)
        self.assertEqual(self.js("return document.getElementById('visibility').textContent"), "anonymous view")
        self.assertTrue(self.js("return document.getElementById('queue-table').hidden"), "nothing waits")
        self.assert_no_missing_words()

        # The page keeps polling: the first chart gains samples.
        before = self.js("return window.coloDashboard.charts[0].data[0].length")
        browser.wait_js(self.driver, "new samples in the charts",
                        "return window.coloDashboard.charts[0].data[0].length > arguments[0]", before)
        self.assertEqual(self.js("return document.getElementById('status').hidden"), True,
                         self.js("return document.getElementById('status').textContent"))
        browser.screenshot(self.driver, "dashboard.png")
        self.assertEqual(browser.severe(browser.console_entries(self.driver)), [], "SEVERE console entries")

    def test_job_page_is_only_for_owners(self):
        jid = self.ids[0]
        self.open_dashboard()
        self.js("location.hash = arguments[0]", f"#job/{jid}")
        browser.wait_js(self.driver, "the job page's answer",
                        "var v = document.getElementById('job-view');"
                        "return v.dataset.jobId === arguments[0] && v.dataset.state === 'error'", str(jid))
        msg = self.js("return document.getElementById('job-error').textContent")
        self.assertIn("403", msg)
        self.assertIn("job details are shown only to their owner", msg)
        self.assertTrue(self.js("return document.getElementById('overview-view').hidden"))
        self.assert_no_missing_words()
        # Back to the overview: its charts are there again.
        self.js("location.hash = ''")
        browser.wait_js(self.driver, "the overview again", "return !document.getElementById('overview-view').hidden")
        self.wait_charts_with_points(2)
        # The browser logs the expected 403 as a failed resource load; nothing else may be SEVERE.
        entries = browser.console_entries(self.driver)
        self.assertEqual(browser.severe(entries, allowed=(rf"/api/v1/jobs/{jid} .*\b403\b",)), [], entries)


class DashboardJobPageTest(DashboardCase):
    CONFIG = "[web]\npublic_job_details = true\n"
    JOBS = (("web-c", "5GiB", "0.5"),)

    def test_job_page(self):
        jid = self.ids[0]
        # The job's memory has been sampled once its page has a memory curve.
        wait_for("job memory samples", lambda: len((get_json(self.d.base + f"/api/v1/jobs/{jid}")[1] or {})
                                                   .get("memory", {}).get("mib", [])) >= 2)
        self.open_dashboard()
        browser.wait_js(self.driver, "job web-c in the jobs table",
                        "return document.querySelector('#jobs-table tr[data-job-id=\"' + arguments[0] + '\"]')", str(jid))
        cells = {r["id"]: r["cells"] for r in self.row_cells("#jobs-table tbody tr")}[str(jid)]
        self.assertEqual(cells[1], "web-c", cells)
        self.assertNotEqual(cells[2], DASH, cells)
        self.assertEqual(self.js("return document.getElementById('visibility').textContent"), "all details")

        self.js("document.querySelector('#jobs-table tr[data-job-id=\"' + arguments[0] + '\"] a').click()", str(jid))
        browser.wait_js(self.driver, "the job page",
                        "var v = document.getElementById('job-view');"
                        "return v.dataset.jobId === arguments[0] && v.dataset.state === 'loaded'", str(jid))
        self.assertEqual(self.js("return location.hash"), f"#job/{jid}")
        self.assertEqual(self.js("return document.getElementById('job-name').textContent"), "web-c")
        # The memory chart: observed samples and the estimate line (8 GiB).
        chart = browser.wait_js(self.driver, "the job's memory chart with points", """
            var c = window.coloDashboard.charts.filter(function (u) { return u.root.closest('#job-view'); })[0];
            if (!c || c.data[0].length < 2) return null;
            return {observed: c.data[1].filter(function (v) { return v !== null; }),
                    estimate: c.data[2].filter(function (v) { return v !== null; })};""")
        self.assertTrue(all(v == 8192 for v in chart["estimate"]) and chart["estimate"], chart)
        self.assertTrue(any(v >= 5 * 1024 for v in chart["observed"]), chart)
        attempts = self.js("return document.querySelectorAll('#attempts-table tbody tr').length")
        self.assertEqual(attempts, 1)
        self.assertIn("8 GiB", self.js("return document.getElementById('job-estimate').textContent"))
        self.assert_no_missing_words()
        browser.screenshot(self.driver, "dashboard-job.png")
        self.assertEqual(browser.severe(browser.console_entries(self.driver)), [], "SEVERE console entries")


class DashboardOutageTest(DashboardCase):
    """When colod stops answering, the page says so and keeps its last data."""

    def test_banner_when_colod_is_gone(self):
        self.open_dashboard()
        self.wait_charts_with_points(2)
        self.assertTrue(self.js("return document.getElementById('status').hidden"))
        self.d.terminate()
        msg = browser.wait_js(self.driver, "the error banner",
                              "var s = document.getElementById('status'); return !s.hidden && s.textContent")
        self.assertIn("Cannot update the dashboard", msg)
        self.assertIn("cannot reach colod", msg)
        self.wait_charts_with_points(2)  # the last data stay on the page
        # Only the failed requests themselves may be SEVERE.
        entries = browser.console_entries(self.driver)
        self.assertEqual(browser.severe(entries, allowed=(r"/api/v1/(overview|gpu-samples)\b.*(ERR_|Failed to load)",)),
                         [], entries)


if __name__ == "__main__":
    unittest.main()
