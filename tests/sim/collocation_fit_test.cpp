// Fitting the sharing models to pair measurements (sim/models/collocation_fit.h): constants a
// model generated are recovered exactly, and the thesis' Table 4.2 pairs give back the shipped
// model's values (or reproduce the measured slowdowns where the shipped value was rounded).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/models/collocation_fit.h"
#include "sim/models/mps_model.h"
#include "sim/models/streams_model.h"

namespace colo::sim {
namespace {

CoRun corun(std::vector<double> smact, std::vector<std::optional<double>> busy, const SharingModel& model) {
  CoRun r{std::move(smact), std::move(busy), {}};
  std::vector<double> b;  // a negative entry: the model's default (max(s, busy_floor))
  for (std::size_t i = 0; i < r.smact.size(); ++i) b.push_back(r.busy[i].value_or(-1));
  r.slowdown = model.share(r.smact, b).slowdown;
  return r;
}

TEST(CollocationFit, RecoversTheMpsInterferenceTheModelUsed) {
  const auto model = make_mps_model({0.07});
  std::vector<CoRun> runs = {corun({0.3, 0.4}, {{}, {}}, *model), corun({0.6, 0.7}, {{}, {}}, *model),
                             corun({0.2, 0.5, 0.9}, {{}, {}, {}}, *model)};
  const auto fit = fit_mps_interference(runs);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->value, 0.07, 1e-12);
  EXPECT_EQ(fit->observations, 7);
  EXPECT_NEAR(fit->rms, 0, 1e-12);
}

TEST(CollocationFit, TheThesisMpsPairGivesFourAndAHalfPercent) {
  // Table 4.2 under MPS: recommender (SMACT 0.05) +3.9 %, ResNet152 (0.82) +4.8 %; D < 1.
  const std::vector<CoRun> runs = {{{0.05, 0.82}, {{}, {}}, {1.039, 1.048}}};
  const auto fit = fit_mps_interference(runs);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->value, 0.0435, 1e-12);  // the shipped 0.05 is within 1.1 points of both
  EXPECT_NEAR(fit->rms, 0.0045, 1e-12);
}

TEST(CollocationFit, RecoversBothStreamsConstantsTheModelUsed) {
  const StreamsParams p{0.8, 0.03, 0.2};
  const auto model = make_streams_model(p);
  std::vector<CoRun> runs = {corun({0.05, 0.82}, {0.05, {}}, *model), corun({0.3, 0.6}, {0.35, 0.9}, *model),
                             corun({0.1, 0.2}, {0.1, 0.25}, *model), corun({0.9, 0.9}, {{}, {}}, *model)};
  const auto fit = fit_streams(runs, p.busy_floor);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->switch_overhead.value, 0.03, 1e-9);
  EXPECT_NEAR(fit->slice_wait.value, 0.2, 1e-9);
  EXPECT_NEAR(fit->slice_wait.rms, 0, 1e-9);
  EXPECT_EQ(fit->slice_wait.observations, 8);
}

TEST(CollocationFit, TheThesisStreamsPairIsReproducedExactly) {
  // Table 4.2 naïve pair: the data-bound recommender (s = b = 0.05) +13.6 %, ResNet152 (0.82) +5.7 %.
  const std::vector<CoRun> runs = {{{0.05, 0.82}, {0.05, {}}, {1.136, 1.057}}};
  const auto fit = fit_streams(runs, 0.8);
  ASSERT_TRUE(fit);
  // Two slowdowns, two constants: both measured slowdowns come back (the shipped 0.05 / 0.11
  // are these rounded, giving +13.6 % and +5.1 %).
  EXPECT_NEAR(fit->switch_overhead.rms, 0, 1e-9);
  EXPECT_NEAR(fit->switch_overhead.value, 0.0561, 0.0005);
  EXPECT_NEAR(fit->slice_wait.value, 0.1026, 0.0005);
}

TEST(CollocationFit, ANegativeJointSolutionFallsBackToOneConstant) {
  // Slowdowns that only a negative slice_wait would fit: the overhead alone explains them best.
  const std::vector<CoRun> runs = {{{0.05, 0.82}, {0.05, {}}, {1.02, 1.10}}};
  const auto fit = fit_streams(runs, 0.8);
  ASSERT_TRUE(fit);
  EXPECT_GE(fit->switch_overhead.value, 0);
  EXPECT_EQ(fit->slice_wait.value, 0);
}

TEST(CollocationFit, StreamsDataThatCannotSeparateTheConstantsGiveTheBetterSingleOne) {
  // Both jobs busy all the time (NVML utilisation 1): the slice-wait term is zero, only the
  // switch overhead can explain the slowdowns (here 2 × (1 + o) with o = 0.05).
  const std::vector<CoRun> busy = {{{0.6, 0.7}, {1.0, 1.0}, {2.1, 2.1}}};
  auto fit = fit_streams(busy, 0.8);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->switch_overhead.value, 0.05, 1e-12);
  EXPECT_EQ(fit->slice_wait.value, 0);
  // Equal busy shares (both at the floor): the two terms are collinear; one constant fits exactly.
  const std::vector<CoRun> equal = {{{0.3, 0.4}, {{}, {}}, {1.7, 1.7}}};
  fit = fit_streams(equal, 0.8);
  ASSERT_TRUE(fit);
  EXPECT_GT(fit->switch_overhead.value + fit->slice_wait.value, 0);
  EXPECT_NEAR(fit->switch_overhead.rms, 0, 1e-12);
}

TEST(CollocationFit, MigCapacityFromSlowedRunsOnly) {
  // Table 4.2: ResNet152 (SMACT 0.82) on a 3g instance 1.40 h against 1.05 h alone.
  std::vector<MigRun> runs = {{3, 0.82, 1.40 / 1.05}, {3, 0.3, 1.0}, {7, 0.82, 1.0}};
  const auto fit = fit_mig_capacity(runs, 3);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->value, 0.615, 0.0005);  // the shipped capacity_3g
  EXPECT_EQ(fit->observations, 1);         // the unslowed 0.3 job only says c ≥ 0.3
  EXPECT_FALSE(fit_mig_capacity(runs, 7));  // never slowed: nothing to fit
  EXPECT_FALSE(fit_mig_capacity(runs, 1));
}

TEST(CollocationFit, BadCoRunsAreNamedAndLeftOut) {
  EXPECT_EQ(corun_problem({{0.5}, {{}}, {1.1}}), "a co-run needs at least 2 jobs");
  EXPECT_EQ(corun_problem({{0.5, 0.2}, {{}}, {1.1, 1.2}}), "smact, busy and slowdown lists differ in length");
  EXPECT_EQ(corun_problem({{0.5, 1.2}, {{}, {}}, {1.1, 1.2}}), "job 2: SMACT 1.2 is outside [0, 1]");
  EXPECT_EQ(corun_problem({{0.5, 0.2}, {{}, 2.0}, {1.1, 1.2}}), "job 2: busy share 2 is outside [0, 1]");
  EXPECT_EQ(corun_problem({{0.5, 0.2}, {{}, {}}, {1.1, NAN}}), "job 2: slowdown nan must be finite and > 0");
  const std::vector<CoRun> bad = {{{0.5, 1.2}, {{}, {}}, {1.1, 1.2}}};
  EXPECT_FALSE(fit_mps_interference(bad));
  EXPECT_FALSE(fit_streams(bad, 0.8));
  EXPECT_FALSE(fit_mps_interference({}));
}

}  // namespace
}  // namespace colo::sim
