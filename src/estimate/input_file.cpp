#include "estimate/input_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace colo::estimate {

namespace {
std::string human(std::uintmax_t bytes) {
  if (bytes >= kBytesPerMiB) return fmt::format("{:.1f} MiB", mib_of_bytes(bytes));
  return fmt::format("{} bytes", bytes);
}
}  // namespace

void check_input_size(const std::string& path, std::uintmax_t max_bytes, std::string_view what) {
  if (path.empty()) throw UserError(fmt::format("an empty path was given for the {}", what));
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw UserError(fmt::format("{}: cannot open {}", path, what));
  if (std::filesystem::is_directory(st)) throw UserError(fmt::format("{}: is a directory, not a {}", path, what));
  // Only regular files have a size to check; a FIFO or /dev/stdin is read as it comes.
  if (!std::filesystem::is_regular_file(st)) return;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw UserError(fmt::format("{}: cannot open {}", path, what));
  if (size > max_bytes)
    throw UserError(fmt::format("{}: {} is {}, over the {} limit", path, what, human(size), human(max_bytes)));
}

std::string read_input_file(const std::string& path, std::uintmax_t max_bytes, std::string_view what) {
  check_input_size(path, max_bytes, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open {}", path, what));
  std::string text;
  char buf[65536];
  // Read in chunks and stop past the limit: a file may grow, or not be a regular file.
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw UserError(fmt::format("{}: {} is over the {} limit", path, what, human(max_bytes)));
  }
  // A UTF-8 byte-order mark (spreadsheets write one) is not part of the first line's text.
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}

}  // namespace colo::estimate
