// Node structure (the simulator's clusters): a multi-GPU job takes all its GPUs from one server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

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

namespace colo {
namespace {

// The scheduler walks a server's GPUs as one run of the snapshot list when servers come grouped
// (as a cluster lists them) and falls back to a per-server map otherwise. Both must choose the
// same GPUs: the same cluster listed grouped and interleaved, every GPU's free memory distinct
// before and after any placements (used memory in steps of 1499 MiB, needs in steps of 1000 MiB:
// no position tie-breaks), multi-GPU jobs of 2–4 GPUs.
TEST(SchedulerNodes, GroupedAndInterleavedListingsOfAClusterChooseTheSameGpus) {
  std::mt19937 rng(11);
  for (int round = 0; round < 100; ++round) {
    World grouped;
    const int nodes = 2 + round % 5, per = 4;
    std::vector<int> used(static_cast<size_t>(nodes * per));
    std::iota(used.begin(), used.end(), 1);
    std::shuffle(used.begin(), used.end(), rng);
    for (int i = 0; i < nodes * per; ++i) {
      grouped.gpus.push_back(test::gpu(i, 81920, used[static_cast<size_t>(i)] * 1499));
      grouped.gpus.back().node = 10 + i / per;  // server ids need not start at 0
    }
    World interleaved;
    for (int k = 0; k < per; ++k)  // GPU k of every server, then GPU k + 1 of every server
      for (int n = 0; n < nodes; ++n) interleaved.gpus.push_back(grouped.gpus[static_cast<size_t>(n * per + k)]);
    std::vector<Job> jobs;
    for (int j = 0; j < 6; ++j) jobs.push_back(test::job(j + 1, 4000 + 3000 * j, 2 + (j + round) % 3));
    for (World* w : {&grouped, &interleaved}) w->ledger.reserve(99, 0, 20000, false, 0);
    const Scheduler s = nodes_sched(PolicyKind::Magm);
    const Decision a = grouped.decide(s, jobs), b = interleaved.decide(s, jobs);
    ASSERT_EQ(a.placements.size(), b.placements.size()) << "round " << round;
    EXPECT_FALSE(a.placements.empty());
    for (size_t p = 0; p < a.placements.size(); ++p)
      EXPECT_EQ(a.placements[p].gpu_indices, b.placements[p].gpu_indices) << "round " << round << ", placement " << p;
    EXPECT_EQ(a.rejections.size(), b.rejections.size());
  }
}

// A server whose GPUs are not listed together still counts all of them.
TEST(SchedulerNodes, AServerListedInSeveralRunsCountsAllItsGpus) {
  World w;
  for (int i = 0; i < 4; ++i) {
    w.gpus.push_back(test::gpu(i, 40960));
    w.gpus.back().node = i == 2 ? 1 : 0;  // node 0: GPUs 0, 1 and 3
  }
  const auto d = w.decide(nodes_sched(PolicyKind::Magm), {test::job(1, 8000, 3)});
  EXPECT_TRUE(d.rejections.empty());
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, (std::vector<int>{0, 1, 3}));
}

}  // namespace
}  // namespace colo
