#pragma once
// colo's placement reaching Slurm, at node granularity (docs/SLURM.md, "Collocation quality"):
// Slurm allocates the lowest-Weight nodes first, so `colo slurm node-weight` keeps each GPU
// node's Weight at what MAGM and the SMACT precondition would rank it: nodes whose emptiest GPU
// (among those under the SMACT cap) has the most free memory first; nodes with no GPU under the
// cap after every node that has one.
#include <optional>
#include <vector>

#include "core/units.h"

namespace colo::slurm {

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

}  // namespace colo::slurm
