#pragma once
// A file locked with flock() for as long as the object lives: one process per state directory
// (a second colod would launch every queued job again; a second recovery agent would escalate
// one OOM twice). The kernel drops the lock when the holder dies, even by kill -9, so a stale
// lock file never blocks a restart. On NFS, Linux maps flock() to the server's POSIX locks.
#include <string>

namespace colo {

class ExclusiveLock {
 public:
  // Opens (creating it 0600, never through a symbolic link) and locks `path` without waiting.
  // Throws colo::UserError: `busy_message` when another process holds the lock, or one line
  // naming the path and the system's reason when it cannot be opened.
  ExclusiveLock(const std::string& path, const std::string& busy_message);
  ~ExclusiveLock();
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace colo
