#pragma once
// Moving a process into a cgroup v2 (its cgroup.procs), for a child between fork and exec: a job
// (daemon/shim.cpp) or a probe (estimate/trace/probe_runner.cpp). Async-signal-safe: open, write
// and close only.
#include <fcntl.h>
#include <unistd.h>

namespace colo {

// Moves the calling process into the cgroup whose cgroup.procs is at `path` ("0" is the writer
// itself). False on failure.
inline bool join_cgroup(const char* cgroup_procs_path) {
  const int fd = ::open(cgroup_procs_path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "0", 1) == 1;
  ::close(fd);
  return ok;
}

}  // namespace colo
