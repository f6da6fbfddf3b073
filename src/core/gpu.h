#pragma once
// What the core knows about one GPU (or one MIG instance) at decision time. The daemon fills it
// from NVML, the simulator from its GPU model; both average SMACT over the same window.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace colo {

enum class SharingMode { Plain, Mps, MigInstance };
std::string_view to_string(SharingMode m);

struct GpuSnapshot {
  int index = 0;
  std::string uuid;
  MiB total_mib = 0;
  MiB used_mib = 0;             // observed by the monitor, all processes
  std::optional<double> smact;  // SM activity 0..1, window average; nullopt = not measurable
  std::vector<JobId> running;   // colo jobs placed here and not finished
  SharingMode mode = SharingMode::Plain;
  bool healthy = true;
  bool drained = false;  // operator or daemon took it out of scheduling
  int node = 0;  // the server it is in (the simulator's clusters): a job's GPUs come from one
};

}  // namespace colo
