#include <gtest/gtest.h>

#include "core/recovery.h"
#include "test_support.h"

namespace colo {
namespace {

Job crashed(std::optional<MiB> need) {
  Job j = test::job(1, need);
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  transition(j, JobState::Oom);
  return j;
}

TEST(Recovery, StrictAlwaysAsksForAnIdleGpu) {
  Job j = crashed(8000);
  plan_recovery(j, {RecoveryMode::Strict, 5120}, 8000, 9000, 40960);
  EXPECT_EQ(j.state, JobState::Recovering);
  EXPECT_TRUE(j.recovery_alone);
  EXPECT_FALSE(j.recovery_need_mib.has_value());
}

TEST(Recovery, LooseEscalatesByOneStepPerCrashThenGoesIdle) {
  Job j = crashed(8000);
  const RecoveryConfig loose{RecoveryMode::Loose, 5120};
  plan_recovery(j, loose, 8000, 9000, 40960);  // observed 9000 > attempted 8000
  EXPECT_EQ(j.recovery_need_mib, 9000 + 5120);
  EXPECT_FALSE(j.recovery_alone);
  for (MiB expect : {MiB{9000 + 2 * 5120}, MiB{9000 + 3 * 5120}, MiB{9000 + 4 * 5120}, MiB{9000 + 5 * 5120}, MiB{9000 + 6 * 5120}}) {
    transition(j, JobState::Placed);
    transition(j, JobState::Running);
    transition(j, JobState::Oom);
    plan_recovery(j, loose, *j.recovery_need_mib, std::nullopt, 40960);
    EXPECT_EQ(j.recovery_need_mib, expect);
  }
  transition(j, JobState::Placed);
  transition(j, JobState::Running);
  transition(j, JobState::Oom);
  plan_recovery(j, loose, *j.recovery_need_mib, std::nullopt, 40960);  // 9000+7·5120 ≥ 40960
  EXPECT_TRUE(j.recovery_alone);
  EXPECT_FALSE(j.recovery_need_mib.has_value());
}

TEST(Recovery, LooseWithUnknownNeedStartsFromWhatTheAttemptHad) {
  Job j = crashed(std::nullopt);
  plan_recovery(j, {RecoveryMode::Loose, 5120}, 5120, std::nullopt, 40960);
  EXPECT_EQ(j.recovery_need_mib, 10240);
}

TEST(Recovery, ModeNames) {
  EXPECT_EQ(recovery_mode_from_string("strict"), RecoveryMode::Strict);
  EXPECT_EQ(recovery_mode_from_string("loose"), RecoveryMode::Loose);
  EXPECT_FALSE(recovery_mode_from_string("lenient").has_value());
}

}  // namespace
}  // namespace colo
