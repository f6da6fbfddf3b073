// colo gpus: what colod manages — memory used/reserved/available, SMACT, jobs, drain state.
#include <iostream>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"

namespace {

using nlohmann::json;
using colo::daemon::format_mib;

colo::cli::RegisterCommand reg([](CLI::App& app) {
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
    std::cout << fmt::format("{:>3}  {:<40} {:>9} {:>9} {:>9} {:>9} {:>6}  {:<10} {}\n", "GPU", "UUID", "TOTAL", "USED",
                             "RESERVED", "AVAIL", "SMACT", "STATE", "JOBS");
    for (const json& g : gpus) {
      std::string jobs;
      for (const json& j : g.at("jobs")) jobs += (jobs.empty() ? "" : ",") + std::to_string(j.get<std::uint64_t>());
      std::string state = !g.at("healthy").get<bool>() ? "unhealthy" : g.at("drained").get<bool>() ? "drained" : "ok";
      if (g.at("mps").get<bool>()) state += "+mps";
      const std::string uuid = g.at("uuid").get<std::string>();
      std::cout << fmt::format("{:>3}  {:<40} {:>9} {:>9} {:>9} {:>9} {:>6}  {:<10} {}\n", g.at("index").get<int>(),
                               uuid,
                               format_mib(g.at("total_mib").get<colo::MiB>()), format_mib(g.at("used_mib").get<colo::MiB>()),
                               format_mib(g.at("reserved_mib").get<colo::MiB>()),
                               format_mib(g.at("available_mib").get<colo::MiB>()),
                               g.at("smact").is_null() ? std::string("n/a") : fmt::format("{:.0f}%", g.at("smact").get<double>() * 100),
                               state, jobs.empty() ? "-" : jobs);
    }
  });
});

}  // namespace
