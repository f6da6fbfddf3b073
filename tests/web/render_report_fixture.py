#!/usr/bin/python3
"""Builds a colo report page from web/report-template.html, the page assets and a COLO_REPORT
JSON file, the way `colo sim --report` does it (src/cli/sim_report.cpp, write_report):

  CSS  = uPlot.min.css + "\\n" + style.css                 -> replaces /*COLO_INLINE_CSS*/
  JS   = uPlot.iife.min.js + "\\n;\\n" + charts.js + "\\n;\\n" + report.js -> /*COLO_INLINE_JS*/
  DATA = the JSON, compact, every "<" written as \u003c       -> /*COLO_REPORT_DATA*/

Each marker is found in the template (its first occurrence) and replaced once, so inlined code
that mentions a marker is never taken for one. The CSS must not contain "</style" and the JS not
"</script" (case-insensitive), or they could not be inlined.

usage: render_report_fixture.py [REPORT.json] [OUT.html]
(defaults: tests/web/fixtures/report-sample.json, stdout)"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEB = os.path.join(ROOT, "web")
SAMPLE = os.path.join(ROOT, "tests", "web", "fixtures", "report-sample.json")

MARKERS = ("/*COLO_INLINE_CSS*/", "/*COLO_INLINE_JS*/", "/*COLO_REPORT_DATA*/")


def read_asset(rel):
    with open(os.path.join(WEB, rel), encoding="utf-8") as f:
        return f.read()


def inline_safe(s, what, closing):
    if closing in s.lower():
        raise ValueError(f"{what} contains '{closing}' and cannot be inlined")
    return s


def fill_template(tpl, parts):
    at = []
    for marker, _ in parts:
        pos = tpl.find(marker)
        if pos < 0:
            raise ValueError(f"web/report-template.html has no '{marker}' placeholder")
        at.append((pos, marker))
    at.sort()
    values = dict(parts)
    out, start = [], 0
    for pos, marker in at:
        out.append(tpl[start:pos])
        out.append(values[marker])
        start = pos + len(marker)
    out.append(tpl[start:])
    return "".join(out)


def render(report):
    tpl = read_asset("report-template.html")
    css = inline_safe(read_asset("static/vendor/uplot/uPlot.min.css") + "\n" + read_asset("static/style.css"),
                      "the CSS", "</style")
    js = inline_safe(read_asset("static/vendor/uplot/uPlot.iife.min.js") + "\n;\n" + read_asset("static/charts.js") +
                     "\n;\n" + read_asset("static/report.js"), "the chart code", "</script")
    data = json.dumps(report, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return fill_template(tpl, [(MARKERS[0], css), (MARKERS[1], js), (MARKERS[2], data)])


def main(argv):
    src = argv[1] if len(argv) > 1 else SAMPLE
    with open(src, encoding="utf-8") as f:
        report = json.load(f)
    page = render(report)
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as f:
            f.write(page)
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
