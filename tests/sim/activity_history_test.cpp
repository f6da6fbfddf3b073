#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sim/activity_history.h"

namespace colo::sim {
namespace {

// What a monitor sampling every second sees: sample k = mean activity over (k−1, k], found by
// integrating the step function finely; the window average is the mean of the last w samples.
struct Steps {
  std::vector<std::pair<double, double>> changes;  // (time, level), sorted
  double at(double t) const {
    double v = 0;
    for (auto [ct, lv] : changes)
      if (ct <= t) v = lv;
    return v;
  }
  double sample(long k) const {  // exact mean over (k−1, k]
    double acc = 0, from = static_cast<double>(k - 1);
    for (auto [ct, lv] : changes)
      if (ct > from && ct < static_cast<double>(k)) {
        acc += at(from) * (ct - from);
        from = ct;
      }
    acc += at(from) * (static_cast<double>(k) - from);
    return acc;
  }
  double window(long k, int w) const {
    double s = 0;
    for (long i = k - w + 1; i <= k; ++i) s += sample(i);
    return s / w;
  }
};

TEST(ActivityHistory, WindowAverageEqualsOneSecondSampling) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 50; ++trial) {
    ActivityHistory h;
    Steps s;
    double t = 0;
    for (int i = 0; i < 12; ++i) {
      t += u(rng) * 60;
      const double lv = u(rng) < 0.2 ? 0.0 : u(rng);
      h.set(t, lv);
      s.changes.push_back({t, lv});
    }
    for (long k = 0; k < static_cast<long>(t) + 200; k += 7)
      ASSERT_NEAR(h.window_average(k, 90), s.window(k, 90), 1e-9) << "trial " << trial << " tick " << k;
  }
}

TEST(ActivityHistory, FirstTickBelowMatchesAScan) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    ActivityHistory h;
    double t = 0;
    for (int i = 0; i < 6; ++i) {
      t += u(rng) * 50;
      h.set(t, u(rng));
    }
    const long from = static_cast<long>(t);
    const double cap = 0.2 + 0.6 * u(rng);
    std::optional<long> scan;
    for (long k = from + 1; k < from + 400; ++k)
      if (h.window_average(k, 90) < cap) {
        scan = k;
        break;
      }
    ASSERT_EQ(h.first_tick_below(from, cap, 90), scan) << "trial " << trial;
  }
}

TEST(ActivityHistory, ForgettingOldChangesKeepsRecentWindows) {
  ActivityHistory a, b;
  for (int i = 1; i <= 100; ++i) {
    a.set(i * 13.5, (i % 7) / 7.0);
    b.set(i * 13.5, (i % 7) / 7.0);
    b.forget_before(static_cast<long>(i * 13.5), 90);
  }
  for (long k = 1350; k < 1500; ++k) ASSERT_DOUBLE_EQ(a.window_average(k, 90), b.window_average(k, 90));
  EXPECT_DOUBLE_EQ(a.integral(1400), b.integral(1400));
}

}  // namespace
}  // namespace colo::sim
