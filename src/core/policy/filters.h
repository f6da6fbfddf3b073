#pragma once
// Feasibility filters: each answers "may this job go on this GPU?". A policy is a list of
// filters and one scorer (policies.h); the scheduler also applies the base filters to every
// request whatever the policy.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/candidate.h"

namespace colo {

class Filter {
 public:
  virtual ~Filter() = default;
  virtual std::string_view name() const = 0;
  virtual bool admit(const Candidate& c, const PlacementRequest& r) const = 0;
  // One phrase for the user: why this filter refused `rejected` (non-empty) for `r`, e.g.
  // "needs 12.0 GiB + 2.0 GiB margin; most free is 8.0 GiB on GPU 1".
  virtual std::string why_not(std::span<const Candidate* const> rejected, const PlacementRequest& r) const;
  // Keeps, of `positions` (indices into `cands`, ascending), those this filter admits, in the
  // same order: the answer admit() gives one by one, in one virtual call per request (the
  // scheduler filters every GPU at every decision, thousands on a cluster). An override must
  // keep the order: the scheduler reads a server's GPUs as one run of the list.
  virtual void retain(std::span<const Candidate> cands, const PlacementRequest& r, std::vector<int>& positions) const;
};

// A final filter class derives from this: its retain() calls its own admit() directly (inlined),
// not through the virtual table once per GPU.
template <class Self>
class FilterImpl : public Filter {
 public:
  void retain(std::span<const Candidate> cands, const PlacementRequest& r, std::vector<int>& positions) const final {
    const Self& self = static_cast<const Self&>(*this);
    std::erase_if(positions, [&](int p) { return !self.admit(cands[static_cast<size_t>(p)], r); });
  }
};

// "GPU 0, GPU 3" — the GPUs (GpuSnapshot::index) of `cs`.
std::string gpu_list(std::span<const Candidate* const> cs);
// "12.0 GiB"
std::string format_gib(MiB mib);
using FilterPtr = std::shared_ptr<const Filter>;

// Base: healthy, not drained, not held by a job that must run alone, and a MIG slot holds
// at most one job (no collocation inside a MIG slice).
FilterPtr usable();
// No colo job on the GPU (nor reserved on it this round).
FilterPtr idle_only();
// The GPU's total memory is at least `need_mib` (for a job that must run alone: an idle MIG
// instance too small for it is no place to retry).
FilterPtr holds(MiB need_mib);
// Known need: available ≥ need + margin (and ≥ min_free too when floor_always). Unknown need:
// available ≥ min_free.
FilterPtr fits_memory(MiB margin_mib, MiB min_free_unknown_mib, bool floor_always = false);
// SMACT window average strictly below the cap. A GPU whose SMACT cannot be measured passes:
// the policy then falls back to memory-only conditions (the daemon says so at start).
FilterPtr smact_below(double cap);
// Admission on predictions: the predicted solo SMACT of the jobs already on the GPU plus the
// candidate's must stay ≤ cap; an idle GPU takes any job (alone it may use it all). A job
// without a prediction passes (pair it with smact_below for the measured window); co-runners
// without one add nothing.
FilterPtr smact_predicted(double cap);
// A co-runner must raise the GPU's predicted progress: the solo-seconds of training its jobs do
// per second under the sharing model's slowdown floor F(D, n) = max(1, D) × (1 + k × (n − 1))
// (D = Σ predicted solo SMACT, n jobs, k = `interference` per co-runner), so it admits the job
// when (n + 1) / F(D + d, n + 1) > n / F(D, n). Past a saturated GPU one more job slows every
// job more than it adds; without this the SMACT window is the only brake. An idle GPU takes any
// job; a job without a prediction passes, co-runners without one count as 0 (as smact_predicted).
FilterPtr adds_progress(double interference);

}  // namespace colo
