// colo drain GPU / colo resume GPU: take a GPU out of scheduling (running jobs finish) or put
// it back. GPU is the index `colo gpus` shows or a UUID. Root (or colod's user) only.
#include <iostream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "cli/command_registry.h"
#include "daemon/client/api_client.h"
#include "daemon/client/http_message.h"

namespace {

void install(CLI::App& app, bool drain) {
  auto gpu = std::make_shared<std::string>();
  auto reason = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand(drain ? "drain" : "resume",
                                   drain ? "stop placing jobs on a GPU (running jobs finish)" : "place jobs on a drained GPU again");
  c->add_option("gpu", *gpu, "GPU index (as `colo gpus` shows) or UUID")->required();
  if (drain) c->add_option("--reason", *reason, "why (shown by `colo gpus --json`)");
  c->add_flag("--json", *as_json, "print JSON");
  c->callback([gpu, reason, as_json, drain] {
    if (gpu->empty() || gpu->find('/') != std::string::npos || !colo::control_char_in(*gpu).empty())
      throw colo::UserError(fmt::format("GPU '{}': expected an index (as `colo gpus` shows) or a UUID", colo::one_line(*gpu)));
    const colo::daemon::ApiClient client(colo::cli::globals().socket);
    nlohmann::json body = nlohmann::json::object();
    if (!reason->empty()) body["reason"] = *reason;
    const nlohmann::json r = client.call(
        "POST", fmt::format("/v1/gpus/{}/{}", colo::daemon::url_encode(*gpu), drain ? "drain" : "resume"), &body);
    if (*as_json) std::cout << r.dump(2) << "\n";
    else std::cout << fmt::format("GPU {} ({}) {}\n", r.at("index").get<int>(), r.at("uuid").get<std::string>(),
                                  drain ? "drained" : "resumed");
  });
}

colo::cli::RegisterCommand reg_drain([](CLI::App& app) { install(app, true); });
colo::cli::RegisterCommand reg_resume([](CLI::App& app) { install(app, false); });

}  // namespace
