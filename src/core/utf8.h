#pragma once
// UTF-8 validity for text read from files (CSV cells, names) that later goes into JSON output:
// nlohmann::json refuses to dump invalid UTF-8 (type_error 316), so it is refused at read time
// with the file and line instead.
#include <string>
#include <string_view>

namespace colo {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF), 0 when the bytes there are not one.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 1;
  else if (c == 0xe0) n = 2, lo = 0xa0;
  else if (c >= 0xe1 && c <= 0xec) n = 2;
  else if (c == 0xed) n = 2, hi = 0x9f;
  else if (c >= 0xee && c <= 0xef) n = 2;
  else if (c == 0xf0) n = 3, lo = 0x90;
  else if (c >= 0xf1 && c <= 0xf3) n = 3;
  else if (c == 0xf4) n = 3, hi = 0x8f;
  else return 0;
  if (i + n >= s.size()) return 0;
  for (std::size_t k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return 0;
  }
  return n + 1;
}

inline bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// `s` with every byte that starts no well-formed sequence replaced by U+FFFD. For text from
// programs that pass users' bytes through unchecked (squeue --json with a job named "\xff"), so
// one job's name cannot make the whole document unreadable. ASCII (JSON's structure) is kept.
inline std::string replace_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace colo
