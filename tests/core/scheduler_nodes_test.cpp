// Node structure (the simulator's clusters): a multi-GPU job takes all its GPUs from one server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/policy/policies.h"
#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

using test::World;
using ::testing::HasSubstr;

Scheduler sched(PolicyKind k) {
  SchedulerConfig c;
  c.policy = make_policy(k);
  return Scheduler(c);
}

// Two servers of two 40 GiB GPUs: GPUs 0, 1 on node 0; 2, 3 on node 1.
World two_by_two() {
  World w;
  for (int i = 0; i < 4; ++i) {
    w.gpus.push_back(test::gpu(i, 40960));
    w.gpus.back().node = i / 2;
  }
  return w;
}

TEST(SchedulerNodes, AMultiGpuJobStaysOnOneServer) {
  World w = two_by_two();
  w.ledger.reserve(100, 1, 35000, false, 0);  // node 0 keeps one GPU with room
  w.ledger.reserve(101, 2, 10000, false, 0);  // node 1 both, GPU 3 emptiest
  // MAGM's two best GPUs overall are 0 and 3 (different servers): the job gets node 1's pair.
  const auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 8000, 2)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, (std::vector<int>{3, 2}));
}

TEST(SchedulerNodes, WaitsWhenNoServerHasEnoughQualifyingGpus) {
  World w = two_by_two();
  w.ledger.reserve(100, 1, 35000, false, 0);
  w.ledger.reserve(101, 3, 35000, false, 0);
  const auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 8000, 2)}, {}, true);
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked);
  EXPECT_THAT(d.blocked->reason, HasSubstr("no server has 2"));
}

TEST(SchedulerNodes, MoreGpusThanAnyServerHasIsRejectedNotQueued) {
  World w = two_by_two();
  const auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 8000, 3)});
  ASSERT_EQ(d.rejections.size(), 1u);
  EXPECT_THAT(d.rejections[0].reason, HasSubstr("3 GPU(s) on one server, the largest has 2"));
}

TEST(SchedulerNodes, OneGpuJobsSeeTheWholeCluster) {
  World w = two_by_two();
  w.ledger.reserve(100, 0, 20000, false, 0);
  w.ledger.reserve(101, 1, 20000, false, 0);
  w.ledger.reserve(102, 2, 20000, false, 0);
  const auto d = w.decide(sched(PolicyKind::Magm), {test::job(1, 8000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{3});
}

TEST(Policies, ACapOfAHundredPercentIsNoSmactCondition) {
  Conditions c;
  c.smact_cap = 1.0;
  EXPECT_EQ(make_policy(PolicyKind::FirstFit, c).describe(), "first-fit: fits_memory -> first");
  c.smact_cap = 0.8;
  EXPECT_EQ(make_policy(PolicyKind::FirstFit, c).describe(), "first-fit: fits_memory+smact_below -> first");
}

}  // namespace
}  // namespace colo
