#pragma once
// A server's rank for placement at node granularity: nodes whose emptiest GPU (among those under
// the SMACT cap) has the most free memory first (MAGM's order), nodes with no GPU under the cap
// after every node that has one. `colo slurm node-weight` publishes it as the node's Slurm
// Weight (lowest first; docs/SLURM.md); the `node-weight` policy ranks by it in the simulator,
// so what Slurm does with the weights is what the simulator measures.
#include <optional>
#include <vector>

#include "core/units.h"

namespace colo {

struct GpuLoad {
  MiB total_mib = 0;
  MiB used_mib = 0;
  std::optional<double> smact;  // nullopt: not measurable (counts as under the cap)
  bool healthy = true;
};

constexpr int kIdleNodeWeight = 1;      // a node with an empty GPU under the cap
constexpr int kBusyNodeWeight = 1001;   // + the same memory term: no GPU under the SMACT cap
constexpr int kNoGpuNodeWeight = 2001;  // no healthy GPU at all

int node_weight(const std::vector<GpuLoad>& gpus, double smact_cap);

}  // namespace colo
