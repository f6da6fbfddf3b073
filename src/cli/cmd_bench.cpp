// `colo bench`: measurements on this machine's GPUs that feed colo's models.
#include "cli/bench_collocation.h"
#include "cli/command_registry.h"

namespace colo::cli {

namespace {

RegisterCommand reg_bench([](CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "measure this machine's GPUs for colo's models (collocation slowdowns)");
  add_bench_collocation(cmd);
  cmd->require_subcommand(1);
});

}  // namespace

}  // namespace colo::cli
