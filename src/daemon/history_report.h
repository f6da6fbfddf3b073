#pragma once
// colod's own history as one run of a report page (`colo report --state-dir DIR --report F`):
// every attempt from the database (where, when, how it ended, whether it shared a GPU), the
// per-GPU memory and SM activity from the samples colod keeps (24 h), and the queue length.
// Times are seconds since the first submission, as in a simulation's report.
#include <string>

#include <nlohmann/json.hpp>

namespace colo::daemon {

// The run object of the report's `runs` (docs/DASHBOARD.md). Opens <state_dir>/colo.db read-only;
// throws colo::UserError when there is no database or it has no jobs.
nlohmann::json history_report_run(const std::string& state_dir);

}  // namespace colo::daemon
