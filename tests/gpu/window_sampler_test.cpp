// Window averages and per-process peaks, driven by hand-made timestamps.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gpu/window_sampler.h"

namespace colo::gpu {
namespace {

TEST(WindowSampler, AveragesOverTheLastWindowOnly) {
  WindowSampler w(90.0);
  // 1 s sampling: 90 samples at SMACT 0.2, then 90 at 0.8.
  for (int t = 0; t < 90; ++t) w.add(t, 0.2, 0.5, {});
  EXPECT_EQ(w.samples(), 90);
  EXPECT_NEAR(*w.smact_average(), 0.2, 1e-12);
  for (int t = 90; t < 135; ++t) w.add(t, 0.8, 0.5, {});
  // Window (44, 134]: 45 samples of 0.2 (t=45..89) and 45 of 0.8.
  EXPECT_EQ(w.samples(), 90);
  EXPECT_NEAR(*w.smact_average(), 0.5, 1e-12);
  for (int t = 135; t < 180; ++t) w.add(t, 0.8, 0.5, {});
  EXPECT_NEAR(*w.smact_average(), 0.8, 1e-12);
  EXPECT_NEAR(*w.util_average(), 0.5, 1e-12);
}

TEST(WindowSampler, ConfigurableWindowAndIrregularSampling) {
  WindowSampler w(10.0);
  w.add(0.0, 1.0, std::nullopt, {});
  w.add(4.5, 0.0, std::nullopt, {});
  w.add(9.9, 0.5, std::nullopt, {});
  EXPECT_NEAR(*w.smact_average(), 0.5, 1e-12);
  w.add(10.0, 0.5, std::nullopt, {});  // t=0 falls out: window is (0, 10]
  EXPECT_EQ(w.samples(), 3);
  EXPECT_NEAR(*w.smact_average(), 1.0 / 3.0, 1e-12);
  EXPECT_FALSE(w.util_average().has_value());
  w.add(100.0, 0.9, std::nullopt, {});  // a gap longer than the window empties it
  EXPECT_EQ(w.samples(), 1);
  EXPECT_NEAR(*w.smact_average(), 0.9, 1e-12);
}

TEST(WindowSampler, MissingSmactIsNotZero) {
  WindowSampler w(90.0);
  w.add(0, std::nullopt, 0.3, {});
  EXPECT_FALSE(w.smact_average().has_value());  // unmeasurable, not idle
  w.add(1, 0.6, 0.3, {});
  w.add(2, std::nullopt, 0.3, {});
  EXPECT_NEAR(*w.smact_average(), 0.6, 1e-12);  // only samples that carry it count
}

TEST(WindowSampler, PerProcessPeakSurvivesTheWindowAndCanBeForgotten) {
  WindowSampler w(5.0);
  w.add(0, std::nullopt, std::nullopt, {{100, 1000}, {200, 50}});
  w.add(1, std::nullopt, std::nullopt, {{100, 4000}});
  w.add(2, std::nullopt, std::nullopt, {{100, 2500}, {200, 70}});
  for (int t = 3; t < 20; ++t) w.add(t, std::nullopt, std::nullopt, {{100, 2000}});
  EXPECT_EQ(w.peak_mib(100), 4000);  // the peak, though its sample left the window long ago
  EXPECT_EQ(w.peak_mib(200), 70);
  EXPECT_EQ(w.peak_mib(300), 0);
  w.forget(100);
  EXPECT_EQ(w.peak_mib(100), 0);
  EXPECT_EQ(w.peaks().size(), 1u);
}

TEST(WindowSampler, TakesADeviceSample) {
  WindowSampler w;
  EXPECT_DOUBLE_EQ(w.window(), 90.0);
  DeviceSample s;
  s.smact = 0.25;
  s.gpu_util = 0.75;
  s.memory.process_mib = {{7, 123}};
  w.add(1.0, s);
  EXPECT_DOUBLE_EQ(*w.smact_average(), 0.25);
  EXPECT_DOUBLE_EQ(*w.util_average(), 0.75);
  EXPECT_EQ(w.peak_mib(7), 123);
}

TEST(WindowSampler, RejectsTimeGoingBackwardsAndBadWindows) {
  WindowSampler w(90.0);
  w.add(10, 0.1, 0.1, {});
  EXPECT_THROW(w.add(9, 0.1, 0.1, {}), std::invalid_argument);
  EXPECT_NO_THROW(w.add(10, 0.1, 0.1, {}));  // equal timestamps are fine
  EXPECT_THROW(WindowSampler(0.0), std::invalid_argument);
  EXPECT_THROW(WindowSampler(-1.0), std::invalid_argument);
}

}  // namespace
}  // namespace colo::gpu
