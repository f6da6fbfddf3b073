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
  auto st = read_proc_stat(pid);
  p.start_ticks = st ? st->start_ticks : 0;
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
