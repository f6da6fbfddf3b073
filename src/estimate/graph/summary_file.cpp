#include "estimate/graph/summary_file.h"

#include <cctype>

#include "core/error.h"
#include "core/one_line.h"
#include "common/ascii_lower.h"

namespace colo::estimate {

std::optional<std::filesystem::path> find_summary_file(const std::filesystem::path& dir, const std::string& name) {
  std::error_code ec;
  if (name.empty()) return std::nullopt;
  // A data set's summary column names a file of its summaries/ folder, never a path out of it.
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    throw UserError("summary '" + one_line(name) + "' must be a file name in " + dir.string() + ", not a path");
  if (std::filesystem::is_regular_file(dir / name, ec)) return dir / name;
  const std::string want = ascii_lower(name);
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && ascii_lower(e.path().filename().string()) == want) return e.path();
  return std::nullopt;
}

}  // namespace colo::estimate
