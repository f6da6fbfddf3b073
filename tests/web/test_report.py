"""The self-contained HTML report in headless Chromium: `colo sim --compare --report`, a single
`colo sim --policy magm --report`, and (needing no C++ binary) the sample report built from
web/report-template.html + web/static + tests/web/fixtures/report-sample.json the way the colo CLI
builds it (render_report_fixture.py). Each page must draw every chart with data points, log no
SEVERE console entry, load nothing but itself (no http(s) src/href) and show no "null".

Binaries: $COLO_BUILD_DIR, else <repo>/build-test, else <repo>/build (colo only).
Screenshots: $COLO_SCREENSHOT_DIR (report.png from the --compare page).
Run: /usr/bin/python3 -m unittest discover -s tests/web -p 'test_*.py'"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import render_report_fixture  # noqa: E402
from colod_fixture import Colod, build_dir, wait_for  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "web", "fixtures", "report-sample.json")
METRIC_BARS = 5  # makespan, energy, wait, JCT, OOM crashes


def colo_binary():
    for d in (os.environ.get("COLO_BUILD_DIR"), os.path.join(ROOT, "build-test"), os.path.join(ROOT, "build")):
        if d and os.access(os.path.join(d, "colo"), os.X_OK):
            return os.path.join(d, "colo")
    raise RuntimeError("colo is not built: set COLO_BUILD_DIR or build build-test/ (or build/) first")


def file_url(path):
    return "file://" + urllib.parse.quote(os.path.abspath(path))


class ReportPageMixin:
    """Checks shared by every report page."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="colo-report-")
        cls.driver = None
        try:
            cls.driver = browser.chromium()
        except Exception:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.driver is not None:
            cls.driver.quit()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def open_report(self, path):
        """Opens the page and waits until it drew itself; returns (html, chart stats, console)."""
        with open(path, encoding="utf-8") as f:
            html = f.read()
        browser.console_entries(self.driver)  # what earlier pages logged
        self.driver.get(file_url(path))
        browser.wait_ready(self.driver)
        stats = browser.chart_stats(self.driver, "coloReport")
        return html, stats, browser.console_entries(self.driver)

    def check_page(self, html, stats, console):
        self.assertIsNotNone(stats, "window.coloReport is missing")
        self.assertTrue(stats, "the report drew no chart")
        for c in stats:
            self.assertGreater(c["x"], 0, f"{c['kind']} chart '{c['title']}' has no x values: {stats}")
            self.assertGreater(c["points"], 0, f"{c['kind']} chart '{c['title']}' has no data points: {stats}")
            self.assertGreater(c["width"], 100, f"{c['kind']} chart '{c['title']}' is not laid out: {stats}")
        self.assertEqual(browser.severe(console), [], "SEVERE console entries")
        self.assertEqual(browser.external_refs(html), [], "the page references something outside itself")
        for marker in render_report_fixture.MARKERS:
            self.assertNotIn(marker, html, f"the placeholder {marker} was not replaced")
        # Nothing but the page itself (and data: URLs) was loaded.
        loaded = self.driver.execute_script(
            "return performance.getEntriesByType('resource').map(function (e) { return e.name; })")
        self.assertEqual([u for u in loaded if not u.startswith(("file:", "data:"))], [], "resources loaded")
        text = browser.page_text(self.driver)
        self.assertIsNone(browser.BAD_WORDS.search(text), f"the page shows a missing value as text: "
                          f"{browser.BAD_WORDS.search(text)}")
        self.assertEqual(self.driver.execute_script("return document.body.dataset.error || ''"), "")

    def kinds(self, stats):
        out = {}
        for c in stats:
            out[c["kind"]] = out.get(c["kind"], 0) + 1
        return out


class ReportFixtureTest(ReportPageMixin, unittest.TestCase):
    """The sample report, built without the C++ side."""

    def test_sample_report(self):
        with open(SAMPLE, encoding="utf-8") as f:
            report = json.load(f)
        path = os.path.join(self.tmp, "sample.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_report_fixture.render(report))
        html, stats, console = self.open_report(path)
        self.check_page(html, stats, console)

        kinds = self.kinds(stats)
        runs = report["runs"]
        self.assertEqual(kinds.get("bars"), METRIC_BARS, stats)
        self.assertEqual(kinds.get("gantt"), len(runs), stats)
        self.assertEqual(kinds.get("line"), 3 * len(runs), stats)  # memory, SMACT, queue length per run

        # The data survived inlining: a workload name with "</script>" in it is intact.
        names = self.driver.execute_script(
            "return window.COLO_REPORT.runs[0].jobs.map(function (j) { return j.workload; })")
        self.assertEqual(names, [j["workload"] for j in runs[0]["jobs"]])
        self.assertTrue(any("</script>" in n for n in names), "the sample should carry a '</script>' name")
        names1 = self.driver.execute_script(
            "return window.COLO_REPORT.runs[1].jobs.map(function (j) { return j.workload; })")
        self.assertTrue(any("<!--<script>" in n for n in names1), "the sample should carry a '<!--<script>' name")
        self.assertEqual(self.driver.execute_script("return document.querySelectorAll('#report b').length"), 0,
                         "data was parsed as HTML")
        self.assertEqual(self.driver.title, report["title"])

        # Null values render as "—": the history run has no energy and no memory size.
        summary_rows = self.driver.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('table.summary tbody tr'),"
            " function (r) { return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); })")
        self.assertEqual(len(summary_rows), len(runs))
        self.assertEqual(summary_rows[2][3], "\u2014", summary_rows)

        # The Gantt chart tells which job a bar is: point at the first bar of the first run.
        hover = self.driver.execute_script("""
            var u = window.coloReport.charts.filter(function (c) { return c.coloKind === 'gantt'; })[0];
            var b = u.coloBars[0];
            var n = Math.round(u.scales.y.max + 0.5);  // GPU rows; GPU 0 on top
            var row = Math.abs(u.valToPos(0, 'y') - u.valToPos(1, 'y'));
            var lanes = u.coloBars.filter(function (o) { return o.gpu === b.gpu; })
                                  .reduce(function (m, o) { return Math.max(m, o.lane + 1); }, 1);
            var x = (u.valToPos(b.start, 'x') + u.valToPos(b.end, 'x')) / 2;
            var y = u.valToPos(n - 1 - b.gpu, 'y') - row * 0.42 + (b.lane + 0.5) * row * 0.84 / lanes;
            u.over.scrollIntoView({block: 'center'});
            var r = u.over.getBoundingClientRect();
            u.over.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + x, clientY: r.top + y, bubbles: true}));
            return {id: b.job.id, info: u.coloInfo.textContent};
        """)
        self.assertTrue(hover["info"].startswith(f"job {hover['id']} "), hover)


class ReportSimTest(ReportPageMixin, unittest.TestCase):
    """Reports written by `colo sim` from the repository's data/."""

    @classmethod
    def setUpClass(cls):
        cls.colo = colo_binary()
        super().setUpClass()

    def sim(self, out, *args):
        r = subprocess.run([self.colo, "sim", *args, "--report", out], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(r.returncode, 0, f"colo sim {' '.join(args)} failed: {r.stderr[-3000:]}")
        self.assertTrue(os.path.isfile(out), f"colo sim did not write {out}")
        return r

    def test_compare_report(self):
        path = os.path.join(self.tmp, "r.html")
        self.sim(path, "--compare")
        html, stats, console = self.open_report(path)
        self.check_page(html, stats, console)
        kinds = self.kinds(stats)
        self.assertEqual(kinds.get("bars"), METRIC_BARS, stats)
        self.assertGreaterEqual(kinds.get("gantt", 0), 1, stats)
        self.assertGreaterEqual(kinds.get("line", 0), 2, stats)
        report = self.driver.execute_script("return window.COLO_REPORT")
        self.assertTrue(report.get("compare"), "a --compare report has compare rows")
        # One bar per configuration × sharing mode: as many as there are compare rows.
        bars = self.driver.execute_script("""
            return window.coloReport.charts.filter(function (c) { return c.coloKind === 'bars'; })
              .map(function (u) { var n = 0; for (var i = 1; i < u.data.length; i++)
                  n += u.data[i].filter(function (v) { return v !== null; }).length; return n; });""")
        self.assertEqual(bars, [len(report["compare"])] * METRIC_BARS)
        browser.screenshot(self.driver, "report.png")

    def test_single_run_report(self):
        path = os.path.join(self.tmp, "one.html")
        self.sim(path, "--policy", "magm")
        html, stats, console = self.open_report(path)
        self.check_page(html, stats, console)
        kinds = self.kinds(stats)
        self.assertNotIn("bars", kinds, "a single run has no comparison")
        self.assertEqual(kinds.get("gantt"), 1, stats)
        self.assertEqual(kinds.get("line"), 3, stats)
        report = self.driver.execute_script("return window.COLO_REPORT")
        gantt = self.driver.execute_script(
            "return window.coloReport.charts.filter(function (c) { return c.coloKind === 'gantt'; })[0].coloBars.length")
        jobs = report["runs"][0]["jobs"]
        self.assertEqual(gantt, sum(len(j["gpus"]) for j in jobs), "one bar per attempt and GPU")
        browser.screenshot(self.driver, "report-single.png")

    def test_mig_report_has_a_row_and_series_per_instance(self):
        path = os.path.join(self.tmp, "mig.html")
        self.sim(path, "--gpus", "2", "--sharing", "mig", "--mig", "3g.20gb,4g.20gb")
        html, stats, console = self.open_report(path)
        self.check_page(html, stats, console)
        # Memory chart: one series per instance (2 GPUs × 2), labelled with its size, no single capacity.
        labels = self.driver.execute_script("""
            var c = window.coloReport.charts.filter(function (u) { return u.coloKind === 'line'; })[0];
            return c.series.slice(1).map(function (s) { return s.label; });""")
        self.assertEqual(labels, ["GPU 0 · 3g.20gb (19 GiB) used", "GPU 0 · 4g.20gb (19 GiB) used",
                                  "GPU 1 · 3g.20gb (19 GiB) used", "GPU 1 · 4g.20gb (19 GiB) used"])
        facts = self.driver.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('dl.facts dt'), function (e) { return e.textContent; })")
        self.assertIn("MIG instances", facts)

    def test_a_large_cluster_draws_its_busiest_gpus_and_says_so(self):
        # 100 000 GPUs' series made a 163 MB page; past 64 GPUs the page draws the 64 whose memory
        # peaked highest and names what it left out, while the chart of jobs keeps every GPU.
        path = os.path.join(self.tmp, "large.html")
        self.sim(path, "--gpus", "300")
        html, stats, console = self.open_report(path)
        self.check_page(html, stats, console)
        report = self.driver.execute_script("return window.COLO_REPORT")
        series = report["runs"][0]["series"]
        self.assertEqual(len(series["gpus"]), 64)
        self.assertEqual(series["gpus_left_out"]["of"], 300)
        self.assertEqual(series["gpus_left_out"]["count"], 236)
        used = {j for job in report["runs"][0]["jobs"] for j in job["gpus"]}
        self.assertTrue(used <= {g["slot"] for g in series["gpus"]}, "every GPU that held a job is drawn")
        lines = self.driver.execute_script("""
            var c = window.coloReport.charts.filter(function (u) { return u.coloKind === 'line'; })[0];
            return c.series.length;""")
        self.assertEqual(lines, 1 + 64 + 1)  # x, 64 GPUs, the capacity
        notes = self.driver.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('p.note'), function (e) { return e.textContent; })")
        self.assertTrue(any("64 of 300 GPUs whose memory peaked highest; 236 more are not drawn" in n for n in notes), notes)
        self.assertLess(os.path.getsize(path), 2 * 1024 * 1024)



class ReportHistoryTest(ReportPageMixin, unittest.TestCase):
    """`colo report --state-dir`: the page of a real colod's own history (a finished job)."""

    def test_history_report(self):
        d = Colod()
        try:
            flag = os.path.join(d.dir, "end-job")
            submitted = time.time()
            job = d.submit("history-a", until_file=flag)
            d.wait_running([job])
            d.wait_samples(after=submitted, count=2)  # the report's series has points while it ran
            with open(flag, "w"):
                pass
            wait_for("the job to finish", lambda: d.job_state(job) == "done")
            out = os.path.join(self.tmp, "history.html")
            r = subprocess.run([os.path.join(d.build, "colo"), "report", "--state-dir", d.dir, "--report", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            d.stop()
        html, stats, console = self.open_report(out)
        self.check_page(html, stats, console)
        report = self.driver.execute_script("return window.COLO_REPORT")
        run = report["runs"][0]
        self.assertEqual([(j["id"], j["state"], j["workload"]) for j in run["jobs"]], [(job, "done", "history-a")])
        self.assertEqual(run["summary"]["completed"], 1)
        self.assertGreaterEqual(min(run["series"]["t"]), 0)  # measured from the first submission
        bad = subprocess.run([os.path.join(build_dir(), "colo"), "report", "--state-dir", "/nonexistent",
                              "--report", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("no colod database at /nonexistent/colo.db", bad.stderr)


if __name__ == "__main__":
    unittest.main()
