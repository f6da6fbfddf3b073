// Backfilling (core/backfill.h): jobs behind a waiting main-queue head start where they fit, at
// most max_overtakes times per head, so the head cannot starve; off by default (the thesis' FIFO).
#include <gtest/gtest.h>

#include "core/policy/policy_definition.h"
#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

using test::World;

Scheduler backfill_sched(int max_overtakes, int depth = 200, PolicyKind k = PolicyKind::Magm) {
  return Scheduler(SchedulerConfig(make_policy(k), {}, Backfill{max_overtakes, depth}));
}

// One A100 with 30 000 MiB booked: 10 960 free, so a 20 000 MiB head waits and 1 000 MiB jobs fit.
World busy_gpu() {
  World w;
  w.gpus = {test::gpu(0, 40960)};
  w.ledger.reserve(100, 0, 30000, false, 0);
  return w;
}

TEST(Backfill, OffByDefaultTheHeadBlocksEveryone) {
  World w = busy_gpu();
  const auto d = w.decide(Scheduler(SchedulerConfig{}), {test::job(1, 20000), test::job(2, 1000)});
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked);
  EXPECT_EQ(d.blocked->job, 1u);
}

TEST(Backfill, JobsBehindAWaitingHeadStartAndSayWhomTheyOvertook) {
  World w = busy_gpu();
  const auto d = w.decide(backfill_sched(5), {test::job(1, 20000), test::job(2, 1000), test::job(3, 1000)});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].job, 2u);
  EXPECT_EQ(d.placements[0].overtook, JobId{1});
  ASSERT_TRUE(d.blocked);
  EXPECT_EQ(d.blocked->job, 1u) << "the head is still the one that waits";
  EXPECT_EQ(w.state.waiting_head, JobId{1});
  EXPECT_EQ(w.state.overtakes, 2);
}

TEST(Backfill, TheBoundHoldsAcrossDecisionsSoTheHeadCannotStarve) {
  World w = busy_gpu();
  const Scheduler s = backfill_sched(2);
  auto d = w.decide(s, {test::job(1, 20000), test::job(2, 1000), test::job(3, 1000), test::job(4, 1000)});
  ASSERT_EQ(d.placements.size(), 2u);  // 2 and 3; 4 would fit but the bound is reached
  w.apply(d);
  d = w.decide(s, {test::job(1, 20000), test::job(4, 1000), test::job(5, 1000)});
  EXPECT_TRUE(d.placements.empty()) << "strict FIFO again until job 1 starts";
  // The GPU frees up: the head starts, and the next waiting head gets its own allowance.
  w.ledger = Ledger{};
  d = w.decide(s, {test::job(1, 20000), test::job(4, 30000), test::job(5, 1000)});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].job, 1u);
  EXPECT_FALSE(d.placements[0].overtook);
  EXPECT_EQ(d.placements[1].job, 5u);
  EXPECT_EQ(d.placements[1].overtook, JobId{4});
  EXPECT_EQ(w.state.waiting_head, JobId{4});
  EXPECT_EQ(w.state.overtakes, 1);
}

// The quick "more than the most free memory" dismissal is only for jobs that go through the
// memory filter: a whole-GPU policy, and a need no GPU could hold with its margin (placed alone
// on an idle GPU), start where a GPU is idle (a review found them left waiting).
TEST(Backfill, JobsPlacedWithoutAMemoryCheckAreNotDismissedByTheFreeMemoryBound) {
  for (PolicyKind k : {PolicyKind::Exclusive, PolicyKind::Magm}) {
    World w;
    w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960)};
    w.ledger.reserve(100, 0, 10000, false, 0);  // GPU 0 busy, GPU 1 idle
    // The head wants both GPUs (35 000 each; GPU 0 has 30 960 free); behind it, 40 000 MiB + the 2 GiB margin is more than GPU 1s
    // 40 960 free, yet an idle GPU takes it alone.
    const auto d = w.decide(backfill_sched(5, 200, k), {test::job(1, 35000, 2), test::job(2, 40000)});
    ASSERT_EQ(d.placements.size(), 1u) << to_string(k);
    EXPECT_EQ(d.placements[0].job, 2u);
    EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});
    EXPECT_EQ(d.placements[0].overtook, JobId{1});
  }
}

// A site policy that leaves fits_memory out places by its other filters alone; the backfill loop's
// free-memory shortcut must not dismiss a job that policy would place (it rests on fits_memory).
TEST(Backfill, APolicyWithoutTheMemoryFilterIsNotBoundByFreeMemory) {
  World w = busy_gpu();  // 10 960 MiB free
  w.ledger = Ledger{};
  w.ledger.reserve(100, 0, 30000, false, 0, 0.5);  // and a predicted 50 % SMACT placed
  Conditions c;
  c.smact_cap = 0.8;
  const Policy compute_only = build_policy({"compute-only", {"smact_predicted"}, {{"first", 1}}}, c);
  ASSERT_FALSE(compute_only.checks_memory);
  const Scheduler s(SchedulerConfig(compute_only, {}, Backfill{5, 200}));
  Job head = test::job(1, 1000), big = test::job(2, 30000);
  head.solo_smact = 0.9;  // 0.5 + 0.9 over the cap: the head waits
  big.solo_smact = 0.1;   // 0.5 + 0.1 under it: the policy places it, whatever its memory
  const auto d = w.decide(s, {head, big});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, 2u);
  EXPECT_EQ(d.placements[0].overtook, JobId{1});
  EXPECT_TRUE(make_policy(PolicyKind::Magm).checks_memory);
  EXPECT_FALSE(make_policy(PolicyKind::Exclusive).checks_memory);
}

TEST(Backfill, OnlyDepthJobsBehindTheHeadAreLookedAt) {
  World w = busy_gpu();
  std::vector<Job> q = {test::job(1, 20000)};
  for (JobId id = 2; id < 12; ++id) q.push_back(test::job(id, 15000));  // do not fit
  q.push_back(test::job(12, 1000));
  EXPECT_TRUE(w.decide(backfill_sched(5, 10), q).placements.empty());
  const auto d = w.decide(backfill_sched(5, 11), q);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, 12u);
}

TEST(Backfill, AWaitingRecoveryHeadStillHoldsTheMainQueue) {
  World w = busy_gpu();
  Job rec = test::job(7, 20000);
  rec.recovery_alone = true;
  const auto d = w.decide(backfill_sched(5), {test::job(2, 1000)}, {rec});
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked);
  EXPECT_TRUE(d.blocked->recovery);
}

TEST(Backfill, ARejectedJobIsNotAnOvertake) {
  World w = busy_gpu();
  const auto d = w.decide(backfill_sched(1), {test::job(1, 20000), test::job(2, 1000, 4), test::job(3, 1000)});
  ASSERT_EQ(d.rejections.size(), 1u);  // 4 GPUs on a 1-GPU server: the caller fails it
  EXPECT_EQ(d.rejections[0].job, 2u);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, 3u);
}

}  // namespace
}  // namespace colo
