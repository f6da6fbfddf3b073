#pragma once
// `colo sim collocation`: the thesis' chapter-4 experiment on the model — jobs started together
// on one GPU under streams, MPS or MIG (sim/collocation_replay.h).
//   colo sim collocation --job NAME:SMACT:SOLO[:BUSY[:MEM]] … --sharing streams|mps|mig
//                        [--mig 3g.20gb,3g.20gb] [--model FILE] [--json]
#include <CLI/CLI.hpp>

namespace colo::cli {

// Adds the subcommand under `sim`; returns it (sim's own callback skips when it ran).
CLI::App* add_sim_collocation(CLI::App* sim);

}  // namespace colo::cli
