#pragma once
// SM activity and occupancy through DCGM profiling fields (DCGM_FI_PROF_SM_ACTIVE,
// DCGM_FI_PROF_SM_OCCUPANCY) for GPUs without NVML GPM (A100, V100, …): libdcgm is dlopen()ed,
// then either an embedded host engine is started in colod or a running nv-hostengine is
// connected to, the fields are watched on the managed GPUs, and each sample reads the latest
// values. DCGM GPU ids are taken to be NVML indices (DCGM enumerates GPUs in NVML's order).
// Tested against the in-tree fake libdcgm (src/gpu/fake_dcgm/), loaded through this same path.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "gpu/dcgm_api.h"

namespace colo::gpu {

struct DcgmOptions {
  std::string library = "libdcgm.so.4";  // tried first, then libdcgm.so.3
  // "embedded" (a host engine inside colod), "off", or the address of a running nv-hostengine
  // ("127.0.0.1", "127.0.0.1:5555"; dcgmConnect takes an address, not a Unix socket path).
  std::string mode = "embedded";
  double update_interval_s = 1.0;
};

struct DcgmReading {
  std::optional<double> smact, smocc;  // 0..1
};

class DcgmSampler {
 public:
  // Opens the library and the engine; throws GpuError (device "library") saying why not.
  explicit DcgmSampler(const DcgmOptions& opts);
  ~DcgmSampler();
  DcgmSampler(const DcgmSampler&) = delete;
  DcgmSampler& operator=(const DcgmSampler&) = delete;

  // Adds the GPU to the watched group (once); false, with `why`, when DCGM refuses it.
  bool watch(int gpu, std::string& why);
  bool watching(int gpu) const { return watched_.count(gpu) > 0; }
  // The latest values for a watched GPU; nullopt fields when DCGM has none yet.
  DcgmReading read(int gpu);
  // "DCGM (libdcgm.so.4, embedded host engine)"
  const std::string& describe() const { return describe_; }

 private:
  std::string error(dcgm::Return r) const;
  void close();

  DcgmOptions opts_;
  void* lib_ = nullptr;
  bool embedded_ = false;
  bool initialised_ = false;
  dcgm::Handle handle_ = 0;
  dcgm::GpuGroup group_ = 0;
  dcgm::FieldGroup fields_ = 0;
  bool have_group_ = false;
  std::set<int> watched_;
  std::string describe_;
  struct Api;
  std::unique_ptr<Api> api_;
};

}  // namespace colo::gpu
