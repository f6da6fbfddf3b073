#pragma once
// Starts the shim of one attempt (shim.h) with posix_spawn — no fork of the daemon's own
// address space — and hands it the read end of the "go" pipe as fd 3.
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace colo::daemon {

struct ShimProcess {
  pid_t pid = -1;
  std::uint64_t start_ticks = 0;  // from /proc/<pid>/stat, to recognise it after a restart
  int go_fd = -1;                 // write end of the go pipe (CLOEXEC)
};

// Spawns `shim_exe __shim dir`. Throws std::runtime_error when it cannot.
ShimProcess spawn_shim(const std::string& shim_exe, const std::string& dir);
// Lets the shim start the job; closes go_fd. False if the shim is already gone.
bool send_go(ShimProcess& p);
// Closes go_fd without sending (the shim then exits without starting the job).
void abandon(ShimProcess& p);

}  // namespace colo::daemon
