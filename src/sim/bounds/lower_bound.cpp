#include "sim/bounds/lower_bound.h"

#include <algorithm>

namespace colo::sim {

Seconds LowerBound::value() const { return std::max({critical_path, memory, sm_activity, packing}); }

LowerBound lower_bound(std::span<const SimJobSpec> jobs, int gpus, int gpus_per_node, MiB gpu_memory_mib,
                       Seconds ramp_s, Seconds origin_s, std::optional<MiB> largest_place_mib) {
  LowerBound lb;
  double mem_time = 0, sm_time = 0;
  const MiB largest = largest_place_mib.value_or(gpu_memory_mib);
  for (const SimJobSpec& j : jobs) {
    if (j.gpus > gpus_per_node || j.true_mib > largest) continue;  // never completes: not in the makespan
    lb.critical_path = std::max(lb.critical_path, j.submit_s + j.solo_s - origin_s);
    const double resident = j.solo_s - std::min(ramp_s, j.solo_s);
    mem_time += static_cast<double>(j.gpus) * static_cast<double>(j.true_mib) * resident;
    sm_time += static_cast<double>(j.gpus) * j.smact * j.solo_s;
  }
  lb.memory = mem_time / (static_cast<double>(gpus) * static_cast<double>(gpu_memory_mib));
  lb.sm_activity = sm_time / static_cast<double>(gpus);
  return lb;
}

}  // namespace colo::sim
