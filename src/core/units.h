#pragma once
// Basic quantities shared by every part of colo.
#include <cstdint>
#include <type_traits>

namespace colo {

using JobId = std::uint64_t;
using MiB = std::int64_t;  // memory is always counted in MiB, as nvidia-smi shows it
using Seconds = double;    // time is supplied by the caller; the core never reads a clock

constexpr MiB kGiB = 1024;
constexpr std::uint64_t kBytesPerMiB = 1048576;  // byte counts (allocator blocks, traces) to MiB

// A byte count in (fractional) MiB, for estimates and messages. Byte counts are unsigned: a signed
// value (a MiB, a difference) is refused at compile time rather than wrapped.
constexpr double mib_of_bytes(std::uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kBytesPerMiB); }
template <class T>
  requires std::is_signed_v<T>
double mib_of_bytes(T) = delete;
// MiB (≥ 0: a profile's or a flag's, checked where read) in whole bytes, the fraction dropped.
constexpr std::uint64_t bytes_of_mib(double mib) { return static_cast<std::uint64_t>(mib * static_cast<double>(kBytesPerMiB)); }
static_assert(mib_of_bytes(std::uint64_t{3} << 19) == 1.5 && bytes_of_mib(0.5) == 524288);

}  // namespace colo
