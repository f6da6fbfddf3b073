#include "slurm/shard_plan.h"

#include <climits>

#include <gtest/gtest.h>

#include "core/error.h"

namespace colo::slurm {
namespace {

TEST(ShardPlan, OneGiBUnitWhileTheNodeStaysUnderSlurmsLimit) {
  EXPECT_EQ(choose_shard_mib({40960, 40960, 40960, 40960}, 1024), 1024);  // 160 shards
  EXPECT_EQ(shards_in_gpu(40960, 1024), 40);
  EXPECT_EQ(shards_in_gpu(40536, 1024), 39);  // never more memory than the GPU has
}

TEST(ShardPlan, DoublesTheUnitWhenANodeWouldPassSlurms1024) {
  // 8 × 141 GiB H200 at 1 GiB = 1128 shards: too many; 2 GiB = 564.
  const std::vector<MiB> h200(8, 144384);
  EXPECT_EQ(choose_shard_mib(h200, 1024), 2048);
  // A tiny unit keeps doubling until it fits.
  EXPECT_EQ(choose_shard_mib({81920}, 1), 128);
  EXPECT_LE(shards_in_gpu(81920, 128), kMaxShardsPerNode);
}

TEST(ShardPlan, RejectsNoGpusAndBadUnits) {
  EXPECT_THROW(choose_shard_mib({}, 1024), UserError);
  EXPECT_THROW(choose_shard_mib({40960}, 0), UserError);
  EXPECT_EQ(shards_in_gpu(40960, 0), 0);
}

TEST(ShardPlan, ShardsForAddsTheMarginAndRoundsUp) {
  EXPECT_EQ(shards_for(8192, 0.10, 1024), 9);   // 8.8 → 9
  EXPECT_EQ(shards_for(1024, 0.0, 1024), 1);
  EXPECT_EQ(shards_for(1025, 0.0, 1024), 2);
  EXPECT_EQ(shards_for(0, 0.10, 1024), 1);      // at least one
  EXPECT_EQ(shards_for(LLONG_MAX / 2, 10.0, 1), INT_MAX);  // saturates, no overflow
  EXPECT_EQ(shards_for(51200, 0.10, 1024), 55);  // exactly 55: 56320.000000000007 in binary must not round up
  EXPECT_EQ(shards_for(51201, 0.10, 1024), 56);
}

TEST(ShardPlan, ParsesTresPerNodeForms) {
  auto r = parse_tres_per_node("gres:shard:12");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shards, 12);
  EXPECT_TRUE(r->size_given);
  r = parse_tres_per_node("gres:shard");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->size_given);
  r = parse_tres_per_node("gres/gpu:a100:2");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->whole_gpus, 2);
  r = parse_tres_per_node("gres:foo:1,gres:shard:3");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shards, 3);
  EXPECT_FALSE(parse_tres_per_node(""));
  EXPECT_FALSE(parse_tres_per_node("gres:foo:4"));
  EXPECT_FALSE(parse_tres_per_node("cpu:4"));
  EXPECT_THROW(parse_tres_per_node("gres:shard:99999999999"), UserError);
}

TEST(ShardPlan, FormatsWhatItParses) {
  EXPECT_EQ(to_tres_per_node(TresRequest{7, 0, true}), "gres:shard:7");
  EXPECT_EQ(to_tres_per_node(TresRequest{0, 1, true}), "gres:gpu:1");
  const auto back = parse_tres_per_node(to_tres_per_node(TresRequest{15, 0, true}));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shards, 15);
}

// Escalation changes the GPU share only: the job's other generic resources stay.
TEST(ShardPlan, WithGpuRequestKeepsTheOtherGres) {
  EXPECT_EQ(with_gpu_request("gres:shard:5,gres:nvme:1", TresRequest{10, 0, true}), "gres:shard:10,gres:nvme:1");
  EXPECT_EQ(with_gpu_request("gres/nvme:1,gres/shard:5", TresRequest{0, 1, true}), "gres:gpu:1,gres/nvme:1");
  EXPECT_EQ(with_gpu_request("gres:shard:5", TresRequest{10, 0, true}), "gres:shard:10");
}

}  // namespace
}  // namespace colo::slurm
