#include <gtest/gtest.h>

#include <vector>

#include "sim/mps_model.h"
#include "sim/power_model.h"
#include "sim/streams_model.h"

namespace colo::sim {
namespace {

std::vector<double> same(int n, double s) { return std::vector<double>(static_cast<size_t>(n), s); }

TEST(MpsModel, MatchesTheThesisObservations) {
  const auto mps = make_mps_model();
  EXPECT_DOUBLE_EQ(mps->share(same(1, 0.9)).slowdown, 1.0);
  EXPECT_LT(mps->share(same(2, 0.25)).slowdown, 1.1);          // 2-way small: ≈ no slowdown
  const double three = mps->share(same(3, 0.55)).slowdown;      // 3-way mid-size: +50–110 %
  EXPECT_GE(three, 1.5);
  EXPECT_LE(three, 2.1);
  const double seven = mps->share(same(7, 0.25)).slowdown;      // 7-way smallest: 2–2.5×
  EXPECT_GE(seven, 2.0);
  EXPECT_LE(seven, 2.5);
  EXPECT_GE(mps->share(same(2, 0.95)).slowdown, 1.9);           // large jobs gain ~nothing
  EXPECT_DOUBLE_EQ(mps->share(same(3, 0.5)).activity, 1.0);
  EXPECT_DOUBLE_EQ(mps->share({}).activity, 0.0);
}

TEST(StreamsModel, BarelyBetterThanSequentialAndWorseThanMps) {
  const auto streams = make_streams_model();
  const auto mps = make_mps_model();
  for (double s : {0.1, 0.25, 0.5, 0.9}) {
    for (int n : {2, 3, 5}) {
      const double st = streams->share(same(n, s)).slowdown;
      EXPECT_GE(st, mps->share(same(n, s)).slowdown) << s << " " << n;
      EXPECT_GT(st, 0.75 * n) << "time slicing must stay close to sequential";
    }
  }
  EXPECT_DOUBLE_EQ(streams->share(same(1, 0.3)).slowdown, 1.0);
}

TEST(PowerModel, IdleToMax) {
  PowerParams p;
  EXPECT_DOUBLE_EQ(gpu_watts(p, false, 0), p.idle_watts);
  EXPECT_DOUBLE_EQ(gpu_watts(p, true, 0), p.busy_watts);
  EXPECT_DOUBLE_EQ(gpu_watts(p, true, 1), p.max_watts);
  EXPECT_DOUBLE_EQ(gpu_joules(p, 10, 4, 2), p.idle_watts * 6 + p.busy_watts * 4 + (p.max_watts - p.busy_watts) * 2);
}

}  // namespace
}  // namespace colo::sim
