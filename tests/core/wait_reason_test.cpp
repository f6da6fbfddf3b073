// Decision::blocked: the queue head that could not be placed and, when asked for (explain),
// why — each GPU charged to the first filter that refused it, in the filter's own words.
#include <gtest/gtest.h>

#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

// These tests ask for the explanation unless they say otherwise.
struct ExplainWorld : test::World {
  Decision decide(const Scheduler& s, const std::vector<Job>& main, const std::vector<Job>& rec = {},
                  bool explain = true) {
    return test::World::decide(s, main, rec, explain);
  }
};

Scheduler magm() { return Scheduler(SchedulerConfig{make_policy(PolicyKind::Magm), {}}); }

ExplainWorld two_gpus() {
  ExplainWorld w;
  for (int i = 0; i < 2; ++i) w.gpus.push_back(test::gpu(i, 40960));
  return w;
}

TEST(WaitReason, MemoryShortfallNamesNeedMarginAndTheMostFreeGpu) {
  ExplainWorld w = two_gpus();
  w.ledger.reserve(100, 0, 32768, false, 0);  // 8 GiB left
  w.ledger.reserve(101, 1, 36864, false, 0);  // 4 GiB left
  const Decision d = w.decide(magm(), {test::job(1, 12288), test::job(2, 1024)});
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->job, 1u);
  EXPECT_FALSE(d.blocked->recovery);
  EXPECT_EQ(d.blocked->reason, "needs 12.0 GiB + 2.0 GiB margin; most free is 8.0 GiB on GPU 0");
}

TEST(WaitReason, UnknownNeedWantsTheMinimumFree) {
  ExplainWorld w = two_gpus();
  w.ledger.reserve(100, 0, 38912, false, 0);
  w.ledger.reserve(101, 1, 38912, false, 0);
  const Decision d = w.decide(magm(), {test::job(1, std::nullopt)});
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->reason, "need unknown: wants 5.0 GiB free; most free is 2.0 GiB on GPU 0");
}

TEST(WaitReason, SmactCapNamesEachBusyGpu) {
  ExplainWorld w = two_gpus();
  w.gpus[0].smact = 0.9;
  w.gpus[1].smact = 0.85;
  const Decision d = w.decide(magm(), {test::job(1, 1024)});
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->reason, "SMACT at or above the 80 % cap on GPU 0 (90 %), GPU 1 (85 %)");
}

TEST(WaitReason, DrainedAndUnhealthyGpusAreNamedThenTheOtherFilters) {
  ExplainWorld w = two_gpus();
  w.gpus.push_back(test::gpu(2, 40960));
  w.gpus[0].drained = true;
  w.gpus[1].healthy = false;
  w.ledger.reserve(100, 2, 40960 - 4096, false, 0);
  const Decision d = w.decide(magm(), {test::job(1, 12288)});
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->reason,
            "GPU 0 drained, GPU 1 unhealthy; needs 12.0 GiB + 2.0 GiB margin; most free is 4.0 GiB on GPU 2");
}

TEST(WaitReason, MultiGpuJobSaysHowManyQualify) {
  ExplainWorld w = two_gpus();
  w.gpus.push_back(test::gpu(2, 40960));
  w.gpus[2].drained = true;
  w.ledger.reserve(100, 1, 36864, false, 0);
  const Decision d = w.decide(magm(), {test::job(1, 12288, 2)});
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->reason,
            "needs 2 GPUs at once, 1 qualifies; GPU 2 drained; needs 12.0 GiB + 2.0 GiB margin; most free is 4.0 GiB on "
            "GPU 1");
}

TEST(WaitReason, StrictRecoveryHeadWaitsForAnIdleGpuAndBlocksTheMainQueue) {
  ExplainWorld w = two_gpus();
  w.gpus[0].running = {7};
  w.gpus[1].running = {8, 9};
  w.ledger.reserve(7, 0, 1024, false, 0);
  w.ledger.reserve(8, 1, 1024, false, 0);
  w.ledger.reserve(9, 1, 1024, false, 0);
  Job r = test::job(5, 4096);
  r.state = JobState::Recovering;
  r.recovery_alone = true;
  const Decision d = w.decide(magm(), {test::job(6, 1024)}, {r});
  EXPECT_TRUE(d.placements.empty());  // job 6 would fit, but waits behind the recovery head
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->job, 5u);
  EXPECT_TRUE(d.blocked->recovery);
  EXPECT_EQ(d.blocked->reason, "recovery: waits for an idle GPU: GPU 0 runs job 7, GPU 1 runs jobs 8, 9");
}

TEST(WaitReason, WithoutExplainOnlyTheHeadIsNamed) {
  ExplainWorld w = two_gpus();
  w.gpus[0].smact = 0.95;
  w.gpus[1].smact = 0.95;
  const Decision d = w.decide(magm(), {test::job(1, 1024)}, {}, /*explain=*/false);
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_EQ(d.blocked->job, 1u);
  EXPECT_TRUE(d.blocked->reason.empty());
}

TEST(WaitReason, NothingBlockedWhenEveryJobIsPlaced) {
  ExplainWorld w = two_gpus();
  const Decision d = w.decide(magm(), {test::job(1, 1024), test::job(2, 1024)});
  EXPECT_EQ(d.placements.size(), 2u);
  EXPECT_FALSE(d.blocked.has_value());
}

}  // namespace
}  // namespace colo
