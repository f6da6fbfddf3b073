#pragma once
// JSON text parsed with each object's keys checked for repeats: nlohmann keeps the last of two
// equal keys, so a second "batch" or "gpu_total_mib" would silently win over the first.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace colo {

struct UniqueKeysJson {
  nlohmann::json value;               // discarded (is_discarded()) when the text is not JSON
  std::optional<std::string> duplicate;  // the first key an object repeats, if any
  int duplicate_depth = 0;            // its object's depth (1: the top-level object)
};

// Not JSON: a discarded value, no exception. A NUL byte is not JSON either (nlohmann stops there as
// at the end of the input, and what follows would be silently dropped).
UniqueKeysJson parse_json_unique_keys(std::string_view text);

// A key as an error message shows it: JSON-escaped (a key may hold a newline), at most 200 bytes.
std::string shown_json_key(const std::string& key);

}  // namespace colo
