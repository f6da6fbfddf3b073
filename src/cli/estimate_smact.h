#pragma once
// `colo estimate smact`: a job's solo SM activity and occupancy before it runs (thesis §7.1),
// and the fit and held-out scoring of the model behind it (estimate/utilisation/smact_model.h).
#include <CLI/CLI.hpp>

namespace colo::cli {

void add_smact_subcommand(CLI::App* estimate);

}  // namespace colo::cli
