// Properties of the core checked over many random worlds with a minimal driver: random GPUs,
// random jobs (some needing several GPUs, some with unknown need), random finishes and OOMs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/scheduler.h"
#include "test_support.h"

namespace colo {
namespace {

struct Params {
  PolicyKind policy;
  bool conditions;
  RecoveryMode recovery;
};

class SchedulerProperties : public ::testing::TestWithParam<Params> {};

TEST_P(SchedulerProperties, HoldOverRandomWorlds) {
  const Params p = GetParam();
  Conditions c;
  c.enabled = p.conditions;
  const Scheduler s(SchedulerConfig{make_policy(p.policy, c), {p.recovery, 5120, false}});

  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const int ngpu = std::uniform_int_distribution<int>(1, 8)(rng);
    std::vector<GpuSnapshot> gpus;
    for (int i = 0; i < ngpu; ++i) gpus.push_back(test::gpu(i, i % 2 ? 40960 : 81920));
    const MiB largest = 81920;  // GPU 0 is always an 80 GiB one

    std::map<JobId, Job> jobs;
    std::vector<JobId> main_q, rec_q;
    const int njobs = std::uniform_int_distribution<int>(5, 60)(rng);
    for (int i = 1; i <= njobs; ++i) {
      std::optional<MiB> need;
      if (rng() % 4) need = std::uniform_int_distribution<MiB>(500, 50000)(rng);
      Job j = test::job(static_cast<JobId>(i), need, 1 + static_cast<int>(rng() % 10 == 0 ? rng() % 3 : 0));
      jobs[j.id] = j;
      main_q.push_back(j.id);
    }
    Ledger ledger;
    SchedulerState st;
    std::map<JobId, std::vector<int>> running;
    std::map<JobId, bool> running_exclusive;
    std::vector<JobId> placed_order;
    int done = 0, rejected = 0;

    for (int step = 0; step < 5000 && done + rejected < njobs; ++step) {
      std::vector<Job> mq, rq;
      for (JobId id : main_q) mq.push_back(jobs[id]);
      for (JobId id : rec_q) rq.push_back(jobs[id]);
      for (auto& g : gpus) {
        g.running.clear();
        for (auto& [id, gs] : running)
          if (std::find(gs.begin(), gs.end(), g.index) != gs.end()) g.running.push_back(id);
      }
      const Decision d = s.decide({rq, mq, gpus, &ledger, static_cast<Seconds>(step)}, st);
      for (const auto& r : d.rejections) {
        ++rejected;
        main_q.erase(std::remove(main_q.begin(), main_q.end(), r.job), main_q.end());
      }
      for (const auto& pl : d.placements) {
        Job& j = jobs[pl.job];
        // Multi-GPU jobs: exactly n distinct GPUs at once.
        ASSERT_EQ(static_cast<int>(pl.gpu_indices.size()), j.gpus);
        std::set<int> distinct(pl.gpu_indices.begin(), pl.gpu_indices.end());
        ASSERT_EQ(distinct.size(), pl.gpu_indices.size());
        // Recovery queue first, each queue FIFO.
        auto& q = pl.recovery ? rec_q : main_q;
        ASSERT_FALSE(q.empty());
        ASSERT_EQ(q.front(), pl.job) << "placement out of FIFO order";
        q.erase(q.begin());
        if (pl.recovery) {
          ASSERT_TRUE(std::find(main_q.begin(), main_q.end(), pl.job) == main_q.end());
        }
        transition(j, JobState::Placed);
        transition(j, JobState::Running);
        for (int g : pl.gpu_indices) ledger.reserve(pl.job, g, pl.reserve_mib, pl.alone, step);
        running[pl.job] = pl.gpu_indices;
        running_exclusive[pl.job] = pl.alone;
        if (p.recovery == RecoveryMode::Strict && pl.recovery) {
          ASSERT_TRUE(pl.alone);
        }
      }
      // Invariants over the current state.
      for (const auto& g : gpus) {
        int here = 0, exclusive_here = 0;
        for (auto& [id, gs] : running)
          if (std::find(gs.begin(), gs.end(), g.index) != gs.end()) {
            ++here;
            exclusive_here += running_exclusive[id] ? 1 : 0;
          }
        if (p.policy == PolicyKind::Exclusive) {
          ASSERT_LE(here, 1) << "exclusive collocated";
        }
        if (exclusive_here > 0) {
          ASSERT_EQ(here, 1) << "a job that must run alone has company";
        }
        if (p.conditions && exclusive_here == 0) {
          ASSERT_LE(ledger.reserved_on(g.index), g.total_mib) << "ledger over-committed GPU " << g.index;
        }
      }
      // Random progress: some running jobs finish, some crash out of memory.
      std::vector<JobId> ids;
      for (auto& kv : running) ids.push_back(kv.first);
      for (JobId id : ids) {
        const unsigned r = rng() % 10;
        if (r < 3) {
          Job& j = jobs[id];
          ledger.release(id);
          running.erase(id);
          if (r == 0 && j.attempts < 4) {
            transition(j, JobState::Oom);
            plan_recovery(j, s.config().recovery, j.recovery_need_mib.value_or(j.need.mib.value_or(5120)),
                          std::nullopt, largest);
            rec_q.push_back(id);
          } else {
            transition(j, JobState::Done);
            ++done;
          }
        }
      }
    }
    ASSERT_EQ(done + rejected, njobs) << "seed " << seed << ": jobs left unfinished (deadlock?) gpus=" << ngpu
                                      << " main=" << main_q.size() << " rec=" << rec_q.size()
                                      << " running=" << running.size()
                                      << " head=" << (main_q.empty() ? 0 : main_q.front());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPolicies, SchedulerProperties,
    ::testing::Values(Params{PolicyKind::Exclusive, true, RecoveryMode::Strict},
                      Params{PolicyKind::RoundRobin, true, RecoveryMode::Strict},
                      Params{PolicyKind::RoundRobin, false, RecoveryMode::Strict},
                      Params{PolicyKind::FirstFit, true, RecoveryMode::Loose},
                      Params{PolicyKind::BestFit, true, RecoveryMode::Strict},
                      Params{PolicyKind::Magm, true, RecoveryMode::Strict},
                      Params{PolicyKind::Magm, true, RecoveryMode::Loose},
                      Params{PolicyKind::Magm, false, RecoveryMode::Loose},
                      Params{PolicyKind::Lug, true, RecoveryMode::Loose}));

}  // namespace
}  // namespace colo
