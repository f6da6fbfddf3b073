#include "core/policy/node_weight.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

GpuLoad gpu(MiB used, std::optional<double> smact, bool healthy = true) { return GpuLoad{40960, used, smact, healthy}; }

TEST(NodeWeight, AnEmptyGpuUnderTheCapIsTheBestNode) {
  EXPECT_EQ(node_weight({gpu(0, 0.0), gpu(30720, 0.9)}, 0.8), kIdleNodeWeight);
}

TEST(NodeWeight, MagmOrderTheEmptiestGpuUnderTheCapCounts) {
  // 10 GiB used on the best GPU under the cap: 1 + 1000 × 0.25.
  EXPECT_EQ(node_weight({gpu(10240, 0.5), gpu(0, 0.95)}, 0.8), 251);
  EXPECT_LT(node_weight({gpu(10240, 0.5)}, 0.8), node_weight({gpu(20480, 0.5)}, 0.8));
}

TEST(NodeWeight, NoSmHeadroomRanksAfterEveryNodeWithSome) {
  const int busy = node_weight({gpu(0, 0.85), gpu(0, 0.99)}, 0.8);
  EXPECT_EQ(busy, kBusyNodeWeight);
  EXPECT_GT(busy, node_weight({gpu(40000, 0.1)}, 0.8));  // almost full, but it has SM headroom
  EXPECT_EQ(node_weight({gpu(30720, 0.9)}, 0.8), kBusyNodeWeight + 750);
}

TEST(NodeWeight, UnmeasuredSmactCountsAsHeadroomAndBrokenGpusDoNotCount) {
  EXPECT_EQ(node_weight({gpu(0, std::nullopt)}, 0.8), kIdleNodeWeight);
  EXPECT_EQ(node_weight({gpu(0, 0.0, false), gpu(20480, 0.1)}, 0.8), 501);
  EXPECT_EQ(node_weight({gpu(0, 0.0, false)}, 0.8), kNoGpuNodeWeight);
  EXPECT_EQ(node_weight({}, 0.8), kNoGpuNodeWeight);
  EXPECT_EQ(node_weight({GpuLoad{0, 0, 0.0, true}}, 0.8), kNoGpuNodeWeight);  // a GPU of no memory is no GPU
  EXPECT_EQ(node_weight({gpu(50000, 0.1)}, 0.8), 1001);  // over-reported use counts as full: 1 + 1000
}

}  // namespace
}  // namespace colo
