#pragma once
// User code colod starts as a user (a job, a probe) joins a new session keyring of its own.
// Otherwise it inherits colod's (systemd gives a service one), shared by every user's job and
// probe: a key one user's job added would be readable by the next user's. Called between fork
// and exec, after the switch to the user: one system call, nothing else.
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace colo {

// False (errno set) when the kernel refused; where it offers no keyrings at all (ENOSYS) or a
// sandbox forbids them (EPERM) there is nothing to share, which counts as done.
inline bool join_own_session_keyring() {
  return ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) >= 0 || errno == ENOSYS || errno == EPERM;
}

}  // namespace colo
