#pragma once
// The reservation ledger. A job that was just launched has not allocated its memory yet, so the
// monitor still shows its GPU as free; without the ledger a second job would be placed into
// memory the first one is about to take. For every placed job the ledger holds
//   reserved = max(estimate, observed peak so far)
// and a GPU's available memory is total − max(Σ reserved, observed used).
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/gpu.h"
#include "core/units.h"

namespace colo {

class Ledger {
 public:
  struct Entry {
    MiB estimate = 0;       // what the job was placed with
    MiB observed_peak = 0;  // highest per-process usage the monitor has seen
    bool alone = false; // the job must run alone on this GPU (strict recovery, whole-GPU jobs)
    Seconds placed_at = 0;
    std::optional<double> smact;  // the job's predicted solo SM activity, if any
    MiB reserved() const { return estimate > observed_peak ? estimate : observed_peak; }
  };

  // Records a placement of `job` on `gpu`. Reserving the same (job, gpu) twice replaces it.
  void reserve(JobId job, int gpu, MiB estimate, bool alone, Seconds now, std::optional<double> smact = std::nullopt);
  // Raises the observed peak of (job, gpu); unknown pairs are ignored (job already released).
  void observe(JobId job, int gpu, MiB used_mib);
  // A job that runs alone (a recovery retry) whose peak has now been observed lets others join:
  // its entry stops holding the GPU alone and reserves `reserve_mib` (its observed peak + a
  // margin). False when (job, gpu) is unknown or was not held alone.
  bool share(JobId job, int gpu, MiB reserve_mib);
  // Forgets every reservation of the job (it ended, crashed or was cancelled).
  void release(JobId job);

  MiB reserved_on(int gpu) const;
  int jobs_on(int gpu) const;
  bool held_alone(int gpu) const;
  // Σ of the predicted solo SM activity of the jobs reserved on the GPU (jobs without a
  // prediction add nothing).
  double predicted_smact(int gpu) const;
  // total − max(Σ reserved, observed used), never below zero.
  MiB available(const GpuSnapshot& g) const;
  // A GPU's totals in one look-up (the scheduler reads them for every GPU at every decision):
  // what reserved_on, jobs_on, held_alone and predicted_smact answer one by one.
  struct GpuView {
    MiB reserved = 0;
    int jobs = 0;
    bool alone = false;
    double smact = 0;
  };
  // Inline, as is totals_of: the scheduler asks for every GPU at every decision.
  GpuView view(int gpu) const {
    const GpuTotals* t = totals_of(gpu);
    if (!t) return {};
    return {t->reserved, t->jobs, t->alone > 0, std::max(t->smact, 0.0)};
  }
  // total − max(reserved, observed used), never below zero: available() from a view's reserved.
  static MiB available(const GpuSnapshot& g, MiB reserved) {
    return std::max<MiB>(g.total_mib - std::max(reserved, g.used_mib), 0);
  }
  std::optional<Entry> entry(JobId job, int gpu) const;
  std::vector<int> gpus_of(JobId job) const;
  bool empty() const { return by_job_.empty(); }

 private:
  struct GpuTotals {
    MiB reserved = 0;
    int jobs = 0;
    int alone = 0;
    double smact = 0;
  };
  void add_totals(int gpu, const Entry& e, int sign);
  GpuTotals& totals_for(int gpu);
  // nullptr: nothing reserved on it.
  const GpuTotals* totals_of(int gpu) const {
    if (gpu < 0 || gpu >= kDense) return sparse_totals_of(gpu);
    if (static_cast<std::size_t>(gpu) >= by_gpu_.size()) return nullptr;
    const GpuTotals& t = by_gpu_[static_cast<std::size_t>(gpu)];
    return t.jobs == 0 ? nullptr : &t;
  }
  const GpuTotals* sparse_totals_of(int gpu) const;

  std::unordered_map<JobId, std::map<int, Entry>> by_job_;
  // Per-GPU totals, indexed by the GPU's index (dense: the scheduler reads every GPU's at every
  // decision); an index outside [0, kDense) — none the daemon or simulator makes — goes to the map.
  static constexpr int kDense = 1 << 20;
  std::vector<GpuTotals> by_gpu_;
  std::unordered_map<int, GpuTotals> by_gpu_sparse_;
};

}  // namespace colo
