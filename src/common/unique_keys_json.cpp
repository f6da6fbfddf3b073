#include "common/unique_keys_json.h"

#include <algorithm>
#include <vector>

namespace colo {

UniqueKeysJson parse_json_unique_keys(std::string_view text) {
  using json = nlohmann::json;
  UniqueKeysJson out;
  if (text.find('\0') != std::string_view::npos) {
    out.value = json(json::value_t::discarded);
    return out;
  }
  // One set of keys per open object; the callback sees keys and object starts/ends in order.
  std::vector<std::vector<std::string>> keys;
  const json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string()) {
          auto& seen = keys.back();
          const std::string& k = parsed.get_ref<const std::string&>();
          if (!out.duplicate && std::find(seen.begin(), seen.end(), k) != seen.end()) {
            out.duplicate = k;
            out.duplicate_depth = depth;
          }
          seen.push_back(k);
        }
        break;
      default: break;
    }
    return true;
  };
  out.value = json::parse(text, cb, false);
  return out;
}

std::string shown_json_key(const std::string& key) {
  const std::string s = nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.substr(1, s.size() - 2).substr(0, 200);
}

}  // namespace colo
