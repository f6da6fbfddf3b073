// The shim's wait for its job (daemon/shim.h: reap_exited): the job's status is never lost to
// the pass that reaps orphans. Synchronised on observed state (waitid WNOWAIT: the child has
// exited and is still unreaped), never on sleeps.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "daemon/shim.h"

namespace colo::daemon {
namespace {

// Blocks until `pid` has exited, leaving it to be reaped (waitid with WNOWAIT): synchronised on
// the kernel's own record of the exit, no polling.
void wait_zombie(pid_t pid) {
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
}

pid_t exiting_child(int code) {
  const pid_t p = fork();
  if (p == 0) _exit(code);
  return p;
}

TEST(ShimReap, TheJobsStatusComesFromThePassThatReapsOrphans) {
  // The job and an orphan both exited before the pass: the job's status is kept, the orphan
  // reaped too (the old two-step wait lost the job's status when its exit fell between them).
  const pid_t job = exiting_child(7);
  const pid_t orphan = exiting_child(0);
  wait_zombie(job);
  wait_zombie(orphan);
  int status = -1;
  ASSERT_TRUE(reap_exited(job, status));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(waitpid(orphan, nullptr, WNOHANG), -1);  // already reaped
}

TEST(ShimReap, AnOrphanAloneIsReapedAndTheJobStillAwaited) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  const pid_t job = fork();
  if (job == 0) {  // runs until the gate closes
    ::close(gate[1]);
    char c;
    while (::read(gate[0], &c, 1) > 0) {
    }
    _exit(3);
  }
  ::close(gate[0]);
  const pid_t orphan = exiting_child(0);
  wait_zombie(orphan);
  int status = -1;
  EXPECT_FALSE(reap_exited(job, status));
  EXPECT_EQ(status, -1);
  EXPECT_EQ(waitpid(orphan, nullptr, WNOHANG), -1);
  ::close(gate[1]);
  wait_zombie(job);
  ASSERT_TRUE(reap_exited(job, status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

}  // namespace
}  // namespace colo::daemon
