#pragma once
// toml++ parses arrays and inline tables recursively. It stops at 256 levels itself, but colo
// refuses far shallower nesting first, with a FILE:LINE message: no job or config file nests
// more than a few levels, and the scan below needs no recursion whatever the input.
#include <cstddef>
#include <string>
#include <string_view>

namespace colo::daemon {

constexpr std::size_t kMaxTomlNesting = 64;

// Throws colo::UserError "PATH:LINE: arrays/inline tables nested deeper than 64 levels" when
// '[' / '{' outside strings and comments nest deeper than max_depth.
void check_toml_nesting(std::string_view text, const std::string& path, std::size_t max_depth = kMaxTomlNesting);

}  // namespace colo::daemon
