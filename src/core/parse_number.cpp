#include "core/parse_number.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/one_line.h"
#include "common/ascii_lower.h"

namespace colo {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Messages quote at most 40 characters of the text: a 100 MB cell should not become the message.
// The input as quoted in a message: at most 40 bytes, control characters escaped (one line).
std::string shown(std::string_view text) {
  if (text.size() <= 40) return one_line(text);
  return one_line(text.substr(0, 40)) + "…";
}

[[noreturn]] void not_a(std::string_view where, std::string_view text, std::string_view what) {
  throw UserError(fmt::format("{}: '{}' is not {}", where, shown(text), what));
}

// "1..1024"; a bound that only stands for "no bound" (beyond 2^53) is left out of the message
// rather than printed as -1.7976931348623157e+308.
template <class T>
std::string range_text(T lo, T hi) {
  // An integer type's own limit is a real bound (a 64-bit seed's 2^64 - 1): "at least 0" for 2^64
  // would contradict itself.
  if constexpr (std::is_integral_v<T>)
    if (hi == std::numeric_limits<T>::max() || lo == std::numeric_limits<T>::min()) return fmt::format("{}..{}", lo, hi);
  constexpr double kNoBound = 9007199254740992.0;  // 2^53
  const bool open_lo = static_cast<double>(lo) <= -kNoBound, open_hi = static_cast<double>(hi) >= kNoBound;
  if (open_lo && open_hi) return "a number of sensible size";
  if (open_lo) return fmt::format("at most {}", hi);
  if (open_hi) return fmt::format("at least {}", lo);
  return fmt::format("{}..{}", lo, hi);
}

template <class T>
[[noreturn]] void out_of_range(std::string_view where, std::string_view text, T lo, T hi) {
  throw UserError(fmt::format("{}: {} is out of range (expected {})", where, shown(text), range_text(lo, hi)));
}

// from_chars over the whole (trimmed) text; false on garbage. Sets `overflow` on ERANGE.
template <class T>
bool whole_text(std::string_view s, T& v, bool& overflow) {
  overflow = false;
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && p == s.data() + s.size()) {
    overflow = true;
    return true;
  }
  return ec == std::errc() && p == s.data() + s.size();
}

double real_in(std::string_view text, std::string_view where, double lo, double hi, std::string_view what) {
  const std::string_view s = trim(text);
  double v = 0;
  bool overflow = false;
  if (!whole_text(s, v, overflow)) not_a(where, text, what);
  // from_chars also reads "nan" and "inf", which are not numbers here; an overflow ("1e999")
  // is a number out of any range.
  if (!overflow && !std::isfinite(v)) not_a(where, text, what);
  if (overflow || v < lo || v > hi) out_of_range(where, s, lo, hi);
  return v;
}

}  // namespace

std::int64_t parse_integer(std::string_view text, std::string_view where, std::int64_t lo, std::int64_t hi) {
  const std::string_view s = trim(text);
  std::int64_t v = 0;
  bool overflow = false;
  if (!whole_text(s, v, overflow)) not_a(where, text, "an integer");
  if (overflow || v < lo || v > hi) out_of_range(where, s, lo, hi);
  return v;
}

std::uint64_t parse_unsigned(std::string_view text, std::string_view where, std::uint64_t hi) {
  const std::string_view s = trim(text);
  std::uint64_t v = 0;
  bool overflow = false;
  // from_chars for unsigned rejects a leading '-', so "-1" never becomes 2^64-1.
  if (!whole_text(s, v, overflow)) not_a(where, text, "a non-negative integer");
  if (overflow || v > hi) out_of_range(where, s, std::uint64_t{0}, hi);
  return v;
}

double parse_real(std::string_view text, std::string_view where, double lo, double hi) {
  return real_in(text, where, lo, hi, "a number");
}

std::int64_t parse_whole(std::string_view text, std::string_view where, std::int64_t lo, std::int64_t hi) {
  const double v = real_in(text, where, static_cast<double>(lo), static_cast<double>(hi), "a number");
  if (v != std::floor(v)) not_a(where, text, "a whole number");
  return round_checked(v, where, lo, hi);
}

MiB parse_mib(std::string_view text, std::string_view where, MiB lo, MiB hi) {
  // Messages read "WHERE: memory 'TEXT': …" (just "memory 'TEXT': …" without a WHERE), the form
  // colod's config and job files have always used.
  const std::string what = fmt::format("{}{}memory '{}'", where, where.empty() ? "" : ": ", shown(text));
  const std::string_view s = trim(text);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string_view num = s.substr(0, i);
  const std::string unit = ascii_lower(trim(s.substr(i)));
  double v = 0;
  bool overflow = false;
  if (!whole_text(num, v, overflow))
    throw UserError(fmt::format("{}: expected a number with a unit, e.g. 12GiB, 512MiB or 4096 (MiB)", what));
  double mib = 0;
  if (unit.empty() || unit == "mib" || unit == "m") mib = v;
  else if (unit == "gib" || unit == "g") mib = v * 1024;
  else if (unit == "tib" || unit == "t") mib = v * 1024 * 1024;
  else if (unit == "gb") mib = v * 1e9 / (1024.0 * 1024.0);
  else if (unit == "mb") mib = v * 1e6 / (1024.0 * 1024.0);
  else throw UserError(fmt::format("{}: unknown unit '{}' (use MiB, GiB, TiB, MB or GB)", what, shown(unit)));
  const double whole = std::ceil(mib);  // a fraction of a MiB is a whole one
  if (overflow || !(whole >= static_cast<double>(lo) && whole <= static_cast<double>(hi)))
    throw UserError(fmt::format("{} is out of range (expected {}..{} MiB)", what, lo, hi));
  return round_checked(whole, what, lo, hi);
}

Seconds parse_seconds(std::string_view text, std::string_view where, Seconds lo, Seconds hi) {
  std::string_view s = trim(text);
  double unit = 1;
  auto suffix = [&](std::string_view u, double mult) {
    if (s.size() <= u.size() || s.substr(s.size() - u.size()) != u) return false;
    s.remove_suffix(u.size());
    unit = mult;
    return true;
  };
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms")
    throw UserError(fmt::format("{}: '{}' must be a duration in seconds (units: s, min or m, h)", where, shown(text)));
  suffix("h", 3600) || suffix("min", 60) || suffix("m", 60) || suffix("s", 1);
  const std::string_view number = trim(s);
  double n = 0;
  bool overflow = false;
  // The message quotes what was typed ('5fortnights'), not what is left once a unit is cut off.
  if (!whole_text(number, n, overflow) || (!overflow && !std::isfinite(n)))
    not_a(where, text, "a duration in seconds (units: s, min or m, h)");
  if (overflow) out_of_range(where, trim(text), lo, hi);
  const double v = unit * n;
  if (!std::isfinite(v) || v < lo || v > hi) out_of_range(where, trim(text), lo, hi);
  return v;
}

std::int64_t round_checked(double v, std::string_view where, std::int64_t lo, std::int64_t hi) {
  // Check as doubles first; ±2^63 itself is outside int64, so llround is only reached when defined.
  constexpr double k2p63 = 9223372036854775808.0;
  if (!std::isfinite(v) || v >= k2p63 || v < -k2p63 || v < static_cast<double>(lo) - 0.5 ||
      v > static_cast<double>(hi) + 0.5)
    throw UserError(fmt::format("{}: {} is out of range (expected {})", where, v, range_text(lo, hi)));
  const std::int64_t r = std::llround(v);
  if (r < lo || r > hi) throw UserError(fmt::format("{}: {} is out of range (expected {})", where, v, range_text(lo, hi)));
  return r;
}

std::string cell_location(std::string_view file, std::size_t line, std::string_view column) {
  return fmt::format("{}:{}: column '{}'", file, line, column);
}

}  // namespace colo
