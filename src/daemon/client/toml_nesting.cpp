#include "daemon/client/toml_nesting.h"

#include <fmt/format.h>

#include "core/error.h"

namespace colo::daemon {

void check_toml_nesting(std::string_view text, const std::string& path, std::size_t max_depth) {
  std::size_t depth = 0, line = 1;
  const std::size_t n = text.size();
  auto at = [&](std::size_t i, std::string_view s) { return text.substr(i, s.size()) == s; };
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '#') {  // comment: to the end of the line
      while (i + 1 < n && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      // Strings may hold brackets. Multi-line ("""…""", '''…''') run to their closing triple;
      // basic strings honour backslash escapes; single-line ones end at the line's end at the latest.
      const bool basic = c == '"';
      const std::string_view triple = basic ? "\"\"\"" : "'''";
      if (at(i, triple)) {
        i += 3;
        while (i < n && !at(i, triple)) {
          if (text[i] == '\n') ++line;
          if (basic && text[i] == '\\' && i + 1 < n && text[i + 1] != '\n') ++i;
          ++i;
        }
        i += 2;  // the loop's ++i steps past the third quote
      } else {
        ++i;
        while (i < n && text[i] != c && text[i] != '\n') {
          if (basic && text[i] == '\\' && i + 1 < n && text[i + 1] != '\n') ++i;
          ++i;
        }
        if (i < n && text[i] == '\n') --i;  // counted by the outer loop
      }
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw UserError(fmt::format("{}:{}: arrays/inline tables nested deeper than {} levels", path, line, max_depth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace colo::daemon
