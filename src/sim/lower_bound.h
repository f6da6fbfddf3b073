#pragma once
// What no scheduler could beat on a trace (docs/SIMULATOR.md, "Lower bound"):
//   LB = max( max_j (submit_j + solo_j),
//             Σ_j gpus_j × mem_j × (solo_j − ramp_j) / (N × capacity),
//             Σ_j gpus_j × smact_j × solo_j / N )
// The memory term counts only the time after the ramp, when a successful attempt must hold its
// whole memory (during the ramp its memory is not resident yet); ramp_j = min(ramp, solo_j).
// Measured from time 0 (trace offsets start at 0). Jobs that can never complete (more GPUs than
// the server has, or more memory than a GPU) are left out.
#include <optional>
#include <span>

#include "sim/sim_job.h"

namespace colo::sim {

struct LowerBound {
  Seconds critical_path = 0;  // max submit + solo
  Seconds memory = 0;
  Seconds sm_activity = 0;
  Seconds value() const;
};

// gpu_memory_mib: what one GPU holds (with MIG: the sum of its instances); largest_place_mib: the
// most one job can get in one place (with MIG: the largest instance; default gpu_memory_mib).
LowerBound lower_bound(std::span<const SimJobSpec> jobs, int gpus, MiB gpu_memory_mib, Seconds ramp_s,
                       std::optional<MiB> largest_place_mib = std::nullopt);

}  // namespace colo::sim
