// A window's mean board power (cli/power_meter.h): the energy counter over the stamped interval
// when the GPU has one, whatever the power readings say; their mean otherwise; nothing without
// either. Timestamps are given, so no result depends on how fast the test runs.
#include <gtest/gtest.h>

#include "cli/power_meter.h"

namespace colo::cli {
namespace {

using std::chrono::milliseconds;

gpu::DeviceSample sample(std::optional<std::uint64_t> energy_mj, std::optional<double> power_w) {
  gpu::DeviceSample s;
  s.energy_mj = energy_mj;
  s.power_w = power_w;
  return s;
}

TEST(PowerMeter, EnergyCounterOverTheStampedInterval) {
  const PowerMeter::Clock::time_point t0{};
  PowerMeter m;
  // 300 W for 2 s, then 100 W for 2 s: 800 J over 4 s, whatever the instantaneous readings.
  m.add(sample(1'000'000, 999), t0);
  m.add(sample(1'600'000, 5), t0 + milliseconds(2000));
  m.add(sample(1'800'000, 5), t0 + milliseconds(4000));
  ASSERT_TRUE(m.watts());
  EXPECT_DOUBLE_EQ(*m.watts(), 200);
}

TEST(PowerMeter, PowerReadingsWithoutACounter) {
  PowerMeter m;
  const PowerMeter::Clock::time_point t0{};
  m.add(sample(std::nullopt, 100), t0);
  m.add(sample(std::nullopt, 300), t0 + milliseconds(1000));
  ASSERT_TRUE(m.watts());
  EXPECT_DOUBLE_EQ(*m.watts(), 200);
  // One counter reading is no interval: the readings' mean stands.
  m.add(sample(5'000, 200), t0 + milliseconds(2000));
  EXPECT_DOUBLE_EQ(*m.watts(), 200);
}

TEST(PowerMeter, CounterThatWentBackwardsStartsOver) {
  PowerMeter m;
  const PowerMeter::Clock::time_point t0{};
  m.add(sample(9'000'000, std::nullopt), t0);
  m.add(sample(1'000, std::nullopt), t0 + milliseconds(1000));  // driver reloaded
  m.add(sample(51'000, std::nullopt), t0 + milliseconds(2000));
  ASSERT_TRUE(m.watts());
  EXPECT_DOUBLE_EQ(*m.watts(), 50);
}

TEST(PowerMeter, NothingWithoutReadings) {
  PowerMeter m;
  EXPECT_FALSE(m.watts());
  m.add(sample(std::nullopt, std::nullopt), PowerMeter::Clock::time_point{});
  EXPECT_FALSE(m.watts());
}

}  // namespace
}  // namespace colo::cli
