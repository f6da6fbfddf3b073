#pragma once
// Lower-casing for names, units and header fields, all ASCII: std::tolower under the "C" locale
// (colo never calls setlocale), on unsigned char — a negative char is undefined behaviour there.
#include <cctype>
#include <string>
#include <string_view>

namespace colo {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace colo
