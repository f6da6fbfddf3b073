#pragma once
// Every error colo prints is one line. Messages quote their input (a CSV cell, a header line, a
// path); a quoted newline or other control character would break that contract (and could forge
// lines in a log), so one_line() shows them escaped: \n, \r, \xHH, \u0080..\u009f. Tabs stay.
#include <string>
#include <string_view>

namespace colo {

inline std::string one_line(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((u < 0x20 && c != '\t') || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      // A UTF-8-encoded C1 control (U+0080..U+009F, e.g. CSI) drives a terminal as ESC does.
      const auto v = static_cast<unsigned char>(s[++i]);
      out += std::string("\\u00") + hex[v >> 4] + hex[v & 15];
    } else out += c;
  }
  return out;
}

// The first control character of `s` (C0, DEL, or a UTF-8-encoded C1 U+0080..U+009F; a tab too
// unless `tab_ok`), escaped as one_line shows it; empty when there is none. Text that colo prints
// in tables and one-line views (job names, reasons) must hold none: a newline forges rows and an
// ESC drives the reader's terminal.
inline std::string control_char_in(std::string_view s, bool tab_ok = false) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u == '\t' && !tab_ok) return "\\t";
    if ((u < 0x20 && u != '\t') || u == 0x7f) return one_line(s.substr(i, 1));
    if (u == 0xc2 && i + 1 < s.size()) {
      const auto v = static_cast<unsigned char>(s[i + 1]);
      static constexpr char hex[] = "0123456789abcdef";
      if (v >= 0x80 && v <= 0x9f) return std::string("\\u00") + hex[v >> 4] + hex[v & 15];
    }
  }
  return {};
}

}  // namespace colo
