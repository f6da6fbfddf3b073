// Fairness time slots in the simulator (core/time_slots.h): exact schedules on small cases, and
// properties over random traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "sim/workloads/synthetic_trace.h"
#include "sim_fixture.h"

namespace colo::sim {
namespace {

// One 40 GiB GPU; two jobs of 30 GiB each cannot share it. A runs 10 000 s alone, B (100 s)
// arrives at 10 s.
std::vector<SimJobSpec> long_and_short() {
  std::vector<SimJobSpec> jobs(2);
  jobs[0] = {"long", 0, 1, 30000, 10000, 0.5, MemoryNeed::of(30000, "oracle")};
  jobs[1] = {"short", 10, 1, 30000, 100, 0.5, MemoryNeed::of(30000, "oracle")};
  return jobs;
}

SimConfig one_gpu() {
  SimConfig c = test::config(PolicyKind::Magm, 1);
  c.checkpoint = {30, 60};
  return c;
}

// Slots far shorter than the jobs (years of work in 700 s slots) end without bound, each a
// checkpoint and a requeue: past SimConfig::max_checkpoints the run is refused with the figures,
// not simulated for days. Here two jobs that cannot share the GPU take turns.
TEST(SimTimeSlots, RunsPastTheCheckpointBoundAreRefused) {
  SimConfig c = one_gpu();
  c.slots = {700, 70};
  c.max_checkpoints = 50;
  std::vector<SimJobSpec> jobs = long_and_short();
  jobs[0].solo_s = jobs[1].solo_s = 1e6;
  try {
    simulate(c, jobs);
    FAIL() << "simulated";
  } catch (const UserError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::StartsWith("time slots of 700 s: more than 50 checkpoints by "));
    EXPECT_THAT(std::string(e.what()), ::testing::EndsWith("give longer slots"));
  }
  c.max_checkpoints = 100000;  // under the bound: the same run ends
  EXPECT_GT(simulate(c, jobs).checkpoints, 50);
}

TEST(SimTimeSlots, OffTheShortJobWaitsForTheLongOne) {
  const SimResult r = simulate(one_gpu(), long_and_short());
  EXPECT_EQ(r.outcomes[1].first_start_s, 10000);
  EXPECT_EQ(r.checkpoints, 0);
}

TEST(SimTimeSlots, TheLongJobCheckpointsAndResumesAfterTheShortOne) {
  SimConfig c = one_gpu();
  c.slots = {1000, 100};
  const SimResult r = simulate(c, long_and_short());
  // Asked at 900 s (slot 1000 − notice 100), A writes its checkpoint (30 s) and leaves at 930;
  // B runs 930–1030; A resumes from 900 s of work done plus 60 s reading it back: 10 000 − 900
  // + 60 = 9 160 s more. Nobody waits after that, so A keeps the GPU past its next slot.
  EXPECT_EQ(r.outcomes[1].first_start_s, 930);
  EXPECT_EQ(r.outcomes[1].finish_s, 1030);
  EXPECT_EQ(r.outcomes[0].checkpoints, 1);
  EXPECT_EQ(r.outcomes[0].attempts, 2);
  EXPECT_EQ(r.outcomes[0].last_start_s, 1030);
  EXPECT_DOUBLE_EQ(r.outcomes[0].finish_s, 1030 + 9160);
  EXPECT_DOUBLE_EQ(r.outcomes[0].waited_s, 100);  // 930 → 1030
  EXPECT_DOUBLE_EQ(r.max_queued_s, 920);          // B: 10 → 930
  EXPECT_EQ(r.checkpoints, 1);
  EXPECT_NE(r.policy.find("time slots 1000 s"), std::string::npos) << r.policy;
  // Fairer: B's service rate went from 100/10 090 to 100/1 020.
  EXPECT_GT(r.jain_index, simulate(one_gpu(), long_and_short()).jain_index);
}

TEST(SimTimeSlots, StoppedBeforeItsCheckpointIsWrittenAJobRestartsFromItsLastOne) {
  SimConfig c = one_gpu();
  c.slots = {1000, 100};
  c.checkpoint = {200, 60};  // writing takes longer than the notice: stopped at 1000 with nothing saved
  const SimResult r = simulate(c, long_and_short());
  EXPECT_EQ(r.outcomes[1].first_start_s, 1000);
  EXPECT_EQ(r.outcomes[0].last_start_s, 1100);
  EXPECT_DOUBLE_EQ(r.outcomes[0].finish_s, 1100 + 10000);  // from scratch, nothing to read back
  // It would lose every slot the same way: a third job arriving later does not stop it again.
  auto three = long_and_short();
  three.push_back({"later", 3000, 1, 30000, 100, 0.5, MemoryNeed::of(30000, "oracle")});
  const SimResult r3 = simulate(c, three);
  EXPECT_EQ(r3.outcomes[0].checkpoints, 1);
  EXPECT_DOUBLE_EQ(r3.outcomes[2].first_start_s, 11100);
}

// Asked at its slot's notice, a job whose checkpoint takes longer than the notice is stopped at
// the slot's end only if someone still waits then (as colod does); here the waiting job found
// another GPU before that, so A goes on, writes its checkpoint and leaves, as asked.
TEST(SimTimeSlots, NobodyWaitingAtTheSlotsEndNoStop) {
  SimConfig c = test::config(PolicyKind::Exclusive, 2);
  c.slots = {200, 10};
  c.checkpoint = {30, 60};  // written at 220, after the slot's end at 200
  std::vector<SimJobSpec> jobs(3);
  jobs[0] = {"A", 0, 1, 10000, 3600, 0.5, MemoryNeed::of(10000, "oracle")};
  jobs[1] = {"X", 0, 1, 10000, 195, 0.5, MemoryNeed::of(10000, "oracle")};
  jobs[2] = {"B", 1, 1, 10000, 600, 0.5, MemoryNeed::of(10000, "oracle")};
  const SimResult r = simulate(c, jobs);
  // B waits from 1 s; A is asked at 190 s; X ends at 195 s and B takes its GPU: at 200 s nobody
  // waits. A leaves at 220 s with its checkpoint (3 400 s of work left) and resumes at once.
  EXPECT_EQ(r.outcomes[2].first_start_s, 195);
  EXPECT_EQ(r.outcomes[0].checkpoints, 1);
  EXPECT_EQ(r.outcomes[0].last_start_s, 220);
  EXPECT_DOUBLE_EQ(r.outcomes[0].finish_s, 220 + 60 + (3600 - 190));
}

TEST(SimTimeSlots, NobodyWaitingNoCheckpoint) {
  SimConfig c = one_gpu();
  c.slots = {1000, 100};
  auto jobs = long_and_short();
  jobs.pop_back();
  const SimResult r = simulate(c, jobs);
  EXPECT_EQ(r.checkpoints, 0);
  EXPECT_DOUBLE_EQ(r.outcomes[0].finish_s, 10000);
}

// Someone arrives long after the slot ended: the job is asked then and still gets its notice.
TEST(SimTimeSlots, ALateArrivalAsksTheRunningJobThen) {
  SimConfig c = one_gpu();
  c.slots = {1000, 100};
  auto jobs = long_and_short();
  jobs[1].submit_s = 5000;
  const SimResult r = simulate(c, jobs);
  EXPECT_EQ(r.outcomes[1].first_start_s, 5030);  // asked at 5000, checkpoint written by 5030
  EXPECT_EQ(r.outcomes[0].checkpoints, 1);
}

// A newcomer that the same instant's decision places on a free GPU does not wait, so nobody is
// asked to make room for it.
TEST(SimTimeSlots, ANewcomerThatFitsElsewhereAsksNobody) {
  SimConfig c = test::config(PolicyKind::Magm, 2);
  c.slots = {1000, 100};
  auto jobs = long_and_short();
  jobs[1].submit_s = 5000;  // A's slot passed long ago, nobody waited
  const SimResult r = simulate(c, jobs);
  EXPECT_EQ(r.checkpoints, 0);
  EXPECT_EQ(r.outcomes[1].first_start_s, 5000);
}

// Reading the checkpoint back takes longer than a slot gives: a job that made no net progress
// gets another slot instead of being stopped, so both jobs finish.
TEST(SimTimeSlots, NoProgressNoStop) {
  SimConfig c = one_gpu();
  c.slots = {1000, 100};
  c.checkpoint = {30, 950};
  auto jobs = long_and_short();
  jobs[1].solo_s = 5000;
  const SimResult r = simulate(c, jobs);
  EXPECT_EQ(r.completed, 2u);
  EXPECT_GT(r.checkpoints, 0);
}

TEST(SimTimeSlots, BadSettingsAreRefused) {
  SimConfig c = one_gpu();
  c.slots = {100, 100};
  EXPECT_THROW(simulate(c, long_and_short()), std::invalid_argument);
  c.slots = {1000, 100};
  c.checkpoint.save_s = -1;
  EXPECT_THROW(simulate(c, long_and_short()), std::invalid_argument);
}

// Random traces with slots: every job completes, lazy and eager decisions agree, and slots are
// actually exercised.
TEST(SimTimeSlots, RandomTracesCompleteAndDecisionsAgree) {
  int checkpoints = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    std::mt19937_64 rng(seed + 11);
    SimConfig c = test::config(seed % 2 ? PolicyKind::Magm : PolicyKind::Exclusive, 2 + static_cast<int>(rng() % 3),
                               true, seed % 3 ? SharingKind::Mps : SharingKind::Streams);
    c.slots = {600.0 + static_cast<double>(rng() % 3000), 60};
    c.checkpoint = {static_cast<double>(rng() % 120), static_cast<double>(rng() % 300)};
    SyntheticParams p;
    p.jobs = 40;
    p.mean_interarrival_s = 60;
    p.min_solo_s = 60;
    p.max_solo_s = 2 * 3600;
    p.max_mib = c.gpu_memory_mib - 1000;
    p.multi_gpu_fraction = 0.15;
    const auto jobs = synthetic_jobs(p, seed);
    const SimResult lazy = simulate(c, jobs);
    EXPECT_EQ(lazy.completed + lazy.failed, lazy.jobs) << "seed " << seed;
    EXPECT_GT(lazy.jain_index, 0);
    EXPECT_LE(lazy.jain_index, 1 + 1e-9);
    c.eager_decisions = true;
    const SimResult eager = simulate(c, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_EQ(lazy.outcomes[i].first_start_s, eager.outcomes[i].first_start_s) << "seed " << seed << " job " << i;
      ASSERT_EQ(lazy.outcomes[i].finish_s, eager.outcomes[i].finish_s) << "seed " << seed << " job " << i;
    }
    checkpoints += lazy.checkpoints;
  }
  EXPECT_GT(checkpoints, 50);
}

}  // namespace
}  // namespace colo::sim
