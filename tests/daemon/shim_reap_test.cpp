// The shim's wait for its job (daemon/shim.h: reap_exited): the job's status is never lost to
// the pass that reaps orphans. Synchronised on observed state (a child is a zombie when
// /proc/PID/stat says 'Z'), never on sleeps.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "daemon/shim.h"

namespace colo::daemon {
namespace {

char proc_state(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

// Waits until `pid` has exited and awaits reaping; the child exits at once, so this ends.
void wait_zombie(pid_t pid) {
  while (proc_state(pid) != 'Z') std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
