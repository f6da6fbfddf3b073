#pragma once
// Every error colo prints is one line. Messages quote their input (a CSV cell, a header line, a
// path); a quoted newline or other control character would break that contract (and could forge
// lines in a log), so one_line() shows them escaped: \n, \r, \xHH, \u0080..\u009f; bytes that are not
// UTF-8 become \xHH too (a message must itself be valid UTF-8). Tabs stay.
#include <cstddef>
#include <string>
#include <string_view>

namespace colo {

// Length of the well-formed UTF-8 sequence at s[i] (1..4), or 0 when the bytes there are not one
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
inline std::size_t utf8_sequence_at(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F) || (c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F))
    return 0;
  return n;
}

inline std::string one_line(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    const std::size_t n = utf8_sequence_at(s, i);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((u < 0x20 && c != '\t') || u == 0x7f || n == 0)  // a control, or a byte that is not UTF-8
      out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else if (n == 2 && u == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      // A UTF-8-encoded C1 control (U+0080..U+009F, e.g. CSI) drives a terminal as ESC does.
      const auto v = static_cast<unsigned char>(s[i + 1]);
      out += std::string("\\u00") + hex[v >> 4] + hex[v & 15];
    } else out.append(s.substr(i, n));
    i += n == 0 ? 1 : n;
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
