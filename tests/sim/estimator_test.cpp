#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "data_path.h"
#include "sim/estimator.h"
#include "sim/workload_catalog.h"

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
  EXPECT_EQ(make_estimator("gpumemnet", ctx)(vgg).mib, 16000);
  EXPECT_EQ(make_estimator("gpumemnet", ctx)(vgg).source, "gpumemnet");
  EXPECT_FALSE(make_estimator("horus", ctx)(*c.find("gpt2_xl")).known());
  EXPECT_EQ(ctx.summaries_dir.filename(), "summaries");
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
