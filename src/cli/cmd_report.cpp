// colo report: the report page of colod's own history (the same page as `colo sim --report`).
//   colo report --state-dir /var/lib/colo --report out.html
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "cli/number_option.h"
#include "cli/sim_report.h"
#include "daemon/history_report.h"

namespace colo::cli {

namespace {

struct ReportArgs {
  std::string state_dir = "/var/lib/colo";
  std::string out;
};

void run(const ReportArgs& a) {
  check_report_inputs(a.out);
  nlohmann::json report;
  report["title"] = fmt::format("colod history — {}", a.state_dir);
  report["generated_by"] = fmt::format("colo report --state-dir {} --report {}", a.state_dir, a.out);
  report["runs"] = nlohmann::json::array({daemon::history_report_run(a.state_dir)});
  write_report(a.out, report);
  std::cerr << fmt::format("colo report: wrote {}\n", a.out);
}

RegisterCommand reg_report([](CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Write the report page of colod's own history (read-only on its database)");
  cmd->add_option("--state-dir", args->state_dir, "colod's state directory (holds colo.db)")
      ->capture_default_str()
      ->check(non_empty());
  cmd->add_option("--report", args->out, "HTML file to write (self-contained)")->required();
  cmd->callback([args] { run(*args); });
});

}  // namespace

}  // namespace colo::cli
