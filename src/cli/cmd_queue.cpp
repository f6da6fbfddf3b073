// colo queue: the caller's jobs that have not ended (root: everyone's); --all adds ended ones.
#include <iostream>

#include <fmt/format.h>

#include "core/one_line.h"
#include "cli/command_registry.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"

namespace {

using nlohmann::json;

std::string need(const json& j) {
  if (j.at("need_mib").is_null()) return "?";
  return colo::daemon::format_mib(j.at("need_mib").get<colo::MiB>()) + " " + colo::one_line(j.at("need_source").get<std::string>());
}

std::string gpus(const json& j) {
  std::string s;
  for (const json& g : j.at("gpus")) s += (s.empty() ? "" : ",") + std::to_string(g.at("index").get<int>());
  return s.empty() ? fmt::format("({})", j.at("gpus_requested").get<int>()) : s;
}

colo::cli::RegisterCommand reg_queue([](CLI::App& app) {
  auto all = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("queue", "list your queued and running jobs (root: all users')");
  c->add_flag("--all", *all, "include jobs that ended");
  c->add_flag("--json", *as_json, "print JSON");
  c->callback([all, as_json] {
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    const json jobs = client.call("GET", *all ? "/v1/jobs?all=1" : "/v1/jobs");
    if (*as_json) {
      std::cout << jobs.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("{:>5}  {:<20} {:<10} {:<11} {:<7} {:<18} {:>3}  {}\n", "ID", "NAME", "USER", "STATE",
                             "GPUS", "NEED", "TRY", "REASON");
    for (const json& j : jobs)
      std::cout << fmt::format("{:>5}  {:<20} {:<10} {:<11} {:<7} {:<18} {:>3}  {}\n", j.at("id").get<std::uint64_t>(),
                               colo::one_line(j.at("name").get<std::string>()).substr(0, 20), colo::one_line(j.at("user").get<std::string>()).substr(0, 10),
                               colo::one_line(j.at("state").get<std::string>()), gpus(j), need(j), j.at("attempt_count").get<int>(),
                               colo::one_line(j.at("reason").get<std::string>()).empty() && j.contains("waiting_reason") &&
                                       j.at("waiting_reason").is_string()
                                   ? "waiting: " + colo::one_line(j.at("waiting_reason").get<std::string>())
                                   : colo::one_line(j.at("reason").get<std::string>()));
  });
});

}  // namespace
