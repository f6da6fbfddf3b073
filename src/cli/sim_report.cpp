#include "cli/sim_report.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/output_file.h"
#include "common/resource_path.h"
#include "core/error.h"
#include "common/ascii_lower.h"

namespace colo::cli {

using nlohmann::json;

namespace {

// A browser draws a few thousand points per series without effort; longer runs keep every k-th
// point (and the last), which a step chart of hours of trace cannot tell apart at screen width.
constexpr std::size_t kMaxPoints = 4000;

json summary_of(const sim::SimResult& r) {
  return {{"makespan_s", r.makespan_s}, {"energy_mj", r.energy_mj}, {"avg_wait_s", r.avg_wait_s},
          {"avg_jct_s", r.avg_jct_s},   {"oom_crashes", r.oom_crashes}, {"lower_bound_s", r.lower_bound_s},
          {"energy_lower_bound_mj", r.energy_lower_bound_mj ? json(*r.energy_lower_bound_mj) : json()},
          {"completed", r.completed},   {"jobs", r.jobs}, {"policy", r.policy}};
}

// A chart of a few dozen lines is still readable; a large cluster draws the GPUs whose memory
// peaked highest (the idle ones last) and says how many it left out. 100 000 GPUs' series made a
// 163 MB page; the Gantt chart still shows every GPU's jobs.
constexpr std::size_t kMaxGpuSeries = 64;

json series_of(const sim::SimTimeline& tl, int gpus) {
  const std::size_t n = tl.points.size();
  const std::size_t step = n > kMaxPoints ? (n + kMaxPoints - 1) / kMaxPoints : 1;
  const auto rows = static_cast<std::size_t>(gpus);
  // Which GPUs get a series: all of them, or the kMaxGpuSeries with the highest peak memory
  // (then SM activity; ties by index), drawn in their own order.
  std::vector<std::size_t> shown(rows);
  for (std::size_t g = 0; g < rows; ++g) shown[g] = g;
  std::size_t idle_left_out = 0;
  if (rows > kMaxGpuSeries) {
    std::vector<std::pair<double, double>> peak(rows, {0.0, 0.0});
    for (const sim::TimelinePoint& p : tl.points)
      for (std::size_t g = 0; g < rows && g < p.used_mib.size(); ++g) {
        peak[g].first = std::max(peak[g].first, static_cast<double>(p.used_mib[g]));
        peak[g].second = std::max(peak[g].second, static_cast<double>(p.smact[g]));
      }
    std::stable_sort(shown.begin(), shown.end(), [&](std::size_t a, std::size_t b) { return peak[a] > peak[b]; });
    for (std::size_t i = kMaxGpuSeries; i < rows; ++i)
      if (peak[shown[i]] == std::pair<double, double>{0.0, 0.0}) ++idle_left_out;
    shown.resize(kMaxGpuSeries);
    std::sort(shown.begin(), shown.end());
  }
  json t = json::array(), queue = json::array();
  std::vector<json> used(shown.size(), json::array()), smact(shown.size(), json::array());
  for (std::size_t i = 0; i < n; i += step) {
    const std::size_t k = (i + step >= n) ? n - 1 : i;  // the last point always
    const sim::TimelinePoint& p = tl.points[k];
    t.push_back(p.t);
    queue.push_back(p.queue);
    for (std::size_t j = 0; j < shown.size(); ++j) {
      if (shown[j] >= p.used_mib.size()) continue;
      used[j].push_back(p.used_mib[shown[j]]);
      smact[j].push_back(p.smact[shown[j]]);
    }
    if (k == n - 1) break;
  }
  json per_gpu = json::array();
  for (std::size_t j = 0; j < shown.size(); ++j)
    per_gpu.push_back({{"slot", shown[j]}, {"used_mib", std::move(used[j])}, {"smact", std::move(smact[j])}});
  json out{{"t", t}, {"gpus", per_gpu}, {"queue_length", queue}};
  if (shown.size() < rows)
    out["gpus_left_out"] = {{"count", rows - shown.size()}, {"idle", idle_left_out}, {"of", rows}};
  return out;
}

std::string read_asset(const std::string& rel) {
  const std::string p = resource_path("COLO_WEB", "web", rel);
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw UserError(fmt::format("--report: the page asset '{}' is missing (looked in {})", rel,
                                resource_search_text("COLO_WEB", "web")));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Inlined text must not end the <script>/<style> element it sits in.
std::string inline_safe(std::string s, const std::string& what, const char* closing) {
  if (ascii_lower(s).find(closing) != std::string::npos)
    throw UserError(fmt::format("--report: {} contains '{}' and cannot be inlined", what, closing));
  return s;
}

// Replaces each marker of the template (found in the template itself, so inlined code that
// happens to mention a marker is never mistaken for one).
std::string fill_template(const std::string& tpl, const std::vector<std::pair<std::string, std::string>>& parts) {
  std::vector<std::pair<std::size_t, std::size_t>> at;  // (position, index into parts)
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto pos = tpl.find(parts[i].first);
    if (pos == std::string::npos)
      throw UserError(fmt::format("--report: web/report-template.html has no '{}' placeholder", parts[i].first));
    at.emplace_back(pos, i);
  }
  std::sort(at.begin(), at.end());
  std::string out;
  std::size_t from = 0;
  for (const auto& [pos, i] : at) {
    out.append(tpl, from, pos - from);
    out += parts[i].second;
    from = pos + parts[i].first.size();
  }
  out.append(tpl, from, std::string::npos);
  return out;
}

}  // namespace

json report_json(const std::string& title, const std::string& command, int gpus, long long gpu_memory_mib,
                 const std::vector<ReportRun>& runs, const json& compare, const json& exclusive,
                 const std::vector<MigSlot>& mig_slots) {
  json out;
  out["title"] = title;
  out["generated_by"] = command;
  json rs = json::array();
  for (const ReportRun& r : runs) {
    json run{{"label", r.label}, {"summary", summary_of(*r.result)}, {"gpus", gpus}, {"gpu_memory_mib", gpu_memory_mib}};
    const int rows = mig_slots.empty() ? gpus : static_cast<int>(mig_slots.size());
    if (!mig_slots.empty()) {
      // One row per instance; there is no one capacity, each slot has its own.
      run["gpus"] = rows;
      run["gpu_memory_mib"] = nullptr;
      run["physical_gpus"] = gpus;
      json slots = json::array();
      for (const MigSlot& s : mig_slots) slots.push_back({{"label", s.label}, {"memory_mib", s.memory_mib}});
      run["slots"] = std::move(slots);
    }
    json jobs = json::array();
    if (r.timeline) {
      for (const sim::AttemptSpan& a : r.timeline->attempts) {
        const auto& o = r.result->outcomes.at(a.job);
        jobs.push_back({{"id", a.job}, {"workload", o.name}, {"gpus", a.gpus}, {"submit", o.submit_s},
                        {"start", a.start}, {"end", a.end >= 0 ? json(a.end) : json(nullptr)},
                        {"state", a.state.empty() ? "running" : a.state}, {"collocated", a.collocated},
                        {"attempt", a.attempt}});
      }
      run["series"] = series_of(*r.timeline, rows);
    }
    run["jobs"] = jobs;
    rs.push_back(std::move(run));
  }
  out["runs"] = rs;
  if (!compare.is_null()) out["compare"] = compare;
  if (!exclusive.is_null()) {
    out["exclusive"] = exclusive;
  }
  // One line under every bar: the least of the runs' bounds (each sharing model has its own).
  if (!runs.empty()) {
    double lb = runs.front().result->lower_bound_s;
    for (const auto& run : runs) lb = std::min(lb, run.result->lower_bound_s);
    out["lower_bound_s"] = lb;
  }
  return out;
}

void check_report_inputs(const std::string& path) {
  for (const char* rel : {"report-template.html", "static/vendor/uplot/uPlot.min.css", "static/style.css",
                          "static/vendor/uplot/uPlot.iife.min.js", "static/charts.js", "static/report.js"})
    read_asset(rel);
  check_output_path(path, "--report");  // before the simulation, not after it
}

void write_report(const std::string& path, const json& report) {
  const std::string tpl = read_asset("report-template.html");
  const std::string css = inline_safe(read_asset("static/vendor/uplot/uPlot.min.css") + "\n" + read_asset("static/style.css"),
                                      "the CSS", "</style");
  const std::string js = inline_safe(read_asset("static/vendor/uplot/uPlot.iife.min.js") + "\n;\n" +
                                         read_asset("static/charts.js") + "\n;\n" + read_asset("static/report.js"),
                                     "the chart code", "</script");
  // A workload name may hold "</script>" or "<!--<script>", which would end or swallow the
  // element: every '<' is written as the JSON escape \u003c (the same string to JS).
  std::string data;
  for (char c : report.dump(-1, ' ', false, json::error_handler_t::replace)) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  const std::string page =
      fill_template(tpl, {{"/*COLO_INLINE_CSS*/", css}, {"/*COLO_INLINE_JS*/", js}, {"/*COLO_REPORT_DATA*/", data}});
  write_output_file(path, page, "--report");
}

}  // namespace colo::cli
