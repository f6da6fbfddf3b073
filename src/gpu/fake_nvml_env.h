#pragma once
// The in-tree fake NVML (src/gpu/fake_nvml/) and its test job program (colo-fake-job):
// the spec grammar, where the built files are, and the environment that wires them up.
//
// Spec grammar (COLO_FAKE_NVML_GPUS / `colod --fake-gpus`):
//   spec   := group ('+' group)*
//   group  := COUNT 'x' SIZE (':' option)*
//   SIZE   := INTEGER ('GiB' | 'MiB')                e.g. 2x40GiB, 1x24576MiB
//   option := 'mig=' PROFILE (',' PROFILE)*          e.g. 1x80GiB:mig=3g.40gb,3g.40gb
//           | 'nogpm'                               device without NVML GPM (pre-Hopper)
//           | 'dcgm'                                the fake libdcgm serves its SM activity
//   PROFILE := Ng.SIZEgb                            MIG instance of SIZE GiB
// Examples: "2x40GiB", "4x80GiB", "1x80GiB:mig=3g.40gb,3g.40gb+1x40GiB:nogpm",
//           "2x40GiB:nogpm:dcgm" (A100-like: SMACT through DCGM only).
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/backend.h"
#include "gpu/fake_nvml/fake_spec.h"

namespace colo::gpu {

// Absolute paths of the built fake library and job program (known at build time).
std::string fake_nvml_library_path();
std::string fake_job_path();
std::string fake_dcgm_library_path();

struct FakeNvmlSetup {
  std::string library_path;       // give to NvmlOptions::library
  std::string dcgm_library_path;  // the fake libdcgm: give to NvmlOptions::dcgm_library
  // Variables a launched job needs to see its fake GPU (pass them into the job environment,
  // which the launcher otherwise cleans): COLO_FAKE_NVML_GPUS and COLO_FAKE_NVML_DIR.
  std::vector<std::pair<std::string, std::string>> job_env;
};

// Validates `spec`, creates `state_dir` (and its procs/ subdirectory, world-writable and
// sticky like /tmp, so jobs launched under other uids can register), writes the spec into
// it and setenv()s COLO_FAKE_NVML_GPUS / COLO_FAKE_NVML_DIR for this process so the fake
// library finds them when dlopen()ed. Call once at startup, before threads exist.
// Throws colo::UserError on a bad spec or an unusable directory.
FakeNvmlSetup configure_fake_nvml_env(std::string_view spec, const std::string& state_dir);

// configure_fake_nvml_env + open_nvml_backend on the fake library: what `colod --fake-gpus`
// does in one call. `setup`, when given, receives the environment jobs need.
std::unique_ptr<GpuBackend> open_fake_nvml_backend(std::string_view spec,
                                                   const std::string& state_dir,
                                                   FakeNvmlSetup* setup = nullptr);

// Error injection: while set, every fake NVML call about GPU `index` fails with
// NVML_ERROR_GPU_IS_LOST (a file "fail-<index>" in the state directory).
void set_fake_gpu_failure(const std::string& state_dir, int index, bool failing);

// Finer injection: from now on NVML function `call` (e.g. "nvmlDeviceGetPowerUsage") about GPU
// `index` returns `nvml_code` (e.g. 3 = NOT_SUPPORTED, 4 = NO_PERMISSION, 15 = GPU_IS_LOST).
// Adds to what is injected already; set_fake_gpu_failure(dir, index, false) clears all.
void add_fake_call_failure(const std::string& state_dir, int index, const std::string& call,
                           int nvml_code);

}  // namespace colo::gpu
