#pragma once
// ASCII lower-casing for names, units and header fields: locale-free, so "I" stays "i" whatever
// the environment's locale (std::tolower on unsigned char, never on a negative char).
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
