#pragma once
// One job of a simulation: what it truly needs (the simulator's ground truth) and what the
// scheduler is told (its memory estimate).
#include <cstdint>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/units.h"
#include "sim/estimator.h"
#include "sim/workloads/trace.h"

namespace colo::sim {

struct SimJobSpec {
  std::string name;         // workload name
  Seconds submit_s = 0;
  int gpus = 1;
  MiB true_mib = 0;         // per GPU, what the job really peaks at
  Seconds solo_s = 0;       // duration alone on its GPU(s)
  double smact = 0;         // solo SM activity 0..1
  MemoryNeed need;          // what the scheduler is told (the estimator's answer)
  double busy = -1;         // solo busy share 0..1 (streams); < 0: the model's default
};

// The jobs of a trace, each workload's estimate given by `estimate`. `duration_jitter` (0 by
// default) scales every solo duration by a seeded uniform factor in [1 − j, 1 + j].
std::vector<SimJobSpec> jobs_from_trace(const Trace& trace, const Estimator& estimate,
                                        double duration_jitter = 0.0, std::uint64_t seed = 0);

}  // namespace colo::sim
