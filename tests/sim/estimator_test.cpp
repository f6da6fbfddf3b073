#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "data_path.h"
#include "sim/estimator.h"
#include "sim/workloads/workload_catalog.h"

namespace colo::sim {
namespace {

TEST(Estimator, CsvColumns) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const auto ctx = estimator_context_for(test::carma("workloads.csv"));
  const Workload& vgg = *c.find("vgg");
  EXPECT_FALSE(make_estimator("none", ctx)(vgg).known());
  EXPECT_EQ(make_estimator("oracle", ctx)(vgg).mib, 8222);
  EXPECT_EQ(make_estimator("horus", ctx)(vgg).mib, 21526);
  EXPECT_EQ(make_estimator("faketensor", ctx)(vgg).mib, 3121);
  EXPECT_EQ(make_estimator("gpumemnet-csv", ctx)(vgg).mib, 16000);
  EXPECT_EQ(make_estimator("gpumemnet-csv", ctx)(vgg).source, "gpumemnet-csv");
  EXPECT_FALSE(make_estimator("horus", ctx)(*c.find("gpt2_xl")).known());
  EXPECT_EQ(ctx.summaries_dir.filename(), "summaries");
}

// trace: the workload's own network through the probe (python3-torch), once per workload; a
// workload it cannot rebuild takes allocsim and says why.
TEST(Estimator, TraceProbesTheWorkloadsNetworkAndFallsBackToAllocsim) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const auto ctx = estimator_context_for(test::carma("workloads.csv"));
  const Estimator trace = make_estimator("trace", ctx);
  const Workload& r18 = *c.find("resnet18_cifar100_20e_1");  // batch 32, adamw, measured 1960 MiB
  const MemoryNeed t = trace(r18);
  ASSERT_TRUE(t.known());
  EXPECT_EQ(t.source, "trace");
  EXPECT_NEAR(static_cast<double>(*t.mib), 1960.0, 0.15 * 1960);
  EXPECT_EQ(*trace(r18).mib, *t.mib);  // cached, not probed again
  const MemoryNeed x = trace(*c.find("Xception"));
  ASSERT_TRUE(x.known());
  EXPECT_THAT(x.source, ::testing::StartsWith("allocsim (no probe model"));
  EXPECT_EQ(*x.mib, *make_estimator("allocsim", ctx)(*c.find("Xception")).mib);
}

TEST(Estimator, LiveEstimatorsReadTheWorkloadsSummary) {
  const auto c = WorkloadCatalog::load(test::carma("workloads.csv"));
  const auto ctx = estimator_context_for(test::carma("workloads.csv"));
  const Workload& resnet = *c.find("resnet");  // resnet50, batch 32, adam, measured 5262 MiB
  const MemoryNeed a = make_estimator("allocsim", ctx)(resnet);
  ASSERT_TRUE(a.known());
  EXPECT_EQ(a.source, "allocsim");
  EXPECT_NEAR(static_cast<double>(*a.mib), 5262.0, 0.3 * 5262);  // a model, not the measured column
  EXPECT_NE(*a.mib, 5262);
  const MemoryNeed g = make_estimator("gpumemnet", ctx)(resnet);
  ASSERT_TRUE(g.known());
  EXPECT_EQ(g.source, "gpumemnet");
  EXPECT_EQ(*g.mib % 1024, 0);  // a bucket's upper edge
  // Bigger batch, same model: allocsim must grow.
  EXPECT_GT(*make_estimator("allocsim", ctx)(*c.find("resnet3")).mib, *a.mib);
}

TEST(Estimator, LiveEstimatorNamesAMissingSummary) {
  Workload w;
  w.name = "ghost";
  w.summary = "no_such.model";
  w.batch_size = 8;
  w.optimizer = "adam";
  EstimatorContext ctx;
  ctx.summaries_dir = "/nonexistent";
  EXPECT_THROW(make_estimator("allocsim", ctx)(w), UserError);
}

TEST(Estimator, UnknownNameListsTheKnownOnes) {
  try {
    make_estimator("crystal-ball", {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown estimator 'crystal-ball' (known: "));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("gpumemnet"));
  }
}

TEST(Estimator, PluggedEstimatorIsUsed) {
  register_estimator("double-oracle", [](const EstimatorContext&) {
    return Estimator([](const Workload& w) { return MemoryNeed::of(2 * w.true_mib, "double-oracle"); });
  });
  Workload w;
  w.true_mib = 100;
  EXPECT_EQ(make_estimator("double-oracle", {})(w).mib, 200);
}

}  // namespace
}  // namespace colo::sim
