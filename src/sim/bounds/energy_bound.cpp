#include "sim/bounds/energy_bound.h"

#include <algorithm>

namespace colo::sim {

std::optional<double> energy_lower_bound(const PowerParams& p, int gpus, Seconds makespan_bound_s,
                                         double busy_gpu_seconds_bound, double work_gpu_seconds) {
  if (!(p.idle_watts >= 0 && p.idle_watts <= p.busy_watts && p.busy_watts <= p.max_watts) || gpus < 1)
    return std::nullopt;
  const double busy = std::max(busy_gpu_seconds_bound, work_gpu_seconds);
  return p.idle_watts * static_cast<double>(gpus) * makespan_bound_s + (p.busy_watts - p.idle_watts) * busy +
         (p.max_watts - p.busy_watts) * work_gpu_seconds;
}

}  // namespace colo::sim
