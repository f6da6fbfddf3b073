#pragma once
// Where the simulator gets a job's memory estimate. An Estimator is any function from a workload
// to a MemoryNeed, so a live estimator (allocsim, gpumemnet computed from the model summary, …)
// plugs in without touching the simulator:
//
//   colo::sim::register_estimator("allocsim", [](const colo::sim::EstimatorContext& ctx) {
//     return colo::sim::Estimator([dir = ctx.summaries_dir](const colo::sim::Workload& w) {
//       return colo::MemoryNeed::of(my_allocsim(dir / w.summary), "allocsim");
//     });
//   });
//
// after which `colo sim --estimator allocsim` and the `--compare` matrix can use it. Register
// from code that is linked into the binary (e.g. a src/cli/*.cpp file or main), not from a
// static initialiser inside a library archive, which the linker may drop.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "sim/workloads/workload.h"

namespace colo::sim {

using Estimator = std::function<MemoryNeed(const Workload&)>;

struct EstimatorContext {
  std::filesystem::path workloads_csv;  // the catalog the workloads came from
  std::filesystem::path summaries_dir;  // <catalog dir>/summaries: the model summaries
};

using EstimatorFactory = std::function<Estimator(const EstimatorContext&)>;

// Built in, from the catalog's columns: none (unknown need), oracle (measured_mib), horus,
// faketensor, gpumemnet-csv (the prototype's published estimates; an empty cell = unknown).
// Live, from each workload's summary file through src/estimate: allocsim, gpumemnet; and trace,
// from the workload's own network probed on the CPU (others fall back to allocsim).
// fixed:SIZE (e.g. fixed:10GiB): every job asks for SIZE whatever it needs — a user's guess or a
// site's default request (plain Slurm's `--gres=shard:10` of 1 GiB shards).
// Registering a name again replaces it.
void register_estimator(std::string name, EstimatorFactory factory);
// Throws colo::UserError naming the known estimators when `name` is not one of them.
Estimator make_estimator(std::string_view name, const EstimatorContext& ctx);
std::vector<std::string> estimator_names();
EstimatorContext estimator_context_for(const std::filesystem::path& workloads_csv);

}  // namespace colo::sim
