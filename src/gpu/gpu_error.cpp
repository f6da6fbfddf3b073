// GpuError and the names of the SMACT measurement paths.
#include "gpu/backend.h"

namespace colo::gpu {

GpuError::GpuError(std::string device, std::string call, const std::string& detail)
    : std::runtime_error(device + ": " + call + " failed: " + detail),
      device_(std::move(device)),
      call_(std::move(call)) {}

DeviceInfo GpuBackend::discover_device(int index) {
  for (DeviceInfo& d : discover())
    if (d.index == index) return std::move(d);
  throw GpuError("GPU " + std::to_string(index), "discover", "no such device");
}

const char* to_string(SmactPath p) {
  switch (p) {
    case SmactPath::NvmlGpm:
      return "nvml-gpm";
    case SmactPath::Dcgm:
      return "dcgm";
    case SmactPath::Unavailable:
      return "unavailable";
  }
  return "unavailable";
}

}  // namespace colo::gpu
