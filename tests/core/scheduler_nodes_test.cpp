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

Scheduler nodes_sched(PolicyKind k) {
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
  const auto d = w.decide(nodes_sched(PolicyKind::Magm), {test::job(1, 8000, 2)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, (std::vector<int>{3, 2}));
}

TEST(SchedulerNodes, WaitsWhenNoServerHasEnoughQualifyingGpus) {
  World w = two_by_two();
  w.ledger.reserve(100, 1, 35000, false, 0);
  w.ledger.reserve(101, 3, 35000, false, 0);
  const auto d = w.decide(nodes_sched(PolicyKind::Magm), {test::job(1, 8000, 2)}, {}, true);
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked);
  EXPECT_THAT(d.blocked->reason, HasSubstr("no server has 2"));
}

TEST(SchedulerNodes, MoreGpusThanAnyServerHasIsRejectedNotQueued) {
  World w = two_by_two();
  const auto d = w.decide(nodes_sched(PolicyKind::Magm), {test::job(1, 8000, 3)});
  ASSERT_EQ(d.rejections.size(), 1u);
  EXPECT_THAT(d.rejections[0].reason, HasSubstr("3 GPU(s) on one server, the largest has 2"));
}

TEST(SchedulerNodes, OneGpuJobsSeeTheWholeCluster) {
  World w = two_by_two();
  w.ledger.reserve(100, 0, 20000, false, 0);
  w.ledger.reserve(101, 1, 20000, false, 0);
  w.ledger.reserve(102, 2, 20000, false, 0);
  const auto d = w.decide(nodes_sched(PolicyKind::Magm), {test::job(1, 8000)});
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

namespace colo {
namespace {

// Slurm with `colo slurm node-weight`: the server whose emptiest GPU under the SMACT cap has the
// most free memory first, first fit inside it; memory alone decides whether a GPU qualifies.
TEST(SchedulerNodes, NodeWeightPolicyRanksServersThenFirstFit) {
  World w = two_by_two();
  w.gpus[0].used_mib = 30000;  // node 0: GPU 0 busy in memory, GPU 1 saturated in SM
  w.gpus[1].used_mib = 1000;
  w.gpus[1].smact = 0.95;
  w.gpus[2].used_mib = 8000;   // node 1: its emptiest GPU under the cap has 8000 MiB used
  w.gpus[3].used_mib = 9000;
  const auto d = w.decide(nodes_sched(PolicyKind::NodeWeight), {test::job(1, 4000), test::job(2, 4000)});
  ASSERT_EQ(d.placements.size(), 2u);
  // Node 0's best GPU under the cap (GPU 0) has 10960 MiB free, node 1's (GPU 2) 32960: node 1,
  // and its first GPU with room (GPU 2), for both (the weights are the round's, as Slurm's are
  // until the next update).
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{2});
  EXPECT_EQ(d.placements[1].gpu_indices, std::vector<int>{2});
  EXPECT_EQ(make_policy(PolicyKind::NodeWeight).describe(), "node-weight: fits_memory -> lowest_node_weight");
  EXPECT_EQ(policy_kind_from_string("node-weight"), PolicyKind::NodeWeight);
}

}  // namespace
}  // namespace colo
