#pragma once
// Seeded random job streams for property tests and benchmarks. Not a model of any real cluster:
// it only has to cover the cases (small and large jobs, multi-GPU jobs, estimates that are too
// low, too high or missing) with controllable load.
#include <cstdint>
#include <vector>

#include "sim/sim_job.h"

namespace colo::sim {

struct SyntheticParams {
  std::size_t jobs = 100;
  Seconds mean_interarrival_s = 60;   // exponential gaps
  Seconds min_solo_s = 60, max_solo_s = 4 * 3600;  // log-uniform
  MiB min_mib = 1000, max_mib = 30000;             // log-uniform, per GPU
  double multi_gpu_fraction = 0.1;    // of jobs, 2 GPUs each (if max_gpus_per_job ≥ 2)
  int max_gpus_per_job = 2;
  // Estimates: with these probabilities unknown / too low (×U[0.3, 0.9]) / too high
  // (×U[1.1, 2]); otherwise exact.
  double p_unknown = 0.2, p_under = 0.2, p_over = 0.2;
};

std::vector<SimJobSpec> synthetic_jobs(const SyntheticParams& p, std::uint64_t seed);

}  // namespace colo::sim
