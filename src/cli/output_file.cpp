#include "cli/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "slurm/atomic_file.h"

namespace colo::cli {

namespace fs = std::filesystem;

namespace {

void write_in_place(const std::string& path, const std::string& text, std::string_view what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw UserError(fmt::format("{}: cannot write '{}': {}", what, path, std::strerror(errno)));
  if (const int e = slurm::write_all(fd, text)) {
    ::close(fd);
    throw UserError(fmt::format("{}: cannot write '{}': {}", what, path, std::strerror(e)));
  }
  if (::close(fd) != 0) throw UserError(fmt::format("{}: cannot write '{}': {}", what, path, std::strerror(errno)));
}

// The file a write to `path` replaces: `path`, or where its chain of symbolic links ends (a link
// to nothing yet included, as a shell's redirection creates it). Checks what can be checked first.
fs::path replaced_file(const std::string& path, std::string_view what) {
  if (path.empty()) throw UserError(fmt::format("{}: empty path", what));
  std::error_code ec;
  if (fs::is_directory(fs::status(path, ec))) throw UserError(fmt::format("{}: '{}' is a directory", what, path));
  fs::path target(path);
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    if (hops == 40) throw UserError(fmt::format("{}: '{}': too many levels of symbolic links", what, path));
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) throw UserError(fmt::format("{}: cannot read the link '{}': {}", what, target.string(), ec.message()));
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
  if (target.has_parent_path() && !fs::is_directory(target.parent_path(), ec))
    throw UserError(fmt::format("{}: directory '{}' does not exist", what, target.parent_path().string()));
  return target;
}

}  // namespace

void check_output_path(const std::string& path, std::string_view what) { replaced_file(path, what); }

void write_output_file(const std::string& path, const std::string& text, std::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // through symbolic links
  if (!path.empty() && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st))
    return write_in_place(path, text, what);
  const fs::path target = replaced_file(path, what);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  try {
    slurm::write_file_atomically(target.string(), text, static_cast<mode_t>(0666 & ~mask));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace colo::cli
