#pragma once
// MIG instances as scheduling slots: each instance holds at most one job (no collocation inside
// a slice). colo discovers the partitioning an operator made; it never repartitions.
#include <string>
#include <vector>

#include "core/units.h"
#include "gpu/backend.h"

namespace colo::gpu {

struct MigSlot {
  int parent_index = 0;      // NVML index of the physical GPU
  std::string parent_uuid;
  int mig_index = 0;         // MIG device index within the parent
  std::string uuid;          // "MIG-…", goes into CUDA_VISIBLE_DEVICES
  std::string name;
  MiB total_mib = 0;
};

// One slot per MIG instance of every MIG-enabled device, in (parent, mig index) order.
std::vector<MigSlot> mig_slots(const std::vector<DeviceInfo>& devices);

// A MIG-enabled GPU with no instances cannot run anything: a one-line warning per such GPU
// for the daemon log (empty when there is nothing to say).
std::vector<std::string> mig_warnings(const std::vector<DeviceInfo>& devices);

}  // namespace colo::gpu
