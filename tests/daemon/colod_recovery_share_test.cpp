// [recovery] share_after_peak: a job recovered from an OOM runs alone until its peak memory has
// been seen, then others may join it on its GPU (the thesis' prototype let jobs join a recovered
// one once it ran). Every wait is on observed state: a job's attempts, events or state.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool has_oom_attempt(const json& j) {
  for (const json& a : j.at("attempts"))
    if (a.at("outcome") == "oom") return true;
  return false;
}

TEST(ColodRecoveryShare, OthersJoinARecoveredJobOnceItsPeakIsSeen) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[recovery]\nshare_after_peak = true\nshare_after_s = 0\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string fake = colo::gpu::fake_job_path();
  const std::string gate_a = dir.path() + "/gate-a", gate_b = dir.path() + "/gate-b";
  // Both claim 10 GiB and are placed together (the GPU is drained while they are submitted);
  // together they need 50 GiB, so whichever allocates second crashes with an OOM.
  ASSERT_EQ(d.colo({"drain", "0"}).rc, 0);
  const std::uint64_t a = d.submit({"--mem", "10GiB", "--", fake, "--mem", "30GiB", "--until-file", gate_a});
  const std::uint64_t b = d.submit({"--mem", "10GiB", "--", fake, "--mem", "20GiB", "--until-file", gate_b});
  ASSERT_EQ(d.colo({"resume", "0"}).rc, 0);
  std::uint64_t crashed = 0;
  ASSERT_TRUE(wait_until([&] {
    for (std::uint64_t id : {a, b})
      if (has_oom_attempt(d.colo_json({"show", std::to_string(id), "--json"}))) crashed = id;
    return crashed != 0;
  }, 90s));
  const std::uint64_t other = crashed == a ? b : a;
  // The one that kept running ends; the crashed one is retried alone on the idle GPU.
  std::ofstream(crashed == a ? gate_b : gate_a).put('x');
  EXPECT_EQ(d.wait_terminal(other, 90s).at("state"), "done");
  // Its peak is seen (share_after_s = 0): colod lets others join and says so.
  ASSERT_TRUE(wait_until([&] { return has_event(d.colo_json({"show", std::to_string(crashed), "--json"}), "shared"); }, 90s))
      << d.colo_json({"show", std::to_string(crashed), "--json"}).dump(2);
  json r = d.colo_json({"show", std::to_string(crashed), "--json"});
  EXPECT_EQ(r.at("state"), "running");
  EXPECT_TRUE(r.at("attempts").back().at("exclusive").get<bool>());
  EXPECT_TRUE(r.at("attempts").back().at("recovery").get<bool>());
  // A small job now starts beside it and finishes while the recovered job still runs.
  const std::uint64_t small = d.submit({"--mem", "2GiB", "--", fake, "--mem", "1GiB", "--hold", "0"});
  EXPECT_EQ(d.wait_terminal(small, 90s).at("state"), "done");
  r = d.colo_json({"show", std::to_string(crashed), "--json"});
  EXPECT_EQ(r.at("state"), "running") << "the small job did not wait for the recovered one";
  // A restarted colod re-adopts the recovered job and lets others join it again (another small
  // job runs beside it), without announcing the same sharing twice.
  d.stop();
  ASSERT_TRUE(d.start());
  const std::uint64_t small2 = d.submit({"--mem", "2GiB", "--", fake, "--mem", "1GiB", "--hold", "0"});
  EXPECT_EQ(d.wait_terminal(small2, 90s).at("state"), "done");
  r = d.colo_json({"show", std::to_string(crashed), "--json"});
  EXPECT_EQ(r.at("state"), "running");
  int shared_events = 0;
  for (const json& e : r.at("events")) shared_events += e.at("kind") == "shared";
  EXPECT_EQ(shared_events, 1) << r.dump(2);
  std::ofstream(crashed == a ? gate_a : gate_b).put('x');
  EXPECT_EQ(d.wait_terminal(crashed, 90s).at("state"), "done");
}

}  // namespace
}  // namespace colo::daemon::testing
