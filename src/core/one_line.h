#pragma once
// Every error colo prints is one line. Messages quote their input (a CSV cell, a header line, a
// path); a quoted newline or other control character would break that contract (and could forge
// lines in a log), so one_line() shows them escaped: \n, \r, \xHH. Tabs stay.
#include <string>
#include <string_view>

namespace colo {

inline std::string one_line(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((u < 0x20 && c != '\t') || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  return out;
}

}  // namespace colo
