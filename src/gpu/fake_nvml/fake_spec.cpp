// Parser for the fake GPU spec and the fake identities.
#include "gpu/fake_nvml/fake_spec.h"

#include <charconv>
#include <cstdio>

#include "core/error.h"

namespace colo::gpu {
namespace {

constexpr int kMaxGpus = 64;
constexpr int kMaxMigInstances = 7;  // an A100/H100 has at most 7 GPU instances

[[noreturn]] void fail(std::string_view spec, const std::string& what, std::string_view part) {
  throw UserError("fake GPU spec '" + std::string(spec) + "': " + what + " in '" +
                  std::string(part) + "'");
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

// Leading decimal digits of `s` as a number; `rest` gets what follows. False when there are
// none; a number that does not fit is an error of its own.
bool leading_int(std::string_view spec, std::string_view s, long long& value,
                 std::string_view& rest) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec == std::errc::result_out_of_range) fail(spec, "number too large", s);
  if (ec != std::errc() || ptr == s.data()) return false;
  rest = s.substr(static_cast<std::size_t>(ptr - s.data()));
  return true;
}

MiB parse_size(std::string_view spec, std::string_view text) {
  long long v = 0;
  std::string_view unit;
  if (!leading_int(spec, text, v, unit)) fail(spec, "size must start with a number", text);
  if (v <= 0) fail(spec, "size must be positive", text);
  if (unit == "GiB") {
    if (v > 1024 * 1024) fail(spec, "size too large", text);
    return v * kGiB;
  }
  if (unit == "MiB") {
    if (v > 1024LL * 1024 * 1024) fail(spec, "size too large", text);
    return v;
  }
  fail(spec, "size unit must be GiB or MiB", text);
}

FakeMigSpec parse_profile(std::string_view spec, std::string_view text) {
  // <slices>g.<GB>gb, e.g. 3g.40gb; the memory counts as GiB.
  long long slices = 0, gb = 0;
  std::string_view rest;
  if (!leading_int(spec, text, slices, rest) || slices <= 0 || rest.substr(0, 2) != "g.") {
    fail(spec, "MIG profile must look like 3g.40gb", text);
  }
  std::string_view mem = rest.substr(2);
  if (!leading_int(spec, mem, gb, rest) || gb <= 0 || rest != "gb") {
    fail(spec, "MIG profile must look like 3g.40gb", text);
  }
  return FakeMigSpec{std::string(text), gb * kGiB};
}

}  // namespace

std::vector<FakeGpuSpec> parse_fake_gpu_spec(std::string_view spec) {
  if (spec.empty()) throw UserError("fake GPU spec is empty; expected e.g. 2x40GiB");
  std::vector<FakeGpuSpec> gpus;
  for (std::string_view group : split(spec, '+')) {
    if (group.empty()) fail(spec, "empty group", group);
    std::vector<std::string_view> parts = split(group, ':');
    std::string_view head = parts[0];
    long long count = 0;
    std::string_view rest;
    if (!leading_int(spec, head, count, rest) || rest.empty() || rest[0] != 'x') {
      fail(spec, "expected COUNTxSIZE such as 2x40GiB", head);
    }
    if (count <= 0) fail(spec, "GPU count must be positive", head);
    FakeGpuSpec gpu;
    gpu.total_mib = parse_size(spec, rest.substr(1));
    for (std::size_t i = 1; i < parts.size(); ++i) {
      std::string_view opt = parts[i];
      if (opt == "nogpm") {
        gpu.gpm = false;
      } else if (opt == "dcgm") {
        gpu.dcgm = true;
      } else if (opt.substr(0, 4) == "mig=") {
        if (!gpu.mig.empty()) fail(spec, "mig= given twice", group);
        MiB sum = 0;
        for (std::string_view p : split(opt.substr(4), ',')) {
          gpu.mig.push_back(parse_profile(spec, p));
          sum += gpu.mig.back().total_mib;
        }
        if (static_cast<int>(gpu.mig.size()) > kMaxMigInstances) {
          fail(spec, "at most 7 MIG instances per GPU", opt);
        }
        if (sum > gpu.total_mib) fail(spec, "MIG instances exceed the GPU's memory", group);
      } else {
        fail(spec, "unknown option (known: mig=PROFILES, nogpm, dcgm)", opt);
      }
    }
    if (static_cast<long long>(gpus.size()) + count > kMaxGpus) {
      fail(spec, "at most 64 GPUs", head);
    }
    for (long long k = 0; k < count; ++k) gpus.push_back(gpu);
  }
  return gpus;
}

std::string fake_gpu_uuid(int index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-fa4e0000-0000-4000-8000-%012x", static_cast<unsigned>(index));
  return buf;
}

std::string fake_mig_uuid(int gpu_index, int mig_index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "MIG-fa4e0000-%04x-4000-8000-%012x",
                static_cast<unsigned>(gpu_index), static_cast<unsigned>(mig_index));
  return buf;
}

std::string fake_gpu_name(const FakeGpuSpec& gpu) {
  if (gpu.total_mib % kGiB == 0) {
    return "Fake NVIDIA GPU " + std::to_string(gpu.total_mib / kGiB) + "GiB";
  }
  return "Fake NVIDIA GPU " + std::to_string(gpu.total_mib) + "MiB";
}

std::string fake_mig_name(const FakeGpuSpec& gpu, const FakeMigSpec& mig) {
  return fake_gpu_name(gpu) + " MIG " + mig.profile;
}

}  // namespace colo::gpu
