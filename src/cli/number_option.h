#pragma once
// Flags that take numbers go through core/parse_number.h instead of CLI11's own conversion, which
// wraps or clamps some overflows and accepts values outside any sane range. The range is part of
// the flag's --help text, and a bad value is a "colo: error: --flag: …" line (exit 2).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/parse_number.h"

namespace colo::cli {

template <class Int>
CLI::Option* add_int_flag(CLI::App* app, const std::string& name, Int& target, std::int64_t lo, std::int64_t hi,
                          const std::string& help, bool show_default = true) {
  CLI::Option* o = app->add_option_function<std::string>(
      name, [&target, name, lo, hi](const std::string& s) { target = static_cast<Int>(parse_integer(s, name, lo, hi)); },
      fmt::format("{} [{}..{}]", help, lo, hi));
  if (show_default) o->default_str(std::to_string(target));
  return o->type_name("INT");
}

template <class Int>
CLI::Option* add_int_flag(CLI::App* app, const std::string& name, std::optional<Int>& target, std::int64_t lo,
                          std::int64_t hi, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name, lo, hi](const std::string& s) { target = static_cast<Int>(parse_integer(s, name, lo, hi)); },
          fmt::format("{} [{}..{}]", help, lo, hi))
      ->type_name("INT");
}

inline CLI::Option* add_uint_flag(CLI::App* app, const std::string& name, std::uint64_t& target,
                                  const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name](const std::string& s) { target = parse_unsigned(s, name); }, help)
      ->default_str(std::to_string(target))
      ->type_name("UINT");
}

inline CLI::Option* add_real_flag(CLI::App* app, const std::string& name, double& target, double lo, double hi,
                                  const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name, lo, hi](const std::string& s) { target = parse_real(s, name, lo, hi); },
          fmt::format("{} [{:g}..{:g}]", help, lo, hi))
      ->default_str(fmt::format("{:g}", target))
      ->type_name("NUMBER");
}

inline CLI::Option* add_seconds_flag(CLI::App* app, const std::string& name, double& target, double lo, double hi,
                                     const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name, lo, hi](const std::string& s) { target = parse_seconds(s, name, lo, hi); },
          fmt::format("{} [{:g}..{:g} s]", help, lo, hi))
      ->default_str(fmt::format("{:g}", target))
      ->type_name("SECONDS");
}

inline CLI::Option* add_seconds_flag(CLI::App* app, const std::string& name, std::optional<double>& target, double lo,
                                     double hi, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name, lo, hi](const std::string& s) { target = parse_seconds(s, name, lo, hi); },
          fmt::format("{} [{:g}..{:g} s]", help, lo, hi))
      ->type_name("SECONDS");
}

// A memory size: "4096" (MiB) or with a unit ("2GiB", "512MiB").
template <class Int>
CLI::Option* add_mib_flag(CLI::App* app, const std::string& name, Int& target, MiB lo, MiB hi, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&target, name, lo, hi](const std::string& s) { target = static_cast<Int>(parse_mib(s, name, lo, hi)); },
          fmt::format("{} [{}..{} MiB; units MiB/GiB allowed]", help, lo, hi))
      ->default_str(std::to_string(target))
      ->type_name("MIB");
}

}  // namespace colo::cli

namespace colo::cli {

// A text flag that, when given, must say something: `--fake-gpus ''` would otherwise read as "not
// given" and fall through to the real NVML.
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& s) { return s.empty() ? std::string("empty value") : std::string(); }, "TEXT");
}

// A Slurm NodeName: a host name ([A-Za-z0-9._-], not starting with '-'), nothing that would split
// a gres.conf or slurm.conf line.
inline CLI::Validator node_name() {
  return CLI::Validator(
      [](std::string& s) {
        const bool ok = !s.empty() && s.size() <= 255 && s.front() != '-' &&
                        std::all_of(s.begin(), s.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                        });
        return ok ? std::string() : std::string("not a node name (letters, digits, '.', '_', '-')");
      },
      "NAME");
}

}  // namespace colo::cli
