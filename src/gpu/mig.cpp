// MIG instances as one-job slots.
#include "gpu/mig.h"

namespace colo::gpu {

std::vector<MigSlot> mig_slots(const std::vector<DeviceInfo>& devices) {
  std::vector<MigSlot> out;
  for (const DeviceInfo& d : devices) {
    if (!d.mig_enabled || !d.error.empty()) continue;
    for (const MigInstanceInfo& m : d.mig_instances) {
      MigSlot s;
      s.parent_index = d.index;
      s.parent_uuid = d.uuid;
      s.mig_index = m.index;
      s.uuid = m.uuid;
      s.name = m.name;
      s.total_mib = m.total_mib;
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::string> mig_warnings(const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> out;
  for (const DeviceInfo& d : devices) {
    if (d.mig_enabled && d.error.empty() && d.mig_instances.empty()) {
      out.push_back("GPU " + std::to_string(d.index) + " (" + d.uuid +
                    ") has MIG enabled but no MIG instances; it cannot run jobs until an "
                    "operator creates some (colo never repartitions)");
    }
  }
  return out;
}

}  // namespace colo::gpu
