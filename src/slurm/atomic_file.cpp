#include "slurm/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"

namespace colo::slurm {

namespace {

// A writer killed between mkostemp and rename (kill -9, power loss) leaves <name>.tmp.XXXXXX
// behind; the next successful write of the same file removes those last modified over an hour
// ago (no writer of these small files is still at work after an hour; a younger one may be).
void remove_abandoned_temporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  const std::filesystem::path dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  const auto cutoff = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code e2;
    if (!it->is_regular_file(e2) || it->is_symlink(e2)) continue;
    const auto mtime = std::filesystem::last_write_time(it->path(), e2);
    if (!e2 && mtime < cutoff) std::filesystem::remove(it->path(), e2);
  }
}

}  // namespace

int write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? EIO : errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

void write_file_atomically(const std::string& path, const std::string& text, mode_t mode, bool sweep) {
  // A temporary name of its own per writer (two writers of one file never share it), removed on
  // every failure: either the old file or the new one stays, and nothing beside them.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw UserError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  auto fail = [&](const char* what, int e) {
    ::unlink(tmp.c_str());
    return UserError(fmt::format("{}: cannot {}: {}", path, what, std::strerror(e)));
  };
  ::fchmod(fd, mode);  // the umask must not narrow what readers need (history is world-readable)
  if (const int e = write_all(fd, text)) {
    ::close(fd);
    throw fail("write", e);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    throw fail("sync", e);
  }
  if (::close(fd) != 0) throw fail("sync", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("replace", errno);
  if (sweep) remove_abandoned_temporaries(path);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

bool read_small_file(const std::string& path, std::string& text, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw UserError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  }
  text.clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw UserError(fmt::format("{}: cannot read: {}", path, std::strerror(e)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      throw UserError(fmt::format("{}: larger than {} bytes", path, max_bytes));
    }
  }
  ::close(fd);
  return true;
}

}  // namespace colo::slurm
