// The simulator's exclusive schedule against an independent FIFO list schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/workloads/synthetic_trace.h"
#include "sim_fixture.h"

namespace colo::sim {
namespace {

// Exclusive FIFO: jobs start in submission order; each starts at the first instant ≥ its
// submission and ≥ its predecessor's start at which enough GPUs are free, and runs solo.
std::vector<double> fifo_starts(const std::vector<SimJobSpec>& jobs, int gpus) {
  std::vector<double> free_at(static_cast<size_t>(gpus), 0.0), starts;
  double prev = 0;
  for (const SimJobSpec& j : jobs) {
    std::vector<double> sorted = free_at;
    std::sort(sorted.begin(), sorted.end());
    const double t = std::max({j.submit_s, prev, sorted[static_cast<size_t>(j.gpus - 1)]});
    int taken = 0;
    for (double& f : free_at)
      if (taken < j.gpus && f <= t) {
        f = t + j.solo_s;
        ++taken;
      }
    starts.push_back(t);
    prev = t;
  }
  return starts;
}

void expect_matches(const std::vector<SimJobSpec>& jobs, int gpus, const std::string& what) {
  const SimResult r = simulate(test::config(PolicyKind::Exclusive, gpus, false), jobs);
  const auto starts = fifo_starts(jobs, gpus);
  double makespan = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_DOUBLE_EQ(r.outcomes[i].first_start_s, starts[i]) << what << " job " << i;
    makespan = std::max(makespan, starts[i] + jobs[i].solo_s);
  }
  EXPECT_DOUBLE_EQ(r.makespan_s, makespan - jobs.front().submit_s) << what;
  EXPECT_EQ(r.completed, jobs.size());
  EXPECT_EQ(r.oom_crashes, 0);
}

TEST(FifoReference, ThesisTraces) {
  for (const char* t : {"philly_mix_90_tasks.csv", "philly_heavy_60_tasks.csv"})
    for (const char* e : {"none", "oracle", "faketensor"}) expect_matches(test::thesis_jobs(t, e), 4, t);
}

TEST(FifoReference, RandomTraces) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    SyntheticParams p;
    p.jobs = 60;
    p.mean_interarrival_s = 300;
    p.multi_gpu_fraction = 0.3;
    const int gpus = 2 + static_cast<int>(seed % 4);
    expect_matches(synthetic_jobs(p, seed), gpus, "seed " + std::to_string(seed));
  }
}

}  // namespace
}  // namespace colo::sim
