#include <gtest/gtest.h>

#include "estimate/gpumemnet/gpumemnet_metrics.h"

namespace colo::estimate {
namespace {

TEST(GpuMemNetMetrics, MacroScoresWorkedByHand) {
  // truth 0 0 1 1 2, predicted 0 1 1 1 0:
  // class 0: tp1 fp1 fn1 -> p .5 r .5 f .5; class 1: tp2 fp1 fn0 -> p 2/3 r 1 f .8;
  // class 2: tp0 fp0 fn1 -> p 0 r 0 f 0.
  const auto s = score_classification({0, 0, 1, 1, 2}, {0, 1, 1, 1, 0});
  EXPECT_DOUBLE_EQ(s.accuracy, 3.0 / 5);
  EXPECT_DOUBLE_EQ(s.precision, (0.5 + 2.0 / 3 + 0) / 3);
  EXPECT_DOUBLE_EQ(s.recall, (0.5 + 1 + 0) / 3);
  EXPECT_NEAR(s.f1, (0.5 + 0.8 + 0) / 3, 1e-12);
  EXPECT_EQ(s.n, 5);
}

TEST(GpuMemNetMetrics, PredictedOnlyClassCountsInTheMacroAverage) {
  const auto s = score_classification({0, 0}, {0, 3});
  EXPECT_DOUBLE_EQ(s.precision, (1.0 + 0.0) / 2);
  EXPECT_DOUBLE_EQ(s.recall, (0.5 + 0.0) / 2);
}

TEST(GpuMemNetMetrics, SummaryMeanAndSpread) {
  ClassificationScores a, b;
  a.accuracy = 0.8;
  b.accuracy = 1.0;
  a.n = b.n = 10;
  const auto s = summarize({a, b});
  EXPECT_DOUBLE_EQ(s.mean.accuracy, 0.9);
  EXPECT_NEAR(s.stddev.accuracy, 0.1, 1e-12);
  EXPECT_EQ(s.mean.n, 20);
}

}  // namespace
}  // namespace colo::estimate
