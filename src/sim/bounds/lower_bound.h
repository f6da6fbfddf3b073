#pragma once
// What no scheduler could beat on a trace (docs/SIMULATOR.md, "Lower bound"):
//   LB = max( max_j (submit_j + solo_j),
//             Σ_j gpus_j × mem_j × (solo_j − ramp_j) / (N × capacity),
//             Σ_j gpus_j × smact_j × solo_j / N )
// The memory term counts only the time after the ramp, when a successful attempt must hold its
// whole memory (during the ramp its memory is not resident yet); ramp_j = min(ramp, solo_j).
// Measured from `origin_s` (the first submission, where the makespan starts): the critical path
// counts from it, the memory and SM terms are durations. Jobs that can never complete (more GPUs
// than one server has, or more memory than any place) are left out.
#include <optional>
#include <span>

#include "sim/sim_job.h"

namespace colo::sim {

struct LowerBound {
  Seconds critical_path = 0;  // max submit + solo, from origin_s
  Seconds memory = 0;
  Seconds sm_activity = 0;
  Seconds packing = 0;  // the configuration programme (packing_bound.h), when the caller ran it
  Seconds value() const;
};

// gpus: all GPUs; gpus_per_node: the most one job can get (a job's GPUs come from one server);
// gpu_memory_mib: what one GPU holds (with MIG: the sum of its instances); largest_place_mib: the
// most one job can get in one place (with MIG: the largest instance; default gpu_memory_mib).
LowerBound lower_bound(std::span<const SimJobSpec> jobs, int gpus, int gpus_per_node, MiB gpu_memory_mib,
                       Seconds ramp_s, Seconds origin_s = 0, std::optional<MiB> largest_place_mib = std::nullopt);

}  // namespace colo::sim
