#include "daemon/log_relay.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include <fmt/format.h>

namespace colo::daemon {

LogRelay::LogRelay(int fd, std::uint64_t cap, std::size_t tail, std::string stream, std::string cap_text)
    : fd_(fd), cap_(cap), tail_cap_(tail), stream_(std::move(stream)), cap_text_(std::move(cap_text)) {}

void LogRelay::write_out(const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      // The job must not block on a full disk: what the file refuses is counted (and the shim
      // says so once, in shim.log) and the pipe keeps draining.
      if (unwritten_ == 0)
        std::fprintf(stderr, "colo-shim: cannot write the job's %s log: %s\n", stream_.c_str(),
                     w < 0 ? std::strerror(errno) : "no progress");
      unwritten_ += n;
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

void LogRelay::take(const char* data, std::size_t n) {
  if (!over_) {
    const std::uint64_t room = cap_ == 0 ? n : std::min<std::uint64_t>(n, cap_ - written_);
    write_out(data, static_cast<std::size_t>(room));
    written_ += room;
    data += room;
    n -= static_cast<std::size_t>(room);
    if (n == 0) return;
    over_ = true;
    const std::string note = fmt::format(
        "\n[colo: this attempt's {} passed {}: the rest is dropped but for its last {} bytes, written here when "
        "the attempt ends]\n",
        stream_, cap_text_, tail_cap_);
    write_out(note.data(), note.size());
  }
  dropped_ += n;
  if (tail_cap_ == 0) return;
  tail_.append(data, n);
  if (tail_.size() >= 2 * tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
}

void LogRelay::finish() {
  if (finished_ || !over_) return;
  finished_ = true;
  if (tail_.size() > tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
  const std::string note = fmt::format("\n[colo: {} bytes of this attempt's {} were dropped ({}); the last {} bytes follow]\n",
                                       lost(), stream_, cap_text_, tail_.size());
  write_out(note.data(), note.size());
  write_out(tail_.data(), tail_.size());
}

}  // namespace colo::daemon
