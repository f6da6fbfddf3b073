#include "daemon/launcher.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <spawn.h>
#include <stdexcept>
#include <unistd.h>
#include <vector>

#include <fcntl.h>

#include "daemon/proc.h"

extern char** environ;

namespace colo::daemon {

ShimProcess spawn_shim(const std::string& shim_exe, const std::string& dir) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 3);  // dup2 clears CLOEXEC on fd 3
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args{shim_exe, "__shim", dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, shim_exe.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    throw std::runtime_error(std::string("spawn shim: ") + std::strerror(rc));
  }
  ShimProcess p;
  p.pid = pid;
  p.go_fd = fds[1];
  // The start time is what names this shim for good (pids are reused): without it colod could
  // neither tell the shim alive later nor be sure a session is its. No "go" then: the shim sees
  // EOF and exits without running anything (the reaper collects it), and the launch fails.
  int err = 0;
  const auto st = read_proc_stat(pid, &err);
  if (!st) {
    ::close(p.go_fd);
    throw std::runtime_error("spawn shim: cannot read /proc/" + std::to_string(pid) + "/stat: " +
                             (err ? std::strerror(err) : "unparsable"));
  }
  p.start_ticks = st->start_ticks;
  return p;
}

bool send_go(ShimProcess& p) {
  const char g = 'g';
  ssize_t n;
  do {
    n = ::write(p.go_fd, &g, 1);
  } while (n < 0 && errno == EINTR);
  ::close(p.go_fd);
  p.go_fd = -1;
  return n == 1;
}

void abandon(ShimProcess& p) {
  if (p.go_fd >= 0) ::close(p.go_fd);
  p.go_fd = -1;
}

}  // namespace colo::daemon
