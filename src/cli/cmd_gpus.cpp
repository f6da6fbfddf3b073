// colo gpus: what colod manages — memory used/reserved/available, SMACT, jobs, drain state.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/one_line.h"
#include "cli/command_registry.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"

namespace {

using nlohmann::json;
using colo::daemon::format_mib;

colo::cli::RegisterCommand reg_gpus([](CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("gpus", "show the managed GPUs and the jobs on them");
  c->add_flag("--json", *as_json, "print JSON");
  c->callback([as_json] {
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    const json gpus = client.call("GET", "/v1/gpus");
    if (*as_json) {
      std::cout << gpus.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("{:>3}  {:<40} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}  {:<10} {}\n", "GPU", "UUID", "TOTAL",
                             "USED", "RESERVED", "AVAIL", "SMACT", "POWER", "STATE", "JOBS");
    std::vector<std::string> notes;  // why a GPU is out of scheduling, which metrics are unknown
    for (const json& g : gpus) {
      const int index = g.at("index").get<int>();
      std::string jobs;
      for (const json& j : g.at("jobs")) jobs += (jobs.empty() ? "" : ",") + std::to_string(j.get<std::uint64_t>());
      const bool healthy = g.at("healthy").get<bool>();
      const bool admin = g.value("admin_drained", g.at("drained").get<bool>() && healthy);
      std::string state = !healthy ? (g.value("recovery_good_samples", 0) > 0 ? "recovering" : "unhealthy")
                          : admin   ? "drained"
                                    : "ok";
      if (!healthy && admin) state += "+drained";
      if (g.at("mps").get<bool>()) state += "+mps";
      const std::string uuid = colo::one_line(g.at("uuid").get<std::string>());
      std::cout << fmt::format("{:>3}  {:<40} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}  {:<10} {}\n", index, uuid,
                               format_mib(g.at("total_mib").get<colo::MiB>()), format_mib(g.at("used_mib").get<colo::MiB>()),
                               format_mib(g.at("reserved_mib").get<colo::MiB>()),
                               format_mib(g.at("available_mib").get<colo::MiB>()),
                               g.at("smact").is_null() ? std::string("n/a") : fmt::format("{:.0f}%", g.at("smact").get<double>() * 100),
                               g.at("power_w").is_null() ? std::string("n/a") : fmt::format("{:.0f}W", g.at("power_w").get<double>()),
                               state, jobs.empty() ? "-" : jobs);
      const std::string health = colo::one_line(g.value("health_reason", std::string()));
      if (!healthy) {
        const json probe = g.value("next_probe_in_s", json());
        notes.push_back(fmt::format("GPU {} unhealthy: {}{}", index, health.empty() ? colo::one_line(g.at("error").get<std::string>()) : health,
                                    probe.is_number() ? fmt::format("; next probe in {:.0f} s", probe.get<double>())
                                                      : std::string("; returns by itself when healthy")));
      } else if (!health.empty()) {
        notes.push_back(fmt::format("GPU {} warning: {}", index, health));
      }
      if (admin)
        notes.push_back(fmt::format("GPU {} drained by an operator: {} (`colo resume {}` lifts it)", index,
                                    colo::one_line(g.at("drain_reason").get<std::string>()), index));
      const json metric_errors = g.value("metric_errors", json::object());
      for (const auto& [field, what] : metric_errors.items())
        notes.push_back(fmt::format("GPU {} {} unknown: {}", index, field, what.get<std::string>()));
    }
    for (const std::string& n : notes) std::cout << n << "\n";
  });
});

}  // namespace
