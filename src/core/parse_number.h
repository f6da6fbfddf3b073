#pragma once
// The one place where text from outside becomes a number: flags, job files, .rad files, CSV
// cells, summaries. Every function takes the text, where it came from ("--batch", "FILE:LINE",
// "FILE:LINE: column 'x'") and an inclusive range, and throws colo::UserError naming both for
// anything else: empty text, trailing garbage, NaN/inf, overflow, a value out of range.
// Nothing is wrapped, clamped or rounded into range silently.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/units.h"

namespace colo {

// Decimal integer: optional '-', digits; surrounding blanks allowed. "1e3", "64.0", "0x10" are not.
std::int64_t parse_integer(std::string_view text, std::string_view where, std::int64_t lo, std::int64_t hi);
// For 64-bit seeds and ids, whose range is all of uint64.
std::uint64_t parse_unsigned(std::string_view text, std::string_view where,
                             std::uint64_t hi = UINT64_MAX);
// Finite decimal real ("0.05", "1e-3", "80").
double parse_real(std::string_view text, std::string_view where, double lo, double hi);
// A real that must be a whole number, as spreadsheets write integers ("12288", "12288.0", "1.2e4").
std::int64_t parse_whole(std::string_view text, std::string_view where, std::int64_t lo, std::int64_t hi);
// Memory in MiB: "4096" (MiB), "512MiB", "1.5GiB", "1TiB", "40GB" / "500MB" (decimal), units case-
// insensitive, a blank allowed before the unit; fractions round up to whole MiB.
MiB parse_mib(std::string_view text, std::string_view where, MiB lo, MiB hi);
// A duration in seconds: a real, optionally followed by a unit: "s", "m" (or "min"), "h".
Seconds parse_seconds(std::string_view text, std::string_view where, Seconds lo, Seconds hi);

// A real computed from input (a CSV value, an estimate) turned into an integer: range-checked
// before rounding, because converting an out-of-range double to an integer is undefined.
std::int64_t round_checked(double v, std::string_view where, std::int64_t lo, std::int64_t hi);

// "FILE:LINE: column 'NAME'", the location of a CSV cell in messages.
std::string cell_location(std::string_view file, std::size_t line, std::string_view column);

}  // namespace colo
