#include "common/exclusive_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace colo {

ExclusiveLock::ExclusiveLock(const std::string& path, const std::string& busy_message) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) throw UserError(path + ": cannot open the lock file: " + std::strerror(errno));
  int rc;
  while ((rc = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK) throw UserError(busy_message);
    throw UserError(path + ": cannot lock: " + std::strerror(e));
  }
}

ExclusiveLock::~ExclusiveLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace colo
