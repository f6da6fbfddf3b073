// Predicted SM activity in colod: the filter smact_predicted (a site policy) keeps two jobs whose
// predicted solo SMACT add up past the cap off one GPU and lets a light one join; a job that ran
// with its GPU to itself leaves its measured SMACT in the history, which the next submission of
// the same job uses. Every wait is on observed state.
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ColodSmact, PredictedActivityKeepsHeavyJobsApartAndLetsALightOneJoin) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[policy]\nname = \"predicted\"\nsmact_cap = 0.8\n"
                                               "[policies.predicted]\nfilters = [\"fits_memory\", \"smact_predicted\"]\n"
                                               "scorers = { most_free_mem = 1 }\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string fake = colo::gpu::fake_job_path();
  const std::string gate_a = dir.path() + "/gate-a", gate_b = dir.path() + "/gate-b";
  const std::uint64_t a =
      d.submit({"--mem", "4GiB", "--smact", "0.6", "--", fake, "--mem", "2GiB", "--until-file", gate_a});
  ASSERT_TRUE(wait_until([&] { return show_job(d, a).at("state") == "running"; }, 60s));
  const std::uint64_t b =
      d.submit({"--mem", "4GiB", "--smact", "0.6", "--", fake, "--mem", "2GiB", "--until-file", gate_b});
  json rb;
  ASSERT_TRUE(wait_until([&] {
    rb = show_job(d, b);
    return rb.at("waiting_reason").is_string() &&
           rb.at("waiting_reason").get<std::string>().find("SM") != std::string::npos;
  }, 60s)) << rb.dump(2);
  EXPECT_EQ(rb.at("state"), "queued");
  EXPECT_DOUBLE_EQ(rb.at("smact").get<double>(), 0.6);
  EXPECT_EQ(rb.at("smact_source"), "user");
  std::ofstream(gate_a).put('x');
  EXPECT_EQ(d.wait_terminal(a, 60s).at("state"), "done");
  ASSERT_TRUE(wait_until([&] { return show_job(d, b).at("state") == "running"; }, 60s));
  // 0.6 + 0.1 is under the cap: a light job runs beside b and ends while b still runs.
  const std::uint64_t c = d.submit({"--mem", "4GiB", "--smact", "0.1", "--", fake, "--mem", "1GiB", "--hold", "0"});
  EXPECT_EQ(d.wait_terminal(c, 60s).at("state"), "done");
  EXPECT_EQ(show_job(d, b).at("state"), "running");
  std::ofstream(gate_b).put('x');
  EXPECT_EQ(d.wait_terminal(b, 60s).at("state"), "done");
}

// [policy] adds_progress: two 85 % jobs share the GPU (2 / (1.7 × 1.05) = 1.12 > 1), a third
// would slow them more than it adds (3 / (2.55 × 1.10) = 1.07 < 1.12) and waits, saying so,
// until one of them ends. Memory alone (smact_cap 1) would have run all three.
TEST(ColodSmact, AddsProgressHoldsBackAJobThatWouldSlowTheOthersMore) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[policy]\nsmact_cap = 1.0\nadds_progress = true\ninterference = 0.05\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string fake = colo::gpu::fake_job_path();
  std::vector<std::uint64_t> ids;
  for (const char* gate : {"/gate-0", "/gate-1", "/gate-2"})
    ids.push_back(d.submit({"--mem", "4GiB", "--smact", "0.85", "--", fake, "--mem", "1GiB", "--until-file", dir.path() + gate}));
  ASSERT_TRUE(wait_until([&] { return show_job(d, ids[0]).at("state") == "running" && show_job(d, ids[1]).at("state") == "running"; }, 60s));
  json third;
  ASSERT_TRUE(wait_until([&] {
    third = show_job(d, ids[2]);
    return third.at("waiting_reason").is_string() &&
           third.at("waiting_reason").get<std::string>().find("more than it adds") != std::string::npos;
  }, 60s)) << third.dump(2);
  EXPECT_EQ(third.at("state"), "queued");
  std::ofstream(dir.path() + "/gate-0").put('x');
  EXPECT_EQ(d.wait_terminal(ids[0], 60s).at("state"), "done");
  ASSERT_TRUE(wait_until([&] { return show_job(d, ids[2]).at("state") == "running"; }, 60s));
  for (const char* gate : {"/gate-1", "/gate-2"}) std::ofstream(dir.path() + gate).put('x');
  EXPECT_EQ(d.wait_terminal(ids[1], 60s).at("state"), "done");
  EXPECT_EQ(d.wait_terminal(ids[2], 60s).at("state"), "done");
}

TEST(ColodSmact, ASoloRunLeavesItsActivityInTheHistory) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string fake = colo::gpu::fake_job_path();
  const std::string gate = dir.path() + "/gate";
  const std::vector<std::string> job = {"--mem", "2GiB", "--", fake, "--mem", "1GiB", "--sm-activity", "0.4",
                                        "--until-file", gate};
  const std::uint64_t first = d.submit(job);
  EXPECT_TRUE(show_job(d, first).at("smact").is_null());
  // Let it run until the monitor has seen its activity on the GPU.
  ASSERT_TRUE(wait_until([&] {
    for (const json& g : d.colo_json({"gpus", "--json"}))
      if (g.contains("smact") && g.at("smact").is_number() && g.at("smact").get<double>() > 0.3) return true;
    return false;
  }, 60s)) << d.colo_json({"gpus", "--json"}).dump(2);
  std::ofstream(gate).put('x');
  EXPECT_EQ(d.wait_terminal(first, 60s).at("state"), "done");
  const std::uint64_t again = d.submit(job);
  const json r = show_job(d, again);
  EXPECT_EQ(r.at("smact_source"), "history") << r.dump(2);
  ASSERT_TRUE(r.at("smact").is_number());
  EXPECT_GT(r.at("smact").get<double>(), 0.0);
  EXPECT_LE(r.at("smact").get<double>(), 0.45);
  EXPECT_EQ(d.wait_terminal(again, 60s).at("state"), "done");  // the gate still stands
}

}  // namespace
}  // namespace colo::daemon::testing
