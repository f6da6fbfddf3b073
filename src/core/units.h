#pragma once
// Basic quantities shared by every part of colo.
#include <cstdint>

namespace colo {

using JobId = std::uint64_t;
using MiB = std::int64_t;  // memory is always counted in MiB, as nvidia-smi shows it
using Seconds = double;    // time is supplied by the caller; the core never reads a clock

constexpr MiB kGiB = 1024;
constexpr std::uint64_t kBytesPerMiB = 1048576;  // byte counts (allocator blocks, traces) to MiB

}  // namespace colo
