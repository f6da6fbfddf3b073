#include "daemon/checkpoint_request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace colo::daemon {

namespace {
constexpr std::array<std::pair<std::string_view, int>, 4> kSignals = {
    {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"INT", SIGINT}, {"HUP", SIGHUP}}};
}

std::optional<int> checkpoint_signal_from_name(std::string_view name) {
  if (name.rfind("SIG", 0) == 0) name.remove_prefix(3);
  for (const auto& [n, s] : kSignals)
    if (n == name) return s;
  return std::nullopt;
}

std::string checkpoint_signal_name(int signo) {
  for (const auto& [n, s] : kSignals)
    if (s == signo) return std::string(n);
  return std::to_string(signo);
}

void CheckpointRequests::prepare() const {
  std::filesystem::create_directories(dir_);
  ::chmod(dir_.c_str(), 0711);
}

std::string CheckpointRequests::path(JobId job) const { return fmt::format("{}/job-{}", dir_, job); }

void CheckpointRequests::write(JobId job, double stop_at) const {
  const std::string final_path = path(job), tmp = final_path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: {}", tmp, std::strerror(errno)));
  const std::string text = fmt::format("stop_at={:.0f}\n", stop_at);
  const bool ok = ::fchmod(fd, 0644) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: {}", final_path, std::strerror(ok ? errno : err)));
  }
}

void CheckpointRequests::remove(JobId job) const { ::unlink(path(job).c_str()); }

}  // namespace colo::daemon
