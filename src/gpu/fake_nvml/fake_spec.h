#pragma once
// The fake GPU spec ("2x40GiB", "1x80GiB:mig=3g.40gb,3g.40gb", grammar in fake_nvml_env.h) and
// the deterministic identities the fake NVML reports. Shared by colo_gpu, the fake library and
// the fake job, so all three agree on what exists.
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace colo::gpu {

struct FakeMigSpec {
  std::string profile;  // "3g.40gb"
  MiB total_mib = 0;
};

struct FakeGpuSpec {
  MiB total_mib = 0;
  bool gpm = true;               // NVML GPM (SMACT) supported, as on Hopper
  bool dcgm = false;             // the fake libdcgm has profiling fields for it (A100 + DCGM)
  std::vector<FakeMigSpec> mig;  // empty = MIG disabled
};

// Parses a spec into one entry per GPU. Throws colo::UserError with a one-line message naming
// the offending part, e.g. "fake GPU spec '2x40GB': size unit must be GiB or MiB in '40GB'".
std::vector<FakeGpuSpec> parse_fake_gpu_spec(std::string_view spec);

// UUIDs in NVIDIA's format; the fake NVML reports them and fake jobs match
// CUDA_VISIBLE_DEVICES against them.
std::string fake_gpu_uuid(int index);
std::string fake_mig_uuid(int gpu_index, int mig_index);
// Marketing-style names: "Fake NVIDIA GPU 40GiB", "Fake NVIDIA GPU 80GiB MIG 3g.40gb".
std::string fake_gpu_name(const FakeGpuSpec& gpu);
std::string fake_mig_name(const FakeGpuSpec& gpu, const FakeMigSpec& mig);

}  // namespace colo::gpu
