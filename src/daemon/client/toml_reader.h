#pragma once
// Typed reads of TOML values with one-line errors naming the file, the line and the key
// ("FILE:LINE: 'key' must be in [0, 1]"): colod's config and colo's Slurm site settings.
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"
#include "core/units.h"

namespace colo::daemon {

// Parses a TOML file; a syntax error becomes "FILE:LINE:COL: what" on one line (toml++ quotes
// the offending characters, a newline among them).
inline toml::table parse_toml_file(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw UserError(one_line(fmt::format("{}:{}:{}: {}", path, b.line, b.column, e.description())));
  }
}

struct TomlReader {
  std::string path;

  [[noreturn]] void bad(const toml::node& n, const std::string& msg) const {
    throw UserError(fmt::format("{}:{}: {}", path, n.source().begin.line, msg));
  }
  std::string str(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) bad(n, fmt::format("'{}' must be a string", key));
    return n.as_string()->get();
  }
  bool boolean(const toml::node& n, const std::string& key) const {
    if (!n.is_boolean()) bad(n, fmt::format("'{}' must be true or false", key));
    return n.as_boolean()->get();
  }
  // A TOML number (integer or float) in [lo, hi]; NaN and infinities are never in range.
  double number(const toml::node& n, const std::string& key, double lo, double hi) const {
    double v = 0;
    if (n.is_integer()) v = static_cast<double>(n.as_integer()->get());
    else if (n.is_floating_point()) v = n.as_floating_point()->get();
    else bad(n, fmt::format("'{}' must be a number", key));
    if (!(v >= lo && v <= hi)) bad(n, fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
    return v;
  }
  // A whole number in [lo, hi]: a TOML integer, or a float with no fractional part (2.0).
  std::int64_t integer(const toml::node& n, const std::string& key, std::int64_t lo, std::int64_t hi) const {
    if (n.is_integer()) {
      const std::int64_t v = n.as_integer()->get();
      if (v < lo || v > hi) bad(n, fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
      return v;
    }
    const double v = number(n, key, static_cast<double>(lo), static_cast<double>(hi));
    if (v != std::floor(v)) bad(n, fmt::format("'{}' must be a whole number, not {}", key, v));
    return static_cast<std::int64_t>(v);
  }
  // Memory: an integer (MiB) or a string with a unit ("2GiB"), in [lo, limits::kMaxGpuMiB].
  MiB memory(const toml::node& n, const std::string& key, MiB lo) const {
    if (n.is_integer()) {
      const std::int64_t v = n.as_integer()->get();
      if (v < lo || v > limits::kMaxGpuMiB)
        bad(n, fmt::format("'{}' must be in [{}, {}] MiB", key, lo, limits::kMaxGpuMiB));
      return v;
    }
    if (!n.is_string()) bad(n, fmt::format("'{}' must be an integer (MiB) or a string such as \"2GiB\"", key));
    const std::string s = str(n, key);
    try {
      return parse_mib(s, key, lo, limits::kMaxGpuMiB);
    } catch (const UserError& e) {
      bad(n, e.what());
    }
  }
  const toml::table& table(const toml::node& n, const std::string& key) const {
    if (!n.is_table()) bad(n, fmt::format("'{}' must be a table", key));
    return *n.as_table();
  }
};

}  // namespace colo::daemon
