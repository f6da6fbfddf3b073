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
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from colod_fixture import Colod, get_json, wait_for  # noqa: E402

DASH = "\u2014"


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
