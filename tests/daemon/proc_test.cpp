// What /proc says about a process and the boot (daemon/proc.h) and an attempt's launch boot
// (daemon/shim.h): the evidence colod acts on before it signals a recorded pid.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon/proc.h"
#include "daemon/shim.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

TEST(Proc, ASessionIsItsLeadersUnlessItsNumberNamesAnotherProcess) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    ::close(go[1]);
    ::setsid();
    char c;
    (void)!::read(go[0], &c, 1);  // until the test closes its end
    ::_exit(0);
  }
  ::close(go[0]);
  std::optional<ProcStat> st;
  ASSERT_TRUE(wait_until([&] { return (st = read_proc_stat(leader)) && st->session == leader; }, std::chrono::seconds(30),
                         std::chrono::milliseconds(5)));
  EXPECT_TRUE(session_still_led_by(leader, st->start_ticks));
  // The same number started at another time: a newcomer's, not the session meant.
  EXPECT_FALSE(session_still_led_by(leader, st->start_ticks + 1));
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(leader, &status, 0), leader);
  // No process by that number: nothing in /proc to mistake for it.
  EXPECT_TRUE(session_still_led_by(leader, st->start_ticks));
}

TEST(Proc, TheBootHasAnIdentityAndAStartInThePast) {
  const std::string id = boot_id();
  EXPECT_EQ(id.size(), 36u) << id;
  EXPECT_EQ(boot_id(), id);
  const auto t = boot_time();
  ASSERT_TRUE(t.has_value());
  EXPECT_GT(*t, 0);
  EXPECT_LE(*t, static_cast<double>(std::time(nullptr)));
}

TEST(Proc, AnAttemptKnowsWhetherItWasLaunchedInThisBoot) {
  TempDir dir;
  const std::string d = dir.path();
  EXPECT_EQ(launched_this_boot(d), std::nullopt) << "neither a record nor spec.json";
  write_launch_boot(d);
  EXPECT_EQ(launched_this_boot(d), true);
  std::ofstream(d + "/boot") << "00000000-0000-4000-8000-000000000000\n";
  EXPECT_EQ(launched_this_boot(d), false);
  // An attempt of an older colod (no record): spec.json's time against this boot's start.
  ::unlink((d + "/boot").c_str());
  std::ofstream(d + "/spec.json") << "{}\n";
  EXPECT_EQ(launched_this_boot(d), true);
  const timespec long_ago[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (d + "/spec.json").c_str(), long_ago, 0), 0);
  EXPECT_EQ(launched_this_boot(d), false);
}

}  // namespace
}  // namespace colo::daemon::testing
