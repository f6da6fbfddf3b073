#include "core/policy/node_weight.h"

#include <algorithm>
#include <cmath>

namespace colo {

int node_weight(const std::vector<GpuLoad>& gpus, double smact_cap) {
  double best_under_cap = -1, best_any = -1;  // the largest free fraction of one GPU
  for (const GpuLoad& g : gpus) {
    if (!g.healthy || g.total_mib <= 0) continue;
    const double free = std::clamp(1.0 - static_cast<double>(g.used_mib) / static_cast<double>(g.total_mib), 0.0, 1.0);
    best_any = std::max(best_any, free);
    if (!g.smact || *g.smact < smact_cap) best_under_cap = std::max(best_under_cap, free);
  }
  if (best_any < 0) return kNoGpuNodeWeight;
  const auto memory_term = [](double free) { return static_cast<int>(std::lround(1000.0 * (1.0 - free))); };
  if (best_under_cap >= 0) return kIdleNodeWeight + memory_term(best_under_cap);
  return kBusyNodeWeight + memory_term(best_any);
}

}  // namespace colo
