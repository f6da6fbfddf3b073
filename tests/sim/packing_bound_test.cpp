// The packing bound (sim/bounds/): its pricing against brute force, its linear programme, hand-
// computed schedules it must equal, and its place in the simulator's results.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>

#include "sim/bounds/configuration_pricing.h"
#include "sim/bounds/covering_lp.h"
#include "sim/bounds/energy_bound.h"
#include "sim/bounds/lower_bound.h"
#include "sim/bounds/packing_bound.h"
#include "sim_fixture.h"

namespace colo::sim {
namespace {

// Every multiset within the counts and the memory, valued exactly.
double brute_force(const std::vector<PieceType>& types, const std::vector<double>& price, MiB cap, double a) {
  std::vector<int> count(types.size(), 0);
  double best = 0;
  std::function<void(std::size_t, MiB)> go = [&](std::size_t k, MiB used) {
    if (k == types.size()) {
      int n = 0;
      double d = 0, y = 0;
      for (std::size_t i = 0; i < types.size(); ++i) {
        n += count[i];
        d += types[i].demand * count[i];
        y += price[i] * count[i];
      }
      if (n > 0) best = std::max(best, y / slowdown_floor_factor(n, d, a));
      return;
    }
    for (int c = 0; c <= types[k].max_count && used + types[k].mib * c <= cap; ++c) {
      count[k] = c;
      go(k + 1, used + types[k].mib * c);
    }
    count[k] = 0;
  };
  go(0, 0);
  return best;
}

TEST(ConfigurationPricing, IsExactWhereItMattersAndNeverBelowTheTruth) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  int above_one = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const MiB cap = 40960;
    const std::size_t k = 1 + rng() % 5;
    std::vector<PieceType> types;
    std::vector<double> price;
    for (std::size_t i = 0; i < k; ++i) {
      types.push_back({static_cast<MiB>(500 + rng() % 30000), std::round(u(rng) * 100) / 100,
                       static_cast<int>(1 + rng() % 4)});
      price.push_back(u(rng) < 0.15 ? 0.0 : 1.6 * u(rng));
    }
    const double a = std::array<double, 3>{0.0, 0.05, 0.2}[trial % 3];
    const double truth = brute_force(types, price, cap, a);
    const Pricing p = price_configurations(types, price, cap, a);
    EXPECT_GE(p.upper_bound, truth - 1e-12) << "trial " << trial;
    if (truth > 1.0) {
      ++above_one;
      EXPECT_NEAR(p.upper_bound, truth, 1e-9) << "trial " << trial;
      ASSERT_FALSE(p.candidates.empty()) << "trial " << trial;
      EXPECT_NEAR(p.candidates.front().value, truth, 1e-9) << "trial " << trial;
    } else {
      EXPECT_LE(p.upper_bound, 1.0 + 1e-12) << "trial " << trial << ": certified to 1";
    }
    for (const Configuration& c : p.candidates) {  // real configurations, valued exactly
      MiB used = 0;
      int n = 0;
      double d = 0, y = 0;
      for (std::size_t i = 0; i < k; ++i) {
        EXPECT_LE(c.count[i], types[i].max_count);
        EXPECT_TRUE(c.count[i] == 0 || price[i] > 0) << "an unpriced type only slows the others";
        used += types[i].mib * c.count[i];
        n += c.count[i];
        d += types[i].demand * c.count[i];
        y += price[i] * c.count[i];
      }
      EXPECT_LE(used, cap);
      EXPECT_NEAR(c.value, y / slowdown_floor_factor(n, d, a), 1e-12);
      EXPECT_GT(c.value, 1.0);
    }
  }
  EXPECT_GT(above_one, 100) << "the random cases must reach the exact branch";
}

TEST(ConfigurationPricing, ABudgetTooSmallStillGivesABound) {
  std::vector<PieceType> types;
  std::vector<double> price;
  for (int i = 0; i < 6; ++i) {
    types.push_back({static_cast<MiB>(900 + 37 * i), 0.05 + 0.01 * i, 4});
    price.push_back(0.3 + 0.02 * i);
  }
  const double truth = brute_force(types, price, 40960, 0.05);
  ASSERT_GT(truth, 1.0);
  EXPECT_NEAR(price_configurations(types, price, 40960, 0.05).upper_bound, truth, 1e-9);
  const Pricing small = price_configurations(types, price, 40960, 0.05, 20);
  EXPECT_GE(small.upper_bound, truth - 1e-12);
}

TEST(ConfigurationPricing, RejectsBadInput) {
  const std::vector<PieceType> types{{1000, 0.5, 1}};
  const std::vector<double> one{1.0};
  EXPECT_THROW(price_configurations(types, {}, 40960, 0.05), std::invalid_argument);
  EXPECT_THROW(price_configurations(types, one, 0, 0.05), std::invalid_argument);
  EXPECT_THROW(price_configurations(types, one, 40960, -0.1), std::invalid_argument);
  const std::vector<PieceType> too_big{{50000, 0.5, 1}}, bad_demand{{1000, 1.5, 1}}, no_count{{1000, 0.5, 0}};
  EXPECT_THROW(price_configurations(too_big, one, 40960, 0.05), std::invalid_argument);
  EXPECT_THROW(price_configurations(bad_demand, one, 40960, 0.05), std::invalid_argument);
  EXPECT_THROW(price_configurations(no_count, one, 40960, 0.05), std::invalid_argument);
}

TEST(CoveringLp, SolvesAndReturnsDuals) {
  const std::vector<double> b{2, 3};
  CoveringLp lp(b);
  const std::pair<int, double> c0{0, 1.0}, c1{1, 1.0};
  const std::vector<std::pair<int, double>> both{{0, 1.0}, {1, 1.0}};
  lp.add_column({&c0, 1});
  lp.add_column({&c1, 1});
  const CoveringLp::Solution s1 = lp.solve();
  EXPECT_NEAR(s1.objective, 5, 1e-9);
  lp.add_column(both);  // covers both rows at once: 2 of it and 1 of the second
  const CoveringLp::Solution s2 = lp.solve();
  EXPECT_NEAR(s2.objective, 3, 1e-9);
  ASSERT_EQ(s2.dual.size(), 2u);
  EXPECT_NEAR(s2.dual[0], 0, 1e-9);
  EXPECT_NEAR(s2.dual[1], 1, 1e-9);
  ASSERT_EQ(s2.x.size(), 3u);
  EXPECT_NEAR(s2.x[2], 2, 1e-9);
  EXPECT_EQ(lp.columns(), 3);
}

TEST(CoveringLp, RejectsBadInputAndReportsInfeasibility) {
  const std::vector<double> zero{0.0}, two{1.0, 1.0};
  EXPECT_THROW(CoveringLp{zero}, std::invalid_argument);
  CoveringLp lp(two);
  const std::pair<int, double> bad_row{2, 1.0}, bad_value{0, 0.0}, first{0, 1.0};
  EXPECT_THROW(lp.add_column({&bad_row, 1}), std::invalid_argument);
  EXPECT_THROW(lp.add_column({&bad_value, 1}), std::invalid_argument);
  lp.add_column({&first, 1});
  EXPECT_THROW(lp.solve(), std::runtime_error) << "row 1 is covered by no column";
}

SimJobSpec bound_job(Seconds submit, MiB mib, Seconds solo, double smact, int gpus = 1) {
  return {"j", submit, gpus, mib, solo, smact, MemoryNeed::of(mib, "oracle")};
}

PackingBoundSetup mps_setup(int gpus, Seconds ramp = 0) {
  PackingBoundSetup s;
  s.gpus = gpus;
  s.gpus_per_node = gpus;
  s.gpu_memory_mib = 40960;
  s.memory_free_s = ramp;
  s.floor = SlowdownFloor{0.05, -1.0};
  return s;
}

double bound(const std::vector<SimJobSpec>& jobs, const PackingBoundSetup& s) {
  const auto b = packing_bound(jobs, s);
  EXPECT_TRUE(b.has_value());
  EXPECT_LT(b->gap, 1e-6) << "these are small enough to solve to the optimum";
  return b->value_s;
}

// Hand-computed optima on one GPU (slowdown floor max(1, D) × (1 + 0.05 (n − 1))).
TEST(PackingBound, EqualsHandComputedSchedules) {
  // Two half-GPU jobs together: 1.05 × 100 s, better than 200 s one after the other.
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 0.5), bound_job(0, 1000, 100, 0.5)}, mps_setup(1)), 105, 1e-6);
  // They do not fit together: one after the other.
  EXPECT_NEAR(bound({bound_job(0, 30000, 100, 0.5), bound_job(0, 30000, 100, 0.5)}, mps_setup(1)), 200, 1e-6);
  // Two 90 % jobs: 1.8 × 1.05 = 1.89 slower each, 189 s — still better than 200 s.
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 0.9), bound_job(0, 1000, 100, 0.9)}, mps_setup(1)), 189, 1e-6);
  // Two full-GPU jobs: sharing only costs, 200 s.
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 1.0), bound_job(0, 1000, 100, 1.0)}, mps_setup(1)), 200, 1e-6);
  // A ramp is progress without resident memory: 2 × (100 − 30) s for two jobs that cannot pair.
  EXPECT_NEAR(bound({bound_job(0, 30000, 100, 0.5), bound_job(0, 30000, 100, 0.5)}, mps_setup(1, 30)), 140, 1e-6);
  // A 2-GPU job is one piece per GPU: with a second such job on 2 GPUs, 105 s.
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 0.5, 2), bound_job(0, 1000, 100, 0.5, 2)}, mps_setup(2)), 105, 1e-6);
  // Without a per-co-runner cost, four quarter-GPU jobs fill one GPU: 100 s (the SM-activity term).
  PackingBoundSetup free = mps_setup(1);
  free.floor.per_corunner = 0;
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 0.25), bound_job(0, 1000, 100, 0.25), bound_job(0, 1000, 100, 0.25),
                     bound_job(0, 1000, 100, 0.25)},
                    free),
              100, 1e-6);
}

TEST(PackingBound, TimeSlicingTakesTheBusyShare) {
  // Under streams a GPU-bound job holds the GPU 80 % of the time whatever its SM activity:
  // two 30 % jobs together are 1.6 × 1.05 = 1.68 slower, 168 s.
  PackingBoundSetup s = mps_setup(1);
  s.floor = SlowdownFloor{0.05, 0.8};
  EXPECT_NEAR(bound({bound_job(0, 1000, 100, 0.3), bound_job(0, 1000, 100, 0.3)}, s), 168, 1e-6);
  // A job whose busy share is known uses it.
  std::vector<SimJobSpec> jobs{bound_job(0, 1000, 100, 0.3), bound_job(0, 1000, 100, 0.3)};
  jobs[0].busy = jobs[1].busy = 0.3;
  EXPECT_NEAR(bound(jobs, s), 105, 1e-6);
}

TEST(PackingBound, CutsAtReleaseTimes) {
  // 10 s of work at 0, then three full-GPU jobs of 100 s at 50: nothing of theirs before 50.
  std::vector<SimJobSpec> jobs{bound_job(0, 1000, 10, 1.0), bound_job(50, 1000, 100, 1.0), bound_job(50, 1000, 100, 1.0),
                               bound_job(50, 1000, 100, 1.0)};
  const auto b = packing_bound(jobs, mps_setup(1));
  ASSERT_TRUE(b.has_value());
  EXPECT_NEAR(b->work_s, 310, 1e-6);
  EXPECT_NEAR(b->value_s, 350, 1e-6);
  PackingBoundSetup one_cut = mps_setup(1);
  one_cut.cuts = 1;
  one_cut.progress_cuts = 0;
  EXPECT_NEAR(packing_bound(jobs, one_cut)->value_s, 310, 1e-6);
}

// Two GPUs; a 100 s full-GPU job at 0, two more at 50. The best schedule ends at 200 (the third
// job waits for a GPU). Total work / 2 = 150, and dropping the first job at the 50 s release cut
// gives 50 + 100 = 150 as well. Before 50 s only the first job can progress, 50 s of it, so the
// other GPU idles: at least 50 + (300 − 50) / 2 = 175.
TEST(PackingBound, ProgressCutsSeeGpusTheFirstJobsCannotFill) {
  const std::vector<SimJobSpec> jobs{bound_job(0, 1000, 100, 1.0), bound_job(50, 1000, 100, 1.0), bound_job(50, 1000, 100, 1.0)};
  PackingBoundSetup s = mps_setup(2);
  s.progress_cuts = 0;
  EXPECT_NEAR(bound(jobs, s), 150, 1e-6);
  s.progress_cuts = 16;
  EXPECT_NEAR(bound(jobs, s), 175, 1e-6);
  s.cuts = 1;  // the progress cuts alone
  EXPECT_NEAR(bound(jobs, s), 175, 1e-6);
  // With a 20 s ramp the first job's resident progress before 50 s is 30 s, and the work is
  // 3 × 80 s: 50 + (240 − 30) / 2 = 155.
  s.memory_free_s = 20;
  EXPECT_NEAR(bound(jobs, s), 155, 1e-6);
  // The simulator's run of it stays above.
  SimConfig cfg = test::config(PolicyKind::Magm, 2);
  cfg.ramp_s = 0;
  cfg.packing_bound = true;
  const SimResult r = simulate(cfg, jobs);
  EXPECT_NEAR(r.lower_bound_s, 175, 1e-6);
  EXPECT_GE(r.makespan_s, r.lower_bound_s);
}

TEST(PackingBound, LeavesOutJobsThatCannotComplete) {
  PackingBoundSetup s = mps_setup(2);
  s.gpus_per_node = 1;
  const std::vector<SimJobSpec> jobs{bound_job(0, 1000, 100, 0.5), bound_job(0, 1000, 5000, 0.5, 2), bound_job(0, 50000, 5000, 0.5)};
  EXPECT_NEAR(bound(jobs, s), 50, 1e-6) << "only the first: 100 s of work on 2 GPUs";
  EXPECT_FALSE(packing_bound(std::vector<SimJobSpec>{bound_job(0, 50000, 10, 0.5)}, s).has_value());
  EXPECT_THROW(packing_bound(jobs, PackingBoundSetup{}), std::invalid_argument);
}

TEST(EnergyBound, AddsIdleBusyAndWork) {
  const PowerParams p{55, 61.5, 299.8};
  // 4 GPUs, 1000 s: idle 55 × 4000, floor 6.5 × 3000 busy GPU-seconds, 238.3 × 2000 of work.
  EXPECT_NEAR(*energy_lower_bound(p, 4, 1000, 3000, 2000), 55 * 4000 + 6.5 * 3000 + 238.3 * 2000, 1e-6);
  // Busy at least as long as the work.
  EXPECT_NEAR(*energy_lower_bound(p, 4, 1000, 0, 2000), 55 * 4000 + 6.5 * 2000 + 238.3 * 2000, 1e-6);
  EXPECT_FALSE(energy_lower_bound({70, 61.5, 299.8}, 4, 1000, 3000, 2000).has_value()) << "busy below idle";
  EXPECT_FALSE(energy_lower_bound({55, 61.5, 50}, 4, 1000, 3000, 2000).has_value()) << "max below busy";
}

// In the simulator: two half-GPU jobs on one GPU under MPS are placed together at once, and the
// run attains the bound.
TEST(PackingBound, TheSimulatorAttainsItWhereTheOptimumIsObvious) {
  SimConfig cfg = test::config(PolicyKind::Magm, 1);
  cfg.ramp_s = 0;
  cfg.packing_bound = true;
  const std::vector<SimJobSpec> jobs{bound_job(0, 1000, 100, 0.5), bound_job(0, 1000, 100, 0.5)};
  const SimResult r = simulate(cfg, jobs);
  EXPECT_NEAR(r.makespan_s, 105, 1e-6);
  EXPECT_NEAR(r.lower_bound_s, 105, 1e-6);
  ASSERT_TRUE(r.energy_lower_bound_mj.has_value());
  EXPECT_NEAR(*r.energy_lower_bound_mj, r.energy_mj, 1e-9);
  // Switched off: the closed-form terms only (SM activity: 2 × 0.5 × 100 s).
  cfg.packing_bound = false;
  EXPECT_NEAR(simulate(cfg, jobs).lower_bound_s, 100, 1e-6);
}

// On the thesis' mix trace the programme is the binding term under MPS and streams alike, and
// stays below every policy's makespan and energy.
TEST(PackingBound, BindsOnTheMixTrace) {
  const auto jobs = test::thesis_jobs("philly_mix_90_tasks.csv", "oracle");
  for (SharingKind sharing : {SharingKind::Mps, SharingKind::Streams}) {
    SimConfig cfg = test::config(PolicyKind::Magm, 4, true, sharing);
    cfg.packing_bound = true;
    const SimResult r = simulate(cfg, jobs);
    const LowerBound closed = lower_bound(jobs, 4, 4, 40960, cfg.ramp_s);
    EXPECT_GT(r.lower_bound_s, closed.value() * 1.02) << to_string(sharing);
    EXPECT_LE(r.lower_bound_s, r.makespan_s) << to_string(sharing);
    ASSERT_TRUE(r.energy_lower_bound_mj.has_value());
    EXPECT_LE(*r.energy_lower_bound_mj, r.energy_mj) << to_string(sharing);
  }
}

}  // namespace
}  // namespace colo::sim
