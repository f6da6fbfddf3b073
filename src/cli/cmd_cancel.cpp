// colo cancel ID: stop one of your jobs (SIGTERM, SIGKILL after colod's grace period).
#include <iostream>

#include <fmt/format.h>

#include "cli/command_registry.h"
#include "core/error.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "daemon/client/api_client.h"

namespace {

colo::cli::RegisterCommand reg_cancel([](CLI::App& app) {
  auto ids = std::make_shared<std::vector<std::string>>();  // parsed below: "-1" is no id
  auto as_json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("cancel", "cancel jobs (yours; root: anyone's)");
  c->add_option("id", *ids, "job id(s)")->required();
  c->add_flag("--json", *as_json, "print JSON");
  c->callback([ids, as_json] {
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    nlohmann::json out = nlohmann::json::array();
    std::vector<std::int64_t> numbers;
    for (const std::string& s : *ids) numbers.push_back(colo::parse_integer(s, "job id", 1, INT64_MAX));
    // Every id is tried: one that cannot be cancelled (unknown, ended, another user's) is named
    // and the others still go; the exit status says whether all did.
    int failed = 0;
    for (std::int64_t id : numbers) {
      try {
        const nlohmann::json j = client.call("POST", fmt::format("/v1/jobs/{}/cancel", id));
        if (*as_json) out.push_back(j);
        else if (j.at("state") == "cancelled") std::cout << fmt::format("job {} cancelled\n", id);
        else std::cout << fmt::format("job {} is being stopped (SIGTERM, then SIGKILL)\n", id);
      } catch (const colo::UserError& e) {
        if (numbers.size() == 1) throw;
        ++failed;
        std::cout.flush();
        std::cerr << "colo: error: " << colo::one_line(e.what()) << "\n";
      }
    }
    if (*as_json) std::cout << (out.size() == 1 && failed == 0 ? out[0] : out).dump(2) << "\n";
    if (failed > 0)
      throw colo::UserError(fmt::format("{} of {} jobs not cancelled (above)", failed, numbers.size()));
  });
});

}  // namespace
