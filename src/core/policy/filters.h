#pragma once
// Feasibility filters: each answers "may this job go on this GPU?". A policy is a list of
// filters and one scorer (policies.h); the scheduler also applies the base filters to every
// request whatever the policy.
#include <memory>
#include <string>
#include <string_view>

#include "core/policy/candidate.h"

namespace colo {

class Filter {
 public:
  virtual ~Filter() = default;
  virtual std::string_view name() const = 0;
  virtual bool admit(const Candidate& c, const PlacementRequest& r) const = 0;
};
using FilterPtr = std::shared_ptr<const Filter>;

// Base: healthy, not drained, not held by a job that must run alone, and a MIG slot holds
// at most one job (no collocation inside a MIG slice).
FilterPtr usable();
// No colo job on the GPU (nor reserved on it this round).
FilterPtr idle_only();
// Known need: available ≥ need + margin. Unknown need: available ≥ min_free.
FilterPtr fits_memory(MiB margin_mib, MiB min_free_unknown_mib);
// SMACT window average strictly below the cap. A GPU whose SMACT cannot be measured passes:
// the policy then falls back to memory-only conditions (the daemon says so at start).
FilterPtr smact_below(double cap);

}  // namespace colo
