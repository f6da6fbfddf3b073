#pragma once
// Small text helpers shared by the summary parsers (torchsummary tables, module reprs, Keras
// summaries). Every error is one line: "SOURCE:LINE: what".
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate::summary_text {

using colo::one_line;  // core/one_line.h: quoted input shown escaped, one line

[[noreturn]] inline void fail(const std::string& source, std::size_t line, const std::string& what) {
  throw UserError(one_line(source + ":" + std::to_string(line) + ": " + what));
}

inline std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// A parameter count as summaries print it ("22,268,928"). Values past 2^50 are nonsense in a
// summary and rejected, as is anything but digits and commas.
inline std::int64_t parse_param_count(const std::string& s, const std::string& source, std::size_t line) {
  std::int64_t v = 0;
  bool any = false;
  for (char c : s) {
    if (c == ',') continue;
    if (c < '0' || c > '9') fail(source, line, "bad parameter count '" + s + "'");
    v = v * 10 + (c - '0');
    if (v > (std::int64_t{1} << 50)) fail(source, line, "parameter count out of range '" + s + "'");
    any = true;
  }
  if (!any) fail(source, line, "missing parameter count");
  return v;
}

// A summary's "Total params" line is the sum of its table's rows (torchsummary, Keras): a
// difference means rows were lost or edited. Rows are ≤ 2^50 each, so the sum cannot overflow
// before it is already past any match.
template <typename Layers>
void check_declared_total(std::int64_t declared, const Layers& layers, const std::string& source, std::size_t line) {
  if (declared < 0) return;  // no total line
  std::int64_t sum = 0;
  for (const auto& l : layers)
    if ((sum += l.params) > (std::int64_t{1} << 60)) break;
  if (sum != declared)
    fail(source, line,
         "Total params " + std::to_string(declared) + " is not the sum of the table's rows (" + std::to_string(sum) +
             "): rows missing or edited?");
}

}  // namespace colo::estimate::summary_text
