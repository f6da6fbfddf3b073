#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "core/policy/filters.h"
#include "test_support.h"

namespace colo {
namespace {

Candidate cand(const GpuSnapshot& g, MiB avail, int jobs = 0, bool excl = false) {
  Candidate c;
  c.gpu = &g;
  c.available_mib = avail;
  c.jobs = jobs;
  c.held_alone = excl;
  return c;
}

PlacementRequest req(const Job& j) {
  PlacementRequest r;
  r.job = &j;
  r.need_mib = j.need.mib;
  return r;
}

TEST(Filters, UsableRejectsUnhealthyDrainedExclusiveAndBusyMigSlots) {
  const Job j = test::job(1, 1000);
  auto f = usable();
  GpuSnapshot g = test::gpu(0, 40960);
  EXPECT_TRUE(f->admit(cand(g, 40960), req(j)));
  g.healthy = false;
  EXPECT_FALSE(f->admit(cand(g, 40960), req(j)));
  g.healthy = true;
  g.drained = true;
  EXPECT_FALSE(f->admit(cand(g, 40960), req(j)));
  g.drained = false;
  EXPECT_FALSE(f->admit(cand(g, 30000, 1, true), req(j)));
  g.mode = SharingMode::MigInstance;
  EXPECT_TRUE(f->admit(cand(g, 20000, 0), req(j)));
  EXPECT_FALSE(f->admit(cand(g, 20000, 1), req(j)));  // one job per MIG slice
}

TEST(Filters, IdleOnlyLooksAtLedgerAndRunningList) {
  const Job j = test::job(1, 1000);
  auto f = idle_only();
  GpuSnapshot g = test::gpu(0, 40960);
  EXPECT_TRUE(f->admit(cand(g, 40960, 0), req(j)));
  EXPECT_FALSE(f->admit(cand(g, 30000, 1), req(j)));
  g.running = {9};
  EXPECT_FALSE(f->admit(cand(g, 40960, 0), req(j)));
}

TEST(Filters, FitsMemoryAddsMarginToKnownNeed) {
  auto f = fits_memory(2048, 5120);
  const GpuSnapshot g = test::gpu(0, 40960);
  const Job known = test::job(1, 10000);
  EXPECT_TRUE(f->admit(cand(g, 12048), req(known)));   // exactly need + margin
  EXPECT_FALSE(f->admit(cand(g, 12047), req(known)));
  const Job unknown = test::job(2, std::nullopt);
  EXPECT_TRUE(f->admit(cand(g, 5120), req(unknown)));   // min free when unknown
  EXPECT_FALSE(f->admit(cand(g, 5119), req(unknown)));
}

// floor_always: the free-memory floor holds for known needs too, so a tiny estimate cannot
// place a job where less than the floor is free.
TEST(Filters, FloorAlwaysHoldsForKnownNeeds) {
  auto f = fits_memory(2048, 8192, true);
  EXPECT_EQ(f->name(), "fits_memory_floor");
  const GpuSnapshot g = test::gpu(0, 40960);
  const Job tiny = test::job(1, 500);
  EXPECT_TRUE(f->admit(cand(g, 8192), req(tiny)));   // max(500 + 2048, 8192)
  EXPECT_FALSE(f->admit(cand(g, 8191), req(tiny)));
  EXPECT_TRUE(fits_memory(2048, 8192)->admit(cand(g, 2548), req(tiny)));  // the thesis' rule
  const Job big = test::job(2, 20000);
  EXPECT_TRUE(f->admit(cand(g, 22048), req(big)));   // above the floor: need + margin decides
  EXPECT_FALSE(f->admit(cand(g, 22047), req(big)));
  const GpuSnapshot& gr = g;
  const Candidate low = cand(gr, 4096);
  const Candidate* rejected[] = {&low};
  EXPECT_EQ(f->why_not(rejected, req(tiny)), "needs 8.0 GiB (the free-memory floor; the estimate is 0.5 GiB); most free is 4.0 GiB on GPU 0");
}

// smact_predicted: the placed jobs' predicted solo SMACT plus the candidate's under the cap; an
// idle GPU takes any job, and a job without a prediction passes.
TEST(Filters, SmactPredictedAddsThePlacedJobsPredictions) {
  auto f = smact_predicted(0.8);
  const GpuSnapshot g = test::gpu(0, 40960);
  Job j = test::job(1, 1000);
  j.solo_smact = 0.3;
  Candidate busy = cand(g, 30000, 1);
  busy.placed_smact = 0.5;
  EXPECT_TRUE(f->admit(busy, req(j)));   // 0.5 + 0.3 = 0.8
  busy.placed_smact = 0.6;
  EXPECT_FALSE(f->admit(busy, req(j)));  // 0.9
  j.solo_smact = 0.95;
  EXPECT_TRUE(f->admit(cand(g, 40960, 0), req(j))) << "alone it may use the whole GPU";
  j.solo_smact.reset();
  EXPECT_TRUE(f->admit(busy, req(j))) << "no prediction: the window filter decides";
  j.solo_smact = 0.4;
  const Candidate* rejected[] = {&busy};
  EXPECT_EQ(f->why_not(rejected, req(j)), "predicted SMACT 40 % would pass the 80 % cap on GPU 0 (60 % placed)");
}

// adds_progress: progress = n / (max(1, D) × (1 + k (n − 1))) must rise with the candidate.
TEST(Filters, AddsProgressAdmitsACoRunnerOnlyIfTheGpuDoesMoreWork) {
  auto f = adds_progress(0.05);
  const GpuSnapshot g = test::gpu(0, 40960);
  Job j = test::job(1, 1000);
  j.solo_smact = 0.85;
  Candidate busy = cand(g, 30000, 3);
  busy.placed_smact = 2.5;
  EXPECT_FALSE(f->admit(busy, req(j)));  // 4 / (3.35 × 1.15) = 1.04 < 3 / (2.5 × 1.10) = 1.09
  busy.jobs = 1;
  busy.placed_smact = 0.9;
  EXPECT_TRUE(f->admit(busy, req(j)));  // 2 / (1.75 × 1.05) = 1.09 > 1 / 0.9 → 1
  busy.jobs = 2;
  busy.placed_smact = 1.9;
  EXPECT_FALSE(f->admit(busy, req(j)));  // 3 / (2.75 × 1.10) = 0.99 < 2 / (1.9 × 1.05) = 1.00
  EXPECT_TRUE(adds_progress(0.0)->admit(busy, req(j))) << "free co-runners: 3 / 2.75 = 1.09 > 2 / 1.9 = 1.05";
  j.solo_smact = 0.3;
  busy.placed_smact = 0.5;
  EXPECT_TRUE(f->admit(busy, req(j))) << "below saturation another job always adds (k < 1)";
  j.solo_smact = 0.99;
  EXPECT_TRUE(f->admit(cand(g, 40960, 0), req(j))) << "an idle GPU takes any job";
  j.solo_smact.reset();
  busy.placed_smact = 2.5;
  EXPECT_TRUE(f->admit(busy, req(j))) << "no prediction: nothing to weigh";
  j.solo_smact = 0.85;
  busy.jobs = 3;
  const Candidate* rejected[] = {&busy};
  EXPECT_EQ(f->why_not(rejected, req(j)),
            "predicted SMACT 85 % would slow the jobs on GPU 0 (3 jobs, 250 % placed) more than it adds (0.05 per co-runner)");
}

TEST(Filters, SmactBelowCapAndUnmeasurablePasses) {
  auto f = smact_below(0.8);
  const Job j = test::job(1, 1000);
  EXPECT_TRUE(f->admit(cand(test::gpu(0, 1, 0, 0.79), 1), req(j)));
  EXPECT_FALSE(f->admit(cand(test::gpu(0, 1, 0, 0.80), 1), req(j)));
  EXPECT_TRUE(f->admit(cand(test::gpu(0, 1, 0, std::nullopt), 1), req(j)));
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A site's own filter class (not a FilterImpl): the base class' retain() asks admit() per GPU.
class EvenPositionsOnly final : public Filter {
 public:
  std::string_view name() const override { return "even_positions"; }
  bool admit(const Candidate& c, const PlacementRequest&) const override { return c.position % 2 == 0; }
};

// retain() is what the scheduler calls; admit() is what each filter defines and explains with.
// They must agree on every GPU, for every shipped filter, over varied GPUs and requests, from any
// ascending list of positions (after the first filter the scheduler passes what is left), and
// chained as the scheduler chains them.
TEST(Filters, RetainKeepsExactlyWhatAdmitAdmitsInOrder) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<MiB> mib(0, 81920);
  std::uniform_int_distribution<int> small(0, 4);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::vector<FilterPtr> filters{usable(), idle_only(), holds(50000), fits_memory(2048, 5120),
                                       fits_memory(2048, 5120, true), smact_below(0.8), smact_predicted(0.8),
                                       adds_progress(0.05), std::make_shared<EvenPositionsOnly>()};
  std::map<std::string_view, size_t> refused, admitted;  // over all rounds: no filter is vacuous
  for (int round = 0; round < 50; ++round) {
    std::vector<GpuSnapshot> gpus;
    for (int i = 0; i < 64; ++i) {
      GpuSnapshot g = test::gpu(i, small(rng) % 2 ? 81920 : 40960, 0, unit(rng));
      g.healthy = small(rng) != 0;
      g.drained = small(rng) == 0;
      g.mode = small(rng) == 0 ? SharingMode::MigInstance : SharingMode::Plain;
      if (small(rng) == 0) g.smact.reset();
      gpus.push_back(g);
    }
    std::vector<Candidate> cands;
    for (int i = 0; i < 64; ++i) {
      Candidate c = cand(gpus[static_cast<size_t>(i)], mib(rng) % gpus[static_cast<size_t>(i)].total_mib,
                         small(rng) % 3, small(rng) == 0);
      c.position = i;
      c.placed_smact = unit(rng) * small(rng);
      cands.push_back(c);
    }
    Job j = test::job(1, small(rng) == 0 ? std::nullopt : std::optional<MiB>(mib(rng) / 2));
    if (small(rng) > 1) j.solo_smact = unit(rng);
    const PlacementRequest r = req(j);
    std::vector<int> from;  // a random ascending subset of the positions
    for (int i = 0; i < 64; ++i)
      if (small(rng) != 0) from.push_back(i);
    std::vector<int> chained = from, chained_expected;
    for (const FilterPtr& f : filters) {
      std::vector<int> expected, kept = from;
      for (int p : from)
        if (f->admit(cands[static_cast<size_t>(p)], r)) expected.push_back(p);
      f->retain(cands, r, kept);
      EXPECT_EQ(kept, expected) << f->name() << ", round " << round;
      refused[f->name()] += from.size() - expected.size();
      admitted[f->name()] += expected.size();
      f->retain(cands, r, chained);
    }
    for (int p : from)
      if (std::all_of(filters.begin(), filters.end(), [&](const FilterPtr& f) { return f->admit(cands[static_cast<size_t>(p)], r); }))
        chained_expected.push_back(p);
    EXPECT_EQ(chained, chained_expected) << "round " << round;
  }
  for (const FilterPtr& f : filters) {
    EXPECT_GT(refused[f->name()], 0u) << f->name();
    EXPECT_GT(admitted[f->name()], 0u) << f->name();
  }
}

}  // namespace
}  // namespace colo
