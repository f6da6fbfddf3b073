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

namespace colo {
namespace {

// MIG instances differ in size: a job that ran out of memory alone on a 4 864 MiB instance is
// retried only where more exists, and waits for it rather than crash again on an idle twin.
TEST(Recovery, CrashedAloneOnASmallInstanceRetriesOnALargerOne) {
  Job j = crashed(2000);
  plan_recovery(j, {RecoveryMode::Strict, 5120}, 2000, 4800, 19968, /*crashed_alone_on_mib=*/4864);
  EXPECT_TRUE(j.recovery_alone);
  EXPECT_EQ(j.recovery_need_mib, 4865);
  Job l = crashed(2000);
  plan_recovery(l, {RecoveryMode::Loose, 1024}, 2000, 4800, 19968, 4864);
  EXPECT_EQ(l.recovery_need_mib, 4864 + 1024);

  test::World w;
  w.gpus = {test::gpu(0, 4864), test::gpu(1, 19968)};
  w.gpus[0].mode = w.gpus[1].mode = SharingMode::MigInstance;
  w.gpus[1].running = {9};  // the large instance is busy
  w.ledger.reserve(9, 1, 10000, false, 0);
  const Scheduler s{SchedulerConfig(make_policy(PolicyKind::Magm))};
  Decision d = w.decide(s, {}, {j}, /*explain=*/true);
  ASSERT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked);
  EXPECT_NE(d.blocked->reason.find("smaller than the 4865 MiB"), std::string::npos) << d.blocked->reason;
  w.gpus[1].running.clear();
  w.ledger.release(9);
  d = w.decide(s, {}, {j});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});
  EXPECT_TRUE(d.placements[0].alone);
}

// Whole GPUs all alike: a job that crashed alone on one asks for more than any has, so any idle
// GPU takes it (as before: nothing larger exists).
TEST(Recovery, CrashedAloneOnAWholeGpuStillGetsAnyIdleOne) {
  Job j = crashed(8000);
  plan_recovery(j, {RecoveryMode::Strict, 5120}, 8000, 40000, 40960, 40960);
  test::World w;
  w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960)};
  const Scheduler s{SchedulerConfig(make_policy(PolicyKind::Magm))};
  EXPECT_EQ(w.decide(s, {}, {j}).placements.size(), 1u);
}

}  // namespace
}  // namespace colo
