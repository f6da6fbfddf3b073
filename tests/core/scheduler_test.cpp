#include <gtest/gtest.h>

#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

using test::World;

Scheduler sched(PolicyKind k, Conditions c = {}, RecoveryConfig r = {}) {
  return Scheduler(SchedulerConfig{make_policy(k, c), r});
}

World four_a100() {
  World w;
  for (int i = 0; i < 4; ++i) w.gpus.push_back(test::gpu(i, 40960));
  return w;
}

TEST(Scheduler, MagmSpreadsOverTheEmptiestGpus) {
  World w = four_a100();
  w.ledger.reserve(100, 0, 30000, false, 0);
  w.ledger.reserve(101, 1, 10000, false, 0);
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 8000), test::job(2, 8000), test::job(3, 8000)});
  ASSERT_EQ(d.placements.size(), 3u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{2});  // 2 and 3 tie, lower index
  EXPECT_EQ(d.placements[1].gpu_indices, std::vector<int>{3});  // this round's placement counted
  EXPECT_EQ(d.placements[2].gpu_indices, std::vector<int>{2});  // 2 and 3 both 32960 now; 1 has 30960
}

TEST(Scheduler, BestFitPacksTheFullestGpuThatStillFits) {
  World w = four_a100();
  w.ledger.reserve(100, 0, 30000, false, 0);  // 10960 free: 8000+2048 fits
  w.ledger.reserve(101, 1, 20000, false, 0);
  auto d = w.decide(sched(PolicyKind::BestFit), {test::job(1, 8000), test::job(2, 8000)});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{0});
  EXPECT_EQ(d.placements[1].gpu_indices, std::vector<int>{1});
}

TEST(Scheduler, LedgerPreventsDoubleBookingWithinAndAcrossRounds) {
  World w;
  w.gpus = {test::gpu(0, 40960)};
  const Scheduler s = sched(PolicyKind::FirstFit);
  auto d = w.decide(s, {test::job(1, 20000), test::job(2, 20000)});
  ASSERT_EQ(d.placements.size(), 1u);  // 20000+2048 twice does not fit 40960
  w.apply(d);
  // Monitor still shows the GPU empty (job not ramped up): the ledger keeps it booked.
  d = w.decide(s, {test::job(2, 20000)});
  EXPECT_TRUE(d.placements.empty());
}

TEST(Scheduler, FifoHeadBlocksTheQueue) {
  World w;
  w.gpus = {test::gpu(0, 40960)};
  w.ledger.reserve(100, 0, 30000, false, 0);
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 20000), test::job(2, 1000)});
  EXPECT_TRUE(d.placements.empty());  // job 2 would fit but must not overtake job 1
}

TEST(Scheduler, ExclusiveNeverCollocates) {
  World w = four_a100();
  w.ledger.reserve(100, 0, 100, false, 0);
  auto d = w.decide(sched(PolicyKind::Exclusive), {test::job(1, 100), test::job(2, 100), test::job(3, 100),
                                                   test::job(4, 100)});
  ASSERT_EQ(d.placements.size(), 3u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});
  EXPECT_EQ(d.placements[2].gpu_indices, std::vector<int>{3});
}

TEST(Scheduler, SmactCapKeepsBusyGpusOut) {
  World w;
  w.gpus = {test::gpu(0, 40960, 0, 0.85), test::gpu(1, 40960, 0, 0.5)};
  w.ledger.reserve(100, 0, 1000, false, 0);
  w.ledger.reserve(101, 1, 20000, false, 0);
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 1000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});  // 0 has more memory but is too busy
}

TEST(Scheduler, UnknownNeedReservesTheMinimumFreeAmount) {
  World w;
  w.gpus = {test::gpu(0, 12000)};
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, std::nullopt), test::job(2, std::nullopt),
                                              test::job(3, std::nullopt)});
  ASSERT_EQ(d.placements.size(), 2u);  // 12000 ≥ 5120, 6880 ≥ 5120, 1760 < 5120
  EXPECT_EQ(d.placements[0].reserve_mib, 5120);
}

TEST(Scheduler, NoConditionsPlacesBlindly) {
  World w;
  w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960)};
  Conditions off;
  off.enabled = false;
  auto d = w.decide(sched(PolicyKind::RoundRobin, off),
                    {test::job(1, 30000), test::job(2, 30000), test::job(3, 30000)});
  ASSERT_EQ(d.placements.size(), 3u);  // RR (no condition) overbooks, as in the thesis
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{0});
  EXPECT_EQ(d.placements[1].gpu_indices, std::vector<int>{1});
  EXPECT_EQ(d.placements[2].gpu_indices, std::vector<int>{0});
  EXPECT_EQ(w.state.rr_next, 1);
}

TEST(Scheduler, MultiGpuJobsGetDistinctGpusAtOnceOrNotAtAll) {
  World w = four_a100();
  w.ledger.reserve(100, 0, 35000, false, 0);
  w.ledger.reserve(101, 1, 35000, false, 0);
  w.ledger.reserve(102, 2, 35000, false, 0);
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 20000, 2)});
  EXPECT_TRUE(d.placements.empty());  // only GPU 3 fits: nothing partial
  w.ledger.release(102);
  d = w.decide(sched(PolicyKind::Magm), {test::job(1, 20000, 2)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, (std::vector<int>{2, 3}));
}

TEST(Scheduler, JobsNeedingMoreGpusThanExistAreRejectedNotBlocking) {
  World w = four_a100();
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 1000, 5), test::job(2, 1000)});
  ASSERT_EQ(d.rejections.size(), 1u);
  EXPECT_EQ(d.rejections[0].job, 1u);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, 2u);
}

TEST(Scheduler, NeedLargerThanAnyGpuMeansAWholeGpu) {
  World w = four_a100();
  w.ledger.reserve(100, 0, 1000, false, 0);
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 40000)});  // 40000 + 2048 > 40960
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_TRUE(d.placements[0].alone);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});
}

TEST(Scheduler, RecoveryQueueIsServedFirstAndStrictRecoveryRunsAlone) {
  World w;
  w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960)};
  w.ledger.reserve(100, 0, 1000, false, 0);
  Job r = test::job(9, 8000);
  r.state = JobState::Recovering;
  r.recovery_alone = true;
  const Scheduler s = sched(PolicyKind::Magm);
  auto d = w.decide(s, {test::job(1, 1000)}, {r});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].job, 9u);
  EXPECT_TRUE(d.placements[0].recovery);
  EXPECT_TRUE(d.placements[0].alone);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});  // the idle one
  EXPECT_EQ(d.placements[1].gpu_indices, std::vector<int>{0});  // not next to the recovering job
  w.apply(d);
  d = w.decide(s, {test::job(2, 1000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{0});  // GPU 1 stays exclusive
}

TEST(Scheduler, WaitingRecoveryHeadBlocksTheMainQueue) {
  World w;
  w.gpus = {test::gpu(0, 40960)};
  w.ledger.reserve(100, 0, 1000, false, 0);
  Job r = test::job(9, 8000);
  r.recovery_alone = true;
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 1000)}, {r});
  EXPECT_TRUE(d.placements.empty());  // GPU 0 must drain so the crashed job gets it
}

TEST(Scheduler, LooseRecoveryAsksForTheEscalatedNeedOnly) {
  World w;
  w.gpus = {test::gpu(0, 40960, 0, 0.95)};  // busy: loose recovery ignores the SMACT cap
  w.ledger.reserve(100, 0, 20000, false, 0);
  Job r = test::job(9, 8000);
  r.recovery_need_mib = 20000;
  auto d = w.decide(sched(PolicyKind::Magm, {}, {RecoveryMode::Loose, 5120}), {}, {r});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].reserve_mib, 20000);
  EXPECT_FALSE(d.placements[0].alone);
  r.recovery_need_mib = 21000;
  d = w.decide(sched(PolicyKind::Magm, {}, {RecoveryMode::Loose, 5120}), {}, {r});
  EXPECT_TRUE(d.placements.empty());
}

TEST(Scheduler, DrainedAndUnhealthyGpusAreSkipped) {
  World w;
  w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960), test::gpu(2, 20000)};
  w.gpus[0].drained = true;
  w.gpus[1].healthy = false;
  auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 1000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{2});
}

TEST(Scheduler, IsDeterministic) {
  World a = four_a100(), b = four_a100();
  std::vector<Job> q;
  for (JobId i = 1; i <= 12; ++i) q.push_back(test::job(i, static_cast<MiB>(1000 * i)));
  const Scheduler s = sched(PolicyKind::RoundRobin);
  auto da = a.decide(s, q), db = b.decide(s, q);
  ASSERT_EQ(da.placements.size(), db.placements.size());
  for (size_t i = 0; i < da.placements.size(); ++i)
    EXPECT_EQ(da.placements[i].gpu_indices, db.placements[i].gpu_indices);
}

}  // namespace
}  // namespace colo
