#pragma once
// PYTORCH_CUDA_ALLOC_CONF: the caching allocator's settings a job runs with, parsed as PyTorch 2.x
// parses them (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp): "key:value" pairs
// separated by commas, spaces ignored, roundup_power2_divisions also as a list "[256:1,>:4]".
// An option PyTorch refuses is refused here too; an option that changes where memory goes and is
// not modelled (backend:cudaMallocAsync) is refused rather than estimated as something else.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace colo::estimate {

struct AllocatorSettings {
  static constexpr std::size_t kRoundupIntervals = 16;  // power-of-two intervals from 1 MiB to 64 GiB
  std::uint64_t max_split_size = std::numeric_limits<std::uint64_t>::max();  // bytes (max_split_size_mb)
  std::uint64_t max_non_split_rounding = 20971520;  // bytes (max_non_split_rounding_mb; kLargeBuffer)
  // roundup_power2_divisions per interval [1 MiB·2^i, 1 MiB·2^(i+1)) (the first also below 1 MiB,
  // the last also above); 0 or 1: plain 512-byte rounding.
  std::array<std::uint32_t, kRoundupIntervals> roundup_power2_divisions{};
  double garbage_collection_threshold = 0;  // (0, 1); acts only under set_per_process_memory_fraction
  bool expandable_segments = false;

  bool is_default() const;
  std::string describe() const;  // the settings that differ from PyTorch's defaults, e.g. "expandable_segments:True"
};

// Throws UserError "SOURCE 'TEXT': PROBLEM" naming the offending option; SOURCE is where the text
// came from (the environment variable's name).
AllocatorSettings parse_allocator_settings(std::string_view text, std::string_view source = "PYTORCH_CUDA_ALLOC_CONF");

// The settings a job's PyTorch reads from its environment, as current PyTorch 2.x does:
// PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF (the older name); empty values count as unset.
// `lookup` returns a variable's value or nullptr. Releases before 2.9 read only the older name.
// The value is parsed: a bad one throws UserError naming the variable.
struct AllocatorConfVariable {
  std::string name, value;
  AllocatorSettings settings;
};
std::optional<AllocatorConfVariable> allocator_conf_variable(const std::function<const char*(const char*)>& lookup);
std::optional<AllocatorConfVariable> allocator_conf_from_environment();  // this process's

}  // namespace colo::estimate
