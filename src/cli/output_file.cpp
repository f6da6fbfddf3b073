#include "cli/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/error.h"
#include "slurm/atomic_file.h"

namespace colo::cli {

namespace fs = std::filesystem;

namespace {

// The descriptor a name stands for (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), or -1.
// Written through the descriptor itself, not a new opening of what it leads to: that would start
// at offset 0 of a file the shell opened, over what colo printed there before.
int descriptor_of(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string p(prefix);
    if (path.size() > p.size() && path.size() <= p.size() + 6 && path.compare(0, p.size(), p) == 0 &&
        std::all_of(path.begin() + static_cast<std::ptrdiff_t>(p.size()), path.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoi(path.substr(p.size()));
  }
  return -1;
}

void write_in_place(const std::string& path, const std::string& text, std::string_view what, bool truncate) {
  std::cout.flush();  // what colo printed before comes first where both reach the same reader
  if (const int fd = descriptor_of(path); fd >= 0 && ::fcntl(fd, F_GETFD) != -1) {
    if (const int e = slurm::write_all(fd, text))
      throw UserError(fmt::format("{}: cannot write '{}': {}", what, path, std::strerror(e)));
    return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (truncate ? O_TRUNC : 0));
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
  // /dev/stdout, /dev/fd/N and /proc/self/fd/N lead to whatever the descriptor is, a file a shell
  // opened for appending included: replacing that file would lose what it held.
  const bool descriptor = path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
  if (!path.empty() && fs::exists(st) && !fs::is_directory(st) && (descriptor || !fs::is_regular_file(st)))
    return write_in_place(path, text, what, /*truncate=*/false);
  const fs::path target = replaced_file(path, what);
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (exists && ::access(dir.c_str(), W_OK) != 0 && ::access(target.c_str(), W_OK) == 0)
    return write_in_place(target.string(), text, what, /*truncate=*/true);  // a writable file, its directory not
  // A file replaced keeps its permissions (a private 0600 one stays private); a new one gets the umask's.
  mode_t mode = old.st_mode & 07777;
  if (!exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = static_cast<mode_t>(0666 & ~mask);
  }
  try {
    slurm::write_file_atomically(target.string(), text, mode, /*sweep=*/false);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace colo::cli
