#pragma once
// `colo sim --report FILE`: one self-contained HTML page (no network, no external file) with
// the runs' Gantt charts, per-GPU memory and SM activity, queue length and, for --compare, the
// policy × estimator × sharing bars. The page is web/report-template.html with the chart code
// (web/static/, uPlot vendored from npm) and the data inlined; docs/DASHBOARD.md describes it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"
#include "sim/timeline.h"

namespace colo::cli {

struct ReportRun {
  std::string label;  // "magm + oracle + mps"
  const sim::SimResult* result = nullptr;
  const sim::SimTimeline* timeline = nullptr;  // may be null (bars only)
};

// The COLO_REPORT object (docs/DASHBOARD.md): `runs` with timelines, `compare` rows when given.
// With MIG, `mig_slots` holds each place a job can get (GPU × instance: its memory), in slot order;
// the page then has one row and one series per instance, with its own capacity.
struct MigSlot {
  std::string label;  // "GPU 0 · 3g.20gb"
  long long memory_mib = 0;
};
nlohmann::json report_json(const std::string& title, const std::string& command, int gpus, long long gpu_memory_mib,
                           const std::vector<ReportRun>& runs, const nlohmann::json& compare,
                           const nlohmann::json& exclusive, const std::vector<MigSlot>& mig_slots = {});

// Fails early (before a long simulation) when the assets are missing or the directory is not there.
void check_report_inputs(const std::string& path);

// Writes the page: the template's placeholder lines replaced by the inlined CSS, JS and data.
// Throws colo::UserError when the assets are missing or the file cannot be written.
void write_report(const std::string& path, const nlohmann::json& report);

}  // namespace colo::cli
