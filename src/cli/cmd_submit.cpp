// colo submit: queue a training job on colod (sbatch-like flags, a TOML job file, or a .rad
// file of the research prototype). Memory estimates run here, with the submitter's rights over
// their own files; colod receives the figure plus the inputs that fingerprint the job.
// The flags and the request they build live in submit_options.cpp (testable without a daemon).
#include <iostream>
#include <memory>

#include "cli/command_registry.h"
#include "cli/submit_options.h"
#include "daemon/client/api_client.h"
#include "daemon/client/job_request.h"

namespace {

void run(const colo::cli::SubmitOptions& o) {
  const nlohmann::json body = colo::daemon::to_json(colo::cli::build_submit_request(o));
  const colo::daemon::ApiClient client(colo::cli::globals().socket);
  const nlohmann::json job = client.call("POST", "/v1/jobs", &body);
  if (o.json) std::cout << job.dump(2) << "\n";
  else std::cout << job.at("id").get<std::uint64_t>() << "\n";
}

colo::cli::RegisterCommand reg_submit([](CLI::App& app) {
  auto o = std::make_shared<colo::cli::SubmitOptions>();
  CLI::App* c = app.add_subcommand("submit", "queue a job on colod: `colo submit [flags] -- command …`, FILE.toml, or --rad FILE");
  colo::cli::add_submit_options(c, *o);
  c->callback([o] { run(*o); });
});

}  // namespace
