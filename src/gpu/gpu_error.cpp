// GpuError and the names of the SMACT measurement paths.
#include "gpu/backend.h"

namespace colo::gpu {

GpuError::GpuError(std::string device, std::string call, const std::string& detail)
    : std::runtime_error(device + ": " + call + " failed: " + detail),
      device_(std::move(device)),
      call_(std::move(call)) {}

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
