#pragma once
// Small text helpers shared by the summary parsers (torchsummary tables, module reprs, Keras
// summaries). Every error is one line: "SOURCE:LINE: what".
#include <cstdint>
#include <string>

#include "core/error.h"

namespace colo::estimate::summary_text {

// Messages quote the input; a quoted newline or other control character would break the
// one-line contract (and could forge lines in a log), so they are shown escaped: \n, \r, \xHH.
inline std::string one_line(const std::string& s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((u < 0x20 && c != '\t') || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  return out;
}

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

}  // namespace colo::estimate::summary_text
