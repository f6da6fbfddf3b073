#pragma once
// Basic quantities shared by every part of colo.
#include <cstdint>

namespace colo {

using JobId = std::uint64_t;
using MiB = std::int64_t;  // memory is always counted in MiB, as nvidia-smi shows it
using Seconds = double;    // time is supplied by the caller; the core never reads a clock

constexpr MiB kGiB = 1024;

}  // namespace colo
