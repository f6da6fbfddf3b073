// The simulator as a cluster (--nodes) and as plain Slurm (no OOM recovery, a fixed request):
// what scripts/slurm-compare.py builds its comparison from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "sim/estimator.h"
#include "sim_fixture.h"

namespace colo::sim {
namespace {

using test::config;
using test::thesis_jobs;
using ::testing::HasSubstr;

TEST(SimCluster, MultiGpuJobsRunOnOneServer) {
  SimConfig c = config(PolicyKind::Magm, 8);
  c.nodes = 4;  // 4 servers × 2 GPUs
  const SimResult r = simulate(c, thesis_jobs("philly_mix_90_tasks.csv", "oracle"));
  EXPECT_EQ(r.completed, r.jobs);
  int wide = 0;
  for (const JobOutcome& o : r.outcomes) {
    if (o.gpus.size() < 2) continue;
    ++wide;
    EXPECT_EQ(o.gpus[0] / 2, o.gpus[1] / 2) << o.name;  // the same server
  }
  EXPECT_GT(wide, 0);
}

TEST(SimCluster, OneServerIsTheFlatServer) {
  const auto jobs = thesis_jobs("philly_mix_90_tasks.csv", "oracle");
  SimConfig one = config(PolicyKind::Magm, 4);
  SimConfig flat = one;
  one.nodes = 1;
  EXPECT_DOUBLE_EQ(simulate(one, jobs).makespan_s, simulate(flat, jobs).makespan_s);
}

TEST(SimCluster, GpusMustSplitEvenly) {
  SimConfig c = config(PolicyKind::Magm, 4);
  c.nodes = 3;
  EXPECT_THROW(simulate(c, thesis_jobs("philly_mix_90_tasks.csv", "oracle")), std::invalid_argument);
}

TEST(SimCluster, WithoutRecoveryAnOomFailsTheJob) {
  const auto jobs = thesis_jobs("philly_heavy_60_tasks.csv", "faketensor");
  SimConfig c = config(PolicyKind::Magm, 4);
  c.recover_ooms = false;
  const SimResult r = simulate(c, jobs);
  ASSERT_GT(r.oom_crashes, 0);
  EXPECT_EQ(r.failed, static_cast<std::size_t>(r.oom_crashes));  // each crash is a lost job
  EXPECT_EQ(r.completed + r.failed, r.jobs);
  for (const JobOutcome& o : r.outcomes) {
    EXPECT_LE(o.attempts, 1) << o.name;
    if (o.failed) {
      EXPECT_THAT(o.fail_reason, HasSubstr("no recovery"));
    }
  }
}

TEST(SimEstimators, FixedAsksEveryJobForTheSameShare) {
  const auto ctx = estimator_context_for(test::carma("workloads.csv"));
  const Estimator e = make_estimator("fixed:10GiB", ctx);
  Workload w;
  w.true_mib = 30000;
  EXPECT_EQ(e(w).mib, 10240);
  EXPECT_EQ(e(w).source, "fixed");
  EXPECT_THROW(make_estimator("fixed:", ctx), UserError);
  EXPECT_THROW(make_estimator("fixed:-1GiB", ctx), UserError);
  EXPECT_THROW(make_estimator("fixed:99999TiB", ctx), UserError);
}

}  // namespace
}  // namespace colo::sim
