#pragma once
// The NVML backend: libnvidia-ml is dlopen()ed at run time (never linked), so colo builds and
// runs on machines without the NVIDIA driver; opening fails with one clear GpuError instead.
#include <memory>
#include <string>

#include "gpu/backend.h"

namespace colo::gpu {

struct NvmlOptions {
  // dlopen() name or path. The fake NVML (fake_nvml_env.h) is opened through this same path.
  std::string library = "libnvidia-ml.so.1";
  // SMACT for GPUs without NVML GPM comes from DCGM (dcgm_sampler.h): the library, and
  // "embedded" | "off" | the address of a running nv-hostengine.
  std::string dcgm_library = "libdcgm.so.4";
  std::string dcgm_mode = "embedded";
  double dcgm_update_interval_s = 1.0;
};

// dlopen + dlsym every function colo uses + nvmlInit_v2. Throws GpuError (device "library")
// naming the library or the missing symbol.
std::unique_ptr<GpuBackend> open_nvml_backend(const NvmlOptions& opts = {});

}  // namespace colo::gpu
