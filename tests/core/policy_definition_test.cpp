// Policies as data: the shipped definitions reproduce the thesis' policies, a site's blend ranks
// by its weights, and bad definitions are named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/policy/node_weight.h"
#include "core/policy/policy_definition.h"
#include "core/policy/scorers.h"
#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(PolicyDefinition, ShippedDefinitionsAreTheThesisPolicies) {
  EXPECT_EQ(make_policy(PolicyKind::Magm).describe(), "magm: fits_memory+smact_below -> most_free_mem");
  EXPECT_EQ(make_policy(PolicyKind::Exclusive).describe(), "exclusive: idle_only -> first");
  EXPECT_TRUE(make_policy(PolicyKind::Exclusive).whole_gpus);
  EXPECT_EQ(make_policy(PolicyKind::NodeWeight).describe(), "node-weight: fits_memory -> lowest_node_weight");
  EXPECT_TRUE(make_policy(PolicyKind::NodeWeight).node_weights);
  Conditions off;
  off.enabled = false;
  EXPECT_EQ(make_policy(PolicyKind::RoundRobin, off).describe(), "round-robin: (no conditions) -> round_robin");
  Conditions memory_only;
  memory_only.smact_cap = 1.0;
  EXPECT_EQ(make_policy(PolicyKind::Lug, memory_only).describe(), "lug: fits_memory -> least_smact");
  for (const PolicyDefinition& d : shipped_policies()) EXPECT_NO_THROW(validate(d)) << d.name;
}

// A site blend: half memory, half interference. GPU 0 has the most free memory but is busy;
// GPU 1 has a little less memory and is nearly idle: the blend picks GPU 1, MAGM picks GPU 0.
TEST(PolicyDefinition, AWeightedBlendRanksByNormalisedScores) {
  test::World w;
  w.gpus = {test::gpu(0, 40960, 0, 0.70), test::gpu(1, 40960, 0, 0.05)};
  w.ledger.reserve(100, 1, 4096, false, 0);
  const Policy blend = build_policy({"blend", {"fits_memory", "smact_below"}, {{"most_free_mem", 1}, {"least_smact", 1}}}, {});
  EXPECT_EQ(blend.kind, PolicyKind::Custom);
  EXPECT_EQ(blend.describe(), "blend: fits_memory+smact_below -> weighted(most_free_mem:0.5,least_smact:0.5)");
  auto d = w.decide(Scheduler(SchedulerConfig(blend)), {test::job(1, 8000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{1});
  test::World w2 = w;
  d = w2.decide(Scheduler(SchedulerConfig(make_policy(PolicyKind::Magm))), {test::job(1, 8000)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{0});
  // Weighted mostly on memory, the blend agrees with MAGM.
  const Policy memory = build_policy({"mem", {"fits_memory"}, {{"most_free_mem", 9}, {"least_smact", 1}}}, {});
  test::World w3 = w;
  d = w3.decide(Scheduler(SchedulerConfig(memory)), {test::job(1, 8000)});
  EXPECT_EQ(d.placements[0].gpu_indices, std::vector<int>{0});
}

// The adds_progress condition joins every policy that collocates, once, with the conditions'
// interference; without conditions, and for whole GPUs, there is nothing to weigh.
TEST(PolicyDefinition, AddsProgressJoinsCollocatingPolicies) {
  Conditions c;
  c.adds_progress = true;
  EXPECT_EQ(make_policy(PolicyKind::Magm, c).describe(), "magm: fits_memory+smact_below+adds_progress -> most_free_mem");
  EXPECT_EQ(make_policy(PolicyKind::Exclusive, c).describe(), "exclusive: idle_only -> first");
  EXPECT_EQ(build_policy({"p", {"adds_progress", "fits_memory"}, {{"first", 1}}}, c).describe(),
            "p: adds_progress+fits_memory -> first");
  EXPECT_EQ(build_policy({"p", {"adds_progress", "fits_memory"}, {{"first", 1}}}, {}).describe(),
            "p: adds_progress+fits_memory -> first") << "listed by a site, it applies without the flag";
  c.enabled = false;
  EXPECT_EQ(make_policy(PolicyKind::RoundRobin, c).describe(), "round-robin: (no conditions) -> round_robin");

  // One GPU already saturated by three 85 % jobs, one idle: the fourth goes to the idle GPU under
  // both; with the idle GPU busy too, MAGM stacks it, adds_progress holds it back and says why.
  Conditions on;
  on.adds_progress = true;
  on.smact_cap = 1.0;  // memory only: the window cannot brake
  test::World w;
  w.gpus = {test::gpu(0, 40960)};
  for (JobId id = 100; id < 103; ++id) w.ledger.reserve(id, 0, 4096, false, 0, 0.85);
  Job j = test::job(1, 4096);
  j.solo_smact = 0.85;
  Conditions off = on;
  off.adds_progress = false;
  test::World w2 = w;
  EXPECT_EQ(w2.decide(Scheduler(SchedulerConfig(make_policy(PolicyKind::Magm, off))), {j}).placements.size(), 1u);
  const Decision d = w.decide(Scheduler(SchedulerConfig(make_policy(PolicyKind::Magm, on))), {j}, {}, true);
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.blocked.has_value());
  EXPECT_THAT(d.blocked->reason, HasSubstr("more than it adds"));
}

TEST(PolicyDefinition, AnIdleOnlyDefinitionPlacesWholeGpus) {
  const Policy p = build_policy({"alone", {"idle_only"}, {{"most_free_mem", 1}}}, {});
  EXPECT_TRUE(p.whole_gpus);
  test::World w;
  w.gpus = {test::gpu(0, 40960), test::gpu(1, 40960)};
  const auto d = w.decide(Scheduler(SchedulerConfig(p)), {test::job(1, 1000), test::job(2, 1000), test::job(3, 1000)});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_TRUE(d.placements[0].alone);
}

TEST(PolicyDefinition, BadDefinitionsAreNamed) {
  auto err = [](const PolicyDefinition& d) {
    try {
      validate(d);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  EXPECT_THAT(err({"x", {"fits"}, {{"first", 1}}}), HasSubstr("policy 'x': unknown filter 'fits'"));
  EXPECT_EQ(build_policy({"p", {"fits_memory", "smact_predicted"}, {{"most_free_mem", 1}}}, {}).describe(),
            "p: fits_memory+smact_predicted -> most_free_mem");
  EXPECT_THAT(err({"x", {}, {}}), HasSubstr("needs at least one scorer"));
  EXPECT_THAT(err({"x", {}, {{"fastest", 1}}}), HasSubstr("unknown scorer 'fastest'"));
  EXPECT_THAT(err({"x", {}, {{"first", 0}}}), HasSubstr("weights must be positive and finite"));
  EXPECT_THAT(err({"x", {}, {{"first", std::numeric_limits<double>::infinity()}}}), HasSubstr("positive and finite"));
  EXPECT_THAT(err({"", {}, {{"first", 1}}}), HasSubstr("needs a name"));
  EXPECT_THAT(err({"a\ab", {}, {{"first", 1}}}), HasSubstr("policy 'a\\x07b': a policy name is 1 to 64 letters"));
  EXPECT_THAT(err({"two words", {}, {{"first", 1}}}), HasSubstr("a policy name is"));
  EXPECT_THAT(err({std::string(65, 'p'), {}, {{"first", 1}}}), HasSubstr("a policy name is 1 to 64"));
  EXPECT_EQ(err({"site-1.v2_b", {}, {{"first", 1}}}), "(valid)");
  EXPECT_THAT(err({"x", {"fits_memory", "smact_below", "fits_memory"}, {{"first", 1}}}),
              HasSubstr("policy 'x': filter 'fits_memory' is listed twice"));
  EXPECT_THROW(make_policy(PolicyKind::Custom), UserError);
}

TEST(PolicyDefinition, NormalisedScoresStayInTheUnitInterval) {
  const GpuSnapshot g = test::gpu(3, 40960, 0, std::nullopt);
  Candidate c;
  c.gpu = &g;
  c.position = 3;
  c.available_mib = 50000;  // more than the GPU (a stale snapshot): still clamped
  c.node_weight = 1751;
  const ScoreContext ctx{8, 5};
  const Job j = test::job(1, 1000);
  PlacementRequest r;
  r.job = &j;
  for (std::string_view n : scorer_names()) {
    const double v = scorer_by_name(n)->normalized(c, r, ctx);
    EXPECT_GE(v, 0.0) << n;
    EXPECT_LE(v, 1.0) << n;
  }
}

// A blend weighs the node rank linearly: equal steps in Slurm weight are equal steps in score,
// so memory and node rank trade off at the stated weights (1/weight made 1 → 2 matter as much as
// 2 → 2001).
TEST(PolicyDefinition, NodeWeightNormalisesLinearlyOverItsRange) {
  const GpuSnapshot g = test::gpu(0, 40960, 0, std::nullopt);
  const ScoreContext ctx{4, 0};
  const Job j = test::job(1, 1000);
  PlacementRequest r;
  r.job = &j;
  const ScorerPtr s = lowest_node_weight();
  auto at = [&](int w) {
    Candidate c;
    c.gpu = &g;
    c.node_weight = w;
    return s->normalized(c, r, ctx);
  };
  EXPECT_DOUBLE_EQ(at(kIdleNodeWeight), 1.0);
  EXPECT_DOUBLE_EQ(at(kBusyNodeWeight), 0.5);
  EXPECT_DOUBLE_EQ(at(kNoGpuNodeWeight), 0.0);
  EXPECT_NEAR(at(2) - at(1), at(1001) - at(1000), 1e-12);
  // Half node rank, half free memory: a busy-but-empty node (1001, all free) ties an idle node's
  // half-full GPU (1, half free) only under a linear rank.
  const ScorerPtr blend = weighted({{lowest_node_weight(), 1.0}, {most_free_mem(), 1.0}});
  Candidate busy_empty, idle_half;
  busy_empty.gpu = idle_half.gpu = &g;
  busy_empty.node_weight = kBusyNodeWeight;
  busy_empty.available_mib = 40960;
  idle_half.node_weight = kIdleNodeWeight;
  idle_half.available_mib = 20480;
  EXPECT_DOUBLE_EQ(blend->normalized(busy_empty, r, ctx), blend->normalized(idle_half, r, ctx));
}

}  // namespace
}  // namespace colo
