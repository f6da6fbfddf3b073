"""Headless Chromium for the dashboard and report tests (Debian's chromium, chromium-driver and
python3-selenium; run with /usr/bin/python3). Every wait here is a WebDriverWait on state the page
shows (document.body.dataset.ready, a row, a chart's data); its timeout only bounds a failure."""
import atexit
import os
import re
import shutil
import tempfile

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

CHROMEDRIVER = os.environ.get("COLO_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM = os.environ.get("COLO_CHROMIUM", "/usr/bin/chromium")

# Every chart a page exposes (window.<name>.charts: uPlot instances): its kind, title, how many x
# values it has and how many non-null y values (points) in all its series.
CHART_STATS_JS = """
var o = window[arguments[0]];
if (!o || !o.charts) return null;
return o.charts.map(function (u) {
  var pts = 0;
  for (var i = 1; i < u.data.length; i++)
    for (var k = 0; k < u.data[i].length; k++) if (u.data[i][k] !== null && u.data[i][k] !== undefined) pts++;
  var t = u.root && u.root.querySelector('.u-title');
  return {kind: u.coloKind || 'line', title: t ? t.textContent : '', x: u.data[0].length, points: pts,
          width: u.width, height: u.height};
});
"""


def chromium(width=1280, height=800):
    """A headless Chromium with the browser console log enabled."""
    for path, what in ((CHROMEDRIVER, "chromedriver (Debian: chromium-driver)"), (CHROMIUM, "chromium")):
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{what} is not installed at {path}")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--window-size={width},{height}", "--lang=en-US", "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves its singleton directory (org.chromium.Chromium.XXXXXX) in TMPDIR even after
    # quit(): one per test class in /tmp on every run. This one goes when the tests' process ends.
    tmp = tempfile.mkdtemp(prefix="colo-chromium-")
    atexit.register(shutil.rmtree, tmp, True)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, env=dict(os.environ, TMPDIR=tmp)), options=opts)
    try:
        # --window-size is the window's; make the page's viewport width × height.
        dw, dh = driver.execute_script("return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]")
        if dw > 0 or dh > 0:
            driver.set_window_size(width + max(0, dw), height + max(0, dh))
    except Exception:
        driver.quit()
        raise
    return driver


def wait_js(driver, what, script, *args, timeout=30):
    """Waits until the script returns something truthy; returns that value."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
            lambda d: d.execute_script(script, *args), message=f"waiting for {what}")
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}; page says: {page_text(driver)[:1500]}")


def page_text(driver):
    try:
        return driver.execute_script("return document.body ? document.body.innerText : ''") or ""
    except WebDriverException as e:
        return f"(no page text: {e})"


def wait_ready(driver, timeout=30):
    """document.body.dataset.ready == "1": the page drew itself once."""
    wait_js(driver, 'document.body.dataset.ready == "1"',
            "return document.body && document.body.dataset.ready === '1'", timeout=timeout)


def chart_stats(driver, global_name):
    return driver.execute_script(CHART_STATS_JS, global_name)


def console_entries(driver):
    """The browser console since the last call (the driver hands each entry out once)."""
    return driver.get_log("browser")


def severe(entries, allowed=()):
    """The SEVERE entries no regex in `allowed` matches."""
    return [e for e in entries if e.get("level") == "SEVERE"
            and not any(re.search(a, e.get("message", "")) for a in allowed)]


# Words a page must never show where a value is missing ("—" instead).
BAD_WORDS = re.compile(r"\b(null|undefined|NaN|\[object Object\])\b")


def screenshot(driver, name):
    """Saves <name> into $COLO_SCREENSHOT_DIR when it is set."""
    d = os.environ.get("COLO_SCREENSHOT_DIR")
    if not d:
        return None
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    driver.save_screenshot(path)
    return path


# src="http…", href='https…', url(http…), @import "http…": a page that would reach the network.
EXTERNAL_REF = re.compile(r"""(?:\b(?:src|href|action|poster|srcset)\s*=\s*["']?\s*(?:https?:)?//)"""
                          r"""|(?:url\(\s*["']?\s*(?:https?:)?//)|(?:@import\s+(?:url\()?\s*["']?\s*(?:https?:)?//)""",
                          re.IGNORECASE)


def external_refs(html):
    return [html[max(0, m.start() - 60):m.end() + 60] for m in EXTERNAL_REF.finditer(html)]
