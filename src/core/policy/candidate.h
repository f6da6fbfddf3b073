#pragma once
// What filters and scorers look at: one GPU as seen at decision time, with the ledger applied
// and with the placements already made earlier in the same decision round.
#include <optional>

#include "core/gpu.h"
#include "core/job.h"

namespace colo {

struct Candidate {
  const GpuSnapshot* gpu = nullptr;
  int position = 0;        // index into the snapshot list (round-robin order)
  MiB available_mib = 0;   // total − max(Σ reserved, used), after this round's placements
  int jobs = 0;            // colo jobs on it (running + reserved this round)
  bool held_alone = false;
  int node_weight = 0;     // its server's rank (node_weight.h), for the node-weight policy only
  double placed_smact = 0; // Σ predicted solo SMACT of the jobs on it (ledger + this round)
};

// What the job being placed asks for, after recovery rules were applied.
struct PlacementRequest {
  const Job* job = nullptr;
  std::optional<MiB> need_mib;  // per-GPU need, unknown if nullopt
  bool alone = false;       // must run alone (exclusive policy, strict recovery, too big)
  bool recovery = false;        // comes from the recovery queue
};

}  // namespace colo
