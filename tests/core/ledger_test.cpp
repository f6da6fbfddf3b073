#include <gtest/gtest.h>

#include "core/ledger.h"
#include "test_support.h"

namespace colo {
namespace {

TEST(Ledger, ReservesEstimateUntilObservedPeakExceedsIt) {
  Ledger l;
  l.reserve(1, 0, 10000, false, 0);
  EXPECT_EQ(l.reserved_on(0), 10000);
  l.observe(1, 0, 4000);  // still ramping up: the estimate holds
  EXPECT_EQ(l.reserved_on(0), 10000);
  l.observe(1, 0, 12000);  // grew past its estimate: the peak holds
  EXPECT_EQ(l.reserved_on(0), 12000);
  l.observe(1, 0, 9000);  // peaks never shrink
  EXPECT_EQ(l.reserved_on(0), 12000);
}

TEST(Ledger, AvailableUsesTheLargerOfReservedAndObserved) {
  Ledger l;
  l.reserve(1, 0, 10000, false, 0);
  EXPECT_EQ(l.available(test::gpu(0, 40960, 2000)), 40960 - 10000);  // job not ramped yet
  EXPECT_EQ(l.available(test::gpu(0, 40960, 15000)), 40960 - 15000);  // foreign process uses more
  EXPECT_EQ(l.available(test::gpu(0, 8000, 0)), 0);                  // never negative
}

// view() answers what reserved_on, jobs_on, held_alone and predicted_smact answer, for GPU indices
// kept densely and for any other int (kept aside), and a GPU whose jobs all left reads as untouched.
TEST(Ledger, ViewAgreesWithTheSingleQueriesForAnyGpuIndex) {
  Ledger l;
  for (int gpu : {0, 7, -3, 1 << 21}) {
    l.reserve(1, gpu, 1000, false, 0, 0.25);
    l.reserve(2, gpu, 500, true, 0, 0.5);
    l.observe(2, gpu, 800);
    const Ledger::GpuView v = l.view(gpu);
    EXPECT_EQ(v.reserved, l.reserved_on(gpu)) << gpu;
    EXPECT_EQ(v.reserved, 1800) << gpu;
    EXPECT_EQ(v.jobs, l.jobs_on(gpu)) << gpu;
    EXPECT_EQ(v.jobs, 2) << gpu;
    EXPECT_EQ(v.alone, l.held_alone(gpu)) << gpu;
    EXPECT_TRUE(v.alone) << gpu;
    EXPECT_DOUBLE_EQ(v.smact, l.predicted_smact(gpu)) << gpu;
    EXPECT_DOUBLE_EQ(v.smact, 0.75) << gpu;
    EXPECT_EQ(Ledger::available(test::gpu(0, 4000, 100), v.reserved), 2200);
  }
  EXPECT_EQ(l.view(3).jobs, 0);  // never reserved, inside the dense range
  EXPECT_EQ(l.view(-4).jobs, 0);
  l.release(1);
  l.release(2);
  for (int gpu : {0, 7, -3, 1 << 21}) {
    const Ledger::GpuView v = l.view(gpu);
    EXPECT_EQ(v.reserved, 0) << gpu;
    EXPECT_EQ(v.jobs, 0) << gpu;
    EXPECT_FALSE(v.alone) << gpu;
    EXPECT_EQ(v.smact, 0.0) << gpu;
  }
  EXPECT_TRUE(l.empty());
}

TEST(Ledger, ReleaseForgetsEveryGpuOfAJob) {
  Ledger l;
  l.reserve(7, 0, 1000, false, 0);
  l.reserve(7, 1, 1000, true, 0);
  l.reserve(8, 1, 500, false, 0);
  EXPECT_EQ(l.jobs_on(1), 2);
  EXPECT_TRUE(l.held_alone(1));
  EXPECT_EQ(l.gpus_of(7), (std::vector<int>{0, 1}));
  l.release(7);
  EXPECT_EQ(l.reserved_on(0), 0);
  EXPECT_EQ(l.reserved_on(1), 500);
  EXPECT_FALSE(l.held_alone(1));
  l.release(7);  // idempotent
  l.observe(7, 0, 99999);  // a late sample for a released job changes nothing
  EXPECT_EQ(l.reserved_on(0), 0);
}

TEST(Ledger, ReReserveReplacesInsteadOfDoubleCounting) {
  Ledger l;
  l.reserve(1, 0, 1000, false, 0);
  l.reserve(1, 0, 3000, false, 5);
  EXPECT_EQ(l.reserved_on(0), 3000);
  EXPECT_EQ(l.jobs_on(0), 1);
  ASSERT_TRUE(l.entry(1, 0).has_value());
  EXPECT_EQ(l.entry(1, 0)->placed_at, 5);
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

// A recovery retry held alone lets others join once its peak is known: the GPU is no longer
// held alone and the entry keeps the given reservation.
TEST(LedgerSmact, PredictedActivityIsSummedPerGpu) {
  Ledger l;
  l.reserve(1, 0, 1000, false, 0, 0.3);
  l.reserve(2, 0, 1000, false, 0, 0.25);
  l.reserve(3, 0, 1000, false, 0);  // no prediction: adds nothing
  EXPECT_DOUBLE_EQ(l.predicted_smact(0), 0.55);
  l.release(1);
  EXPECT_DOUBLE_EQ(l.predicted_smact(0), 0.25);
  EXPECT_DOUBLE_EQ(l.predicted_smact(7), 0.0);
}

TEST(LedgerShare, AnAloneEntryBecomesASharedReservation) {
  Ledger l;
  l.reserve(1, 0, 40960, true, 0);
  EXPECT_TRUE(l.held_alone(0));
  l.observe(1, 0, 30000);
  EXPECT_TRUE(l.share(1, 0, 32048));
  EXPECT_FALSE(l.held_alone(0));
  EXPECT_EQ(l.reserved_on(0), 32048);
  EXPECT_EQ(l.jobs_on(0), 1);
  EXPECT_FALSE(l.share(1, 0, 1000)) << "already shared";
  EXPECT_FALSE(l.share(2, 0, 1000)) << "unknown job";
  l.reserve(3, 1, 1000, false, 0);
  EXPECT_FALSE(l.share(3, 1, 500)) << "not held alone";
  l.release(1);
  EXPECT_EQ(l.reserved_on(0), 0);
}

}  // namespace
}  // namespace colo
