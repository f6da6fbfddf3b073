#pragma once
// Small builders shared by the core tests.
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/job.h"

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

}  // namespace colo::test
