#pragma once
// Small builders shared by the core tests.
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/job.h"
#include "core/ledger.h"
#include "core/scheduler.h"

namespace colo::test {

inline GpuSnapshot gpu(int index, MiB total, MiB used = 0, std::optional<double> smact = 0.0) {
  GpuSnapshot g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.total_mib = total;
  g.used_mib = used;
  g.smact = smact;
  return g;
}

inline Job job(JobId id, std::optional<MiB> need, int gpus = 1) {
  Job j;
  j.id = id;
  j.user = "alice";
  j.command = "train.py";
  j.gpus = gpus;
  if (need) j.need = MemoryNeed::of(*need, "oracle");
  return j;
}

// GPUs + ledger + scheduler state: one decide() call as the daemon or the simulator makes it.
struct World {
  std::vector<GpuSnapshot> gpus;
  Ledger ledger;
  SchedulerState state;
  Decision decide(const Scheduler& s, const std::vector<Job>& main, const std::vector<Job>& rec = {},
                  bool explain = false) {
    SchedulerInput in{rec, main, gpus, &ledger, 0};
    in.explain = explain;
    return s.decide(in, state);
  }
  // Reserves what a decision placed, as the daemon does after launching.
  void apply(const Decision& d) {
    for (const auto& p : d.placements)
      for (int g : p.gpu_indices) ledger.reserve(p.job, g, p.reserve_mib, p.alone, 0);
  }
};

}  // namespace colo::test
