#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/bounds/lower_bound.h"
#include "sim_fixture.h"

namespace colo::sim {
namespace {

using test::config;
using test::thesis_jobs;

TEST(Simulator, ExclusiveRunsTheMixTraceWithoutOom) {
  const auto jobs = thesis_jobs("philly_mix_90_tasks.csv", "none");
  const SimResult r = simulate(config(PolicyKind::Exclusive), jobs);
  EXPECT_EQ(r.jobs, 90u);
  EXPECT_EQ(r.completed, 90u);
  EXPECT_EQ(r.oom_crashes, 0);
  EXPECT_EQ(r.max_jobs_per_gpu, 1);
  EXPECT_GE(r.makespan_s, r.lower_bound_s);
}

TEST(Simulator, MagmWithOracleAndMpsBeatsExclusive) {
  for (const char* trace : {"philly_mix_90_tasks.csv", "philly_heavy_60_tasks.csv"}) {
    const SimResult ex = simulate(config(PolicyKind::Exclusive), thesis_jobs(trace, "none"));
    const SimResult magm = simulate(config(PolicyKind::Magm), thesis_jobs(trace, "oracle"));
    EXPECT_EQ(magm.completed, magm.jobs) << trace;
    EXPECT_EQ(magm.oom_crashes, 0) << trace << ": the oracle never under-estimates";
    EXPECT_LT(magm.makespan_s, ex.makespan_s) << trace;
    EXPECT_LT(magm.energy_mj, ex.energy_mj) << trace;
    EXPECT_GT(magm.max_jobs_per_gpu, 1) << trace;
    EXPECT_GE(magm.makespan_s, magm.lower_bound_s) << trace;
  }
}

TEST(Simulator, MpsCollocatesBetterThanStreams) {
  const auto jobs = thesis_jobs("philly_mix_90_tasks.csv", "oracle");
  const SimResult mps = simulate(config(PolicyKind::Magm, 4, true, SharingKind::Mps), jobs);
  const SimResult streams = simulate(config(PolicyKind::Magm, 4, true, SharingKind::Streams), jobs);
  EXPECT_LT(mps.makespan_s, streams.makespan_s);
  EXPECT_LT(mps.avg_exec_s, streams.avg_exec_s);
  // Alone on a GPU the two modes are the same thing.
  const auto none = thesis_jobs("philly_mix_90_tasks.csv", "none");
  EXPECT_DOUBLE_EQ(simulate(config(PolicyKind::Exclusive, 4, false, SharingKind::Mps), none).makespan_s,
                   simulate(config(PolicyKind::Exclusive, 4, false, SharingKind::Streams), none).makespan_s);
}

TEST(Simulator, UnderEstimatesCrashAndRecover) {
  // FakeTensor under-estimates nearly everything (thesis): collocating on its word must OOM.
  const auto jobs = thesis_jobs("philly_heavy_60_tasks.csv", "faketensor");
  for (RecoveryMode mode : {RecoveryMode::Strict, RecoveryMode::Loose}) {
    const SimResult r = simulate(config(PolicyKind::Magm, 4, true, SharingKind::Mps, mode), jobs);
    EXPECT_GT(r.oom_crashes, 0) << to_string(mode);
    EXPECT_EQ(r.completed, r.jobs) << to_string(mode);
    int retried = 0;
    for (const JobOutcome& o : r.outcomes) {
      EXPECT_EQ(o.attempts, o.oom_crashes + 1) << o.name;
      retried += o.oom_crashes > 0;
    }
    EXPECT_GT(retried, 0);
  }
}

TEST(Simulator, JobTooBigForAnyGpuFailsInsteadOfLoopingForever) {
  std::vector<SimJobSpec> jobs(2);
  jobs[0] = {"huge", 0, 1, 50000, 600, 0.5, MemoryNeed::of(1000, "low")};
  jobs[1] = {"small", 5, 1, 1000, 600, 0.5, MemoryNeed::of(1000, "oracle")};
  const SimResult r = simulate(config(PolicyKind::Magm, 1), jobs);
  EXPECT_TRUE(r.outcomes[0].failed);
  EXPECT_TRUE(r.outcomes[1].completed);
  EXPECT_EQ(r.completed, 1u);
}

TEST(Simulator, JobNeedingMoreGpusThanTheServerIsRejected) {
  std::vector<SimJobSpec> jobs(1);
  jobs[0] = {"wide", 0, 3, 1000, 600, 0.5, MemoryNeed::of(1000, "oracle")};
  const SimResult r = simulate(config(PolicyKind::Magm, 2), jobs);
  EXPECT_TRUE(r.outcomes[0].failed);
  EXPECT_EQ(r.completed, 0u);
}

TEST(Simulator, SmactCapDelaysCollocationUntilTheWindowDrops) {
  // Two GPU-hungry jobs (SMACT 0.9 > 80 % cap) on one GPU: the second may start only once the
  // first has finished and its 0.9 has mostly left the 90 s window (0.9·x/90 < 0.8 ⇔ x < 80 s,
  // i.e. at tick 1011), although memory would allow both at once.
  std::vector<SimJobSpec> jobs(2);
  jobs[0] = {"a", 0, 1, 2000, 1000, 0.9, MemoryNeed::of(2000, "oracle")};
  jobs[1] = {"b", 200, 1, 2000, 1000, 0.9, MemoryNeed::of(2000, "oracle")};
  const SimResult r = simulate(config(PolicyKind::Magm, 1), jobs);
  EXPECT_EQ(r.outcomes[1].first_start_s, 1011);
  // A light first job leaves room: b joins as soon as it is submitted.
  jobs[0].smact = 0.3;
  const SimResult r2 = simulate(config(PolicyKind::Magm, 1), jobs);
  EXPECT_EQ(r2.outcomes[1].first_start_s, 200);
  // In between: a+c keep the GPU at 0.9 until a ends (310 s solo × 1.05 MPS slowdown = 325.5 s),
  // then c alone at 0.3. b (submitted at 200) may start at the first monitor tick k whose
  // window (k−90, k] holds less than 75 s of the 0.9 stretch: (0.9·x + 0.3·(90−x))/90 < 0.8
  // ⇔ x < 75 ⇔ k > 340.5, i.e. at 341 — a tick, not an event.
  std::vector<SimJobSpec> three(3);
  three[0] = {"a", 0, 1, 2000, 310, 0.6, MemoryNeed::of(2000, "oracle")};
  three[1] = {"c", 0, 1, 2000, 5000, 0.3, MemoryNeed::of(2000, "oracle")};
  three[2] = {"b", 200, 1, 2000, 100, 0.3, MemoryNeed::of(2000, "oracle")};
  const SimResult r3 = simulate(config(PolicyKind::Magm, 1), three);
  EXPECT_NEAR(r3.outcomes[0].finish_s, 325.5, 1e-6);
  EXPECT_EQ(r3.outcomes[2].first_start_s, 341);
  SimConfig eager = config(PolicyKind::Magm, 1);
  eager.eager_decisions = true;
  EXPECT_EQ(simulate(eager, three).outcomes[2].first_start_s, 341);
}

}  // namespace
}  // namespace colo::sim

namespace colo::sim {
namespace {

TEST(Simulator, UnknownNeedsTakeIdleGpusSmallerThanTheFreeMemoryFloor) {
  // Unknown need and a policy that wants 5 GiB free on 4 GiB GPUs (a 1g.5gb MIG instance is
  // 4864 MiB): an idle GPU is all free, and that is the floor there. Before, nothing could ever
  // start and both jobs failed as "never admitted".
  std::vector<SimJobSpec> jobs(2);
  jobs[0] = {"a", 0, 1, 1000, 600, 0.5, MemoryNeed::unknown()};
  jobs[1] = {"b", 10, 1, 1000, 600, 0.5, MemoryNeed::unknown()};
  SimConfig cfg = test::config(PolicyKind::Magm, 2);
  cfg.gpu_memory_mib = 4096;
  for (bool eager : {false, true}) {
    cfg.eager_decisions = eager;
    const SimResult r = simulate(cfg, jobs);
    EXPECT_EQ(r.completed, 2u);
    EXPECT_EQ(r.failed, 0u);
    EXPECT_EQ(r.outcomes[1].first_start_s, 10) << "the second GPU is idle: b starts at once";
  }
}

// The bound never exceeds the makespan: a 2-GPU job on 1-GPU servers can never run, so it is not
// in the bound (it was, counted against the cluster's GPUs); and the bound of a trace that starts
// later is the same, since the makespan counts from the first submission.
TEST(Simulator, LowerBoundHonoursServersAndALateStart) {
  std::vector<SimJobSpec> jobs(2);
  jobs[0] = {"small", 0, 1, 2000, 200, 0.3, MemoryNeed::of(2000, "oracle")};
  jobs[1] = {"two_gpus", 0, 2, 2000, 3900, 0.5, MemoryNeed::of(2000, "oracle")};
  SimConfig cfg = test::config(PolicyKind::Magm, 2);
  cfg.nodes = 2;
  const SimResult r = simulate(cfg, jobs);
  EXPECT_EQ(r.completed, 1u);
  EXPECT_NEAR(r.lower_bound_s, 200, 1e-6);
  EXPECT_LE(r.lower_bound_s, r.makespan_s);
  const auto trace = thesis_jobs("philly_mix_90_tasks.csv", "oracle");
  auto late = trace;
  for (SimJobSpec& j : late) j.submit_s += 100000;
  const SimConfig magm = test::config(PolicyKind::Magm);
  const SimResult a = simulate(magm, trace), b = simulate(magm, late);
  EXPECT_NEAR(a.makespan_s, b.makespan_s, 1e-6);
  EXPECT_NEAR(a.lower_bound_s, b.lower_bound_s, 1e-6);
  EXPECT_NEAR(lower_bound(trace, 4, 4, 40960, 30).value(), lower_bound(late, 4, 4, 40960, 30, 100000).value(), 1e-6);
}

}  // namespace
}  // namespace colo::sim
