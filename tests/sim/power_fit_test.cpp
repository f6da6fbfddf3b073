// Fitting the power model to measured windows (sim/models/power_fit.h): what the model drew is
// recovered exactly, per-job slopes (as on the H200 of docs/GPU-VALIDATION.md §5) leave the busy
// floor exact and show in the solo rms, and data that cannot fix a value is refused or falls back,
// never written out of the model file's order (idle ≤ busy ≤ max).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sim/models/power_fit.h"
#include "sim/models/power_model.h"

namespace colo::sim {
namespace {

TEST(PowerFit, RecoversWhatThePowerModelDrew) {
  const PowerParams p{70, 110, 650};
  const std::vector<double> s = {0.8, 0.65, 0.25};
  std::vector<PowerSolo> solo;
  for (double x : s) solo.push_back({x, gpu_watts(p, true, x)});
  // Pairs slowed (Σ rates > 1 under MPS, < 1 time-sliced): power from the work they did.
  std::vector<PowerShared> shared;
  for (auto [i, k, ri, rk] : {std::tuple{0, 1, 0.66, 0.61}, std::tuple{0, 2, 0.87, 0.6}, std::tuple{1, 2, 0.47, 0.45}})
    shared.push_back({{i, k}, {ri, rk}, gpu_watts(p, true, s[static_cast<std::size_t>(i)] * ri + s[static_cast<std::size_t>(k)] * rk)});
  const auto fit = fit_power(70.0, solo, shared, 90);
  ASSERT_TRUE(fit);
  EXPECT_TRUE(fit->busy_fitted);
  EXPECT_NEAR(fit->busy_watts.value, 110, 1e-9);
  EXPECT_NEAR(fit->max_watts.value, 650, 1e-9);
  EXPECT_DOUBLE_EQ(fit->idle_watts.value, 70);
  EXPECT_EQ(fit->busy_watts.observations, 3);
  EXPECT_EQ(fit->max_watts.observations, 3);
  EXPECT_NEAR(fit->shared_rms, 0, 1e-9);
  EXPECT_NEAR(fit->solo_line_rms, 0, 1e-9);
}

TEST(PowerFit, PerJobSlopesKeepTheFloorAndShowInTheSoloRms) {
  // Jobs of 600, 480 and 500 W per unit of SMACT above a 95 W floor, each job's dynamic power
  // scaled by its rate when shared (what the H200 measured).
  const double b = 95;
  const std::vector<PowerSolo> solo = {{0.8, b + 600 * 0.8}, {0.7, b + 480 * 0.7}, {0.3, b + 500 * 0.3}};
  std::vector<PowerShared> shared;
  for (auto [i, k, ri, rk] : {std::tuple{0, 1, 0.66, 0.61}, std::tuple{0, 2, 0.47, 0.58}, std::tuple{1, 2, 0.9, 0.7}}) {
    const double w = b + (solo[static_cast<std::size_t>(i)].watts - b) * ri + (solo[static_cast<std::size_t>(k)].watts - b) * rk;
    shared.push_back({{i, k}, {ri, rk}, w});
  }
  const auto fit = fit_power(80.0, solo, shared, 90);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->busy_watts.value, 95, 1e-9);
  EXPECT_NEAR(fit->shared_rms, 0, 1e-9);
  // The slope through the origin of (s, P − B): Σ s(P − B) / Σ s² = (384 + 235.2 + 45) / 1.22.
  EXPECT_NEAR(fit->max_watts.value, 95 + 664.2 / 1.22, 1e-9);
  EXPECT_GT(fit->solo_line_rms, 20);
}

TEST(PowerFit, FallsBackWhenNoSharedWindowFixesTheFloor) {
  const std::vector<PowerSolo> solo = {{0.8, 500}, {0.4, 300}};
  // No shared window (MIG runs): the given busy level, raised to the measured idle.
  const auto mig = fit_power(100.0, solo, {}, 90);
  ASSERT_TRUE(mig);
  EXPECT_FALSE(mig->busy_fitted);
  EXPECT_DOUBLE_EQ(mig->busy_watts.value, 100);
  EXPECT_EQ(mig->busy_watts.observations, 0);
  // Rates summing to 1 (time-slicing that only interleaves) cannot fix B either.
  const std::vector<PowerShared> even = {{{0, 1}, {0.5, 0.5}, 400}};
  const auto flat = fit_power(60.0, solo, even, 90);
  ASSERT_TRUE(flat);
  EXPECT_FALSE(flat->busy_fitted);
  EXPECT_DOUBLE_EQ(flat->busy_watts.value, 90);
}

TEST(PowerFit, NeedsLeverageAndStaysBelowTheJobsOwnPower) {
  const std::vector<PowerSolo> solo = {{0.8, 500}, {0.4, 300}};
  // One time-sliced pair whose rates sum to 0.943 (|1 − Σ r| = 0.057, as measured on the H200):
  // 1 % of noise would move B by ~80 W, so it is not fitted.
  const std::vector<PowerShared> thin = {{{0, 1}, {0.47, 0.473}, 458}};
  const auto t = fit_power(80.0, solo, thin, 90);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->busy_fitted);
  EXPECT_DOUBLE_EQ(t->busy_watts.value, 90);
  // Enough leverage (rates 0.3 + 0.3), but a window that asks for B = 400 W: above the 300 W the
  // second job draws alone, which would give it negative dynamic power; capped there.
  const std::vector<PowerShared> high = {{{0, 1}, {0.3, 0.3}, 240 + 0.4 * 400}};
  const auto h = fit_power(80.0, solo, high, 90);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->busy_fitted);
  EXPECT_NEAR(h->busy_least_squares, 400, 1e-9);
  EXPECT_TRUE(h->busy_capped_at_solo);
  EXPECT_DOUBLE_EQ(h->busy_watts.value, 300);
}

TEST(PowerFit, NamesTheSoloRunsTheSlopeRestsOn) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<PowerSolo> solo = {{0.8, 500}, {0.5, nan}, {0.02, 90}, {0.4, 300}};
  const auto fit = fit_power(60.0, solo, {}, 90);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->solo_used, (std::vector<int>{0, 3}));  // no reading; too little SMACT
  EXPECT_EQ(fit->max_watts.observations, 2);
}

TEST(PowerFit, RefusesOrLeavesOutWhatIsUnusable) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(fit_power(60.0, std::vector<PowerSolo>{}, {}, 90));
  EXPECT_FALSE(fit_power(60.0, std::vector<PowerSolo>{{0.02, 100}}, {}, 90));  // too little SMACT for a slope
  EXPECT_FALSE(fit_power(60.0, std::vector<PowerSolo>{{0.5, nan}, {1.5, 300}, {0.5, 0}}, {}, 90));
  // A shared window naming a solo run that does not exist, or with a rate of 0, is left out.
  const std::vector<PowerSolo> solo = {{0.8, 500}, {0.4, 300}};
  const std::vector<PowerShared> bad = {{{0, 7}, {0.6, 0.6}, 450}, {{0, 1}, {0.6, 0}, 450}, {{0}, {0.6}, 450}};
  const auto fit = fit_power(60.0, solo, bad, 90);
  ASSERT_TRUE(fit);
  EXPECT_FALSE(fit->busy_fitted);
}

TEST(PowerFit, KeepsTheModelFilesOrder) {
  const std::vector<PowerSolo> solo = {{0.8, 300}, {0.4, 320}};
  // Power not rising with SMACT (a throttled board): max = busy, never below it.
  const auto flat = fit_power(50.0, solo, {}, 310);
  ASSERT_TRUE(flat);
  EXPECT_DOUBLE_EQ(flat->max_watts.value, flat->busy_watts.value);
  // A fitted floor below the measured idle is raised to it.
  const std::vector<PowerSolo> s2 = {{0.8, 500}, {0.4, 300}};
  const std::vector<PowerShared> low = {{{0, 1}, {0.7, 0.7}, 500 * 0.7 + 300 * 0.7 - 0.4 * 20}};  // B = 20
  const auto raised = fit_power(80.0, s2, low, 90);
  ASSERT_TRUE(raised);
  EXPECT_TRUE(raised->busy_fitted);
  EXPECT_TRUE(raised->busy_raised_to_idle);
  EXPECT_NEAR(raised->busy_least_squares, 20, 1e-9);
  EXPECT_DOUBLE_EQ(raised->busy_watts.value, 80);
  EXPECT_LE(raised->busy_watts.value, raised->max_watts.value);
  // No idle window: observations 0, the value never above busy.
  const auto no_idle = fit_power(std::nullopt, s2, low, 90);
  ASSERT_TRUE(no_idle);
  EXPECT_EQ(no_idle->idle_watts.observations, 0);
  EXPECT_LE(no_idle->idle_watts.value, no_idle->busy_watts.value);
}

}  // namespace
}  // namespace colo::sim
