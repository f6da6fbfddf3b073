// The trace simulator on MIG instances (SimConfig::mig): one job per instance, slowed by the
// instance's capacity, power per physical GPU, and a job that ran out of memory on a small
// instance retried on a larger one.
#include <gtest/gtest.h>

#include "sim_fixture.h"

namespace colo::sim {
namespace {

SimConfig mig(const std::string& layout) {
  SimConfig c = test::config(PolicyKind::Magm, 1);
  c.mig = parse_mig_layout(layout);
  return c;
}

SimJobSpec spec(std::string name, Seconds submit, MiB true_mib, Seconds solo, double smact, MiB need) {
  SimJobSpec s;
  s.name = std::move(name);
  s.submit_s = submit;
  s.true_mib = true_mib;
  s.solo_s = solo;
  s.smact = smact;
  s.need = MemoryNeed::of(need, "test");
  return s;
}

TEST(SimMig, OneJobPerInstanceSlowedByItsCapacity) {
  std::vector<SimJobSpec> jobs = {spec("heavy", 0, 8000, 1000, 0.82, 8000), spec("light", 0, 8000, 1000, 0.3, 8000)};
  const SimResult r = simulate(mig("3g.20gb,4g.20gb"), jobs);
  ASSERT_EQ(r.completed, 2u);
  EXPECT_EQ(r.outcomes[0].gpus, std::vector<int>{0});  // equal free memory: the first instance
  EXPECT_NEAR(r.outcomes[0].finish_s, 1000 * 0.82 / 0.615, 1e-6);
  EXPECT_EQ(r.outcomes[1].gpus, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(r.outcomes[1].finish_s, 1000);  // 0.3 < the 4g capacity: no slowdown
  EXPECT_EQ(r.max_jobs_per_gpu, 2);  // per physical GPU: its two instances ran one job each
}

// The GPU's idle and busy power is paid once, however many instances it has.
TEST(SimMig, PowerIsTheGpusNotEachInstances) {
  const std::vector<SimJobSpec> jobs = {spec("a", 0, 8000, 1000, 0.3, 8000)};
  SimConfig whole = test::config(PolicyKind::Magm, 1);
  const SimResult w = simulate(whole, jobs);
  const SimResult m = simulate(mig("3g.20gb,4g.20gb"), jobs);
  EXPECT_DOUBLE_EQ(m.makespan_s, w.makespan_s);
  EXPECT_NEAR(m.energy_mj, w.energy_mj, 1e-9);
}

TEST(SimMig, AnOomOnASmallInstanceRetriesOnALargerOne) {
  // b holds the 3g instance; a (says 2 000 MiB, needs 8 000) lands on the 1g one, runs out of
  // memory there alone, and waits for the 3g instance instead of crashing on 1g again.
  std::vector<SimJobSpec> jobs = {spec("b", 0, 10000, 5000, 0.5, 10000), spec("a", 10, 8000, 1000, 0.3, 2000)};
  const SimResult r = simulate(mig("1g.5gb,3g.20gb"), jobs);
  ASSERT_EQ(r.completed, 2u) << r.outcomes[1].fail_reason;
  EXPECT_EQ(r.outcomes[1].oom_crashes, 1);
  EXPECT_EQ(r.outcomes[1].gpus, std::vector<int>{1});
  EXPECT_GE(r.outcomes[1].last_start_s, r.outcomes[0].finish_s);
}

TEST(SimMig, AJobLargerThanEveryInstanceFails) {
  const std::vector<SimJobSpec> jobs = {spec("huge", 0, 30000, 1000, 0.5, 30000)};
  const SimResult r = simulate(mig("3g.20gb,4g.20gb"), jobs);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_NE(r.outcomes[0].fail_reason.find("30000 MiB"), std::string::npos) << r.outcomes[0].fail_reason;
}

}  // namespace
}  // namespace colo::sim

namespace colo::sim {
namespace {

// A 2-GPU job whose memory only one instance per GPU can hold (xlnet_large_cased_2 on
// 3g+2g+1g+1g): placed alone on two instances, it crashes, and no server has two that large.
// It fails instead of being retried forever (the simulation never ended), in every recovery mode;
// a 1-instance job that follows it still runs; with unknown needs, 1g.5gb instances (4 864 MiB,
// under the 5 GiB floor) take jobs when idle.
TEST(SimMig, AMultiGpuJobOnlyOneInstanceCanHoldFailsAndOthersRun) {
  for (RecoveryMode mode : {RecoveryMode::Strict, RecoveryMode::Loose}) {
    SimConfig c = mig("3g.20gb,2g.10gb,1g.5gb,1g.5gb");
    c.scheduler.recovery.mode = mode;
    SimJobSpec big = spec("big", 0, 14546, 1000, 0.9, 14546);
    big.gpus = 2;
    std::vector<SimJobSpec> jobs = {big, spec("small", 10, 1776, 100, 0.1, 1776)};
    const SimResult r = simulate(c, jobs);
    EXPECT_EQ(r.failed, 1u);
    EXPECT_EQ(r.completed, 1u);
    EXPECT_NE(r.outcomes[0].fail_reason.find("needs 2 MIG instances of 14546 MiB on one server; the largest server has 1"),
              std::string::npos)
        << r.outcomes[0].fail_reason;
  }
  SimConfig c = mig("1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb");
  SimJobSpec unknown = spec("u", 0, 1776, 100, 0.1, 0);
  unknown.need = MemoryNeed::unknown();
  const std::vector<SimJobSpec> one = {unknown};
  const SimResult r = simulate(c, one);
  EXPECT_EQ(r.completed, 1u) << (r.outcomes[0].fail_reason);
}

}  // namespace
}  // namespace colo::sim
