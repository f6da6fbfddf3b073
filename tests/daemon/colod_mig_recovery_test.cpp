// MIG instances of different sizes: a job that runs out of memory alone on a small instance is
// retried on a larger one, waiting for it if it is busy, instead of crashing again on an idle
// instance of the same small size. Waits are on observed state.
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ColodMigRecovery, ACrashOnASmallInstanceRetriesOnALargerOne) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB:mig=1g.5gb,1g.5gb,3g.20gb");
  const json gpus = d.colo_json({"gpus", "--json"});
  ASSERT_EQ(gpus.size(), 3u) << gpus.dump(2);
  std::string large;
  for (const json& g : gpus)
    if (g.at("total_mib").get<long>() > 10000) large = g.at("uuid");
  ASSERT_FALSE(large.empty()) << gpus.dump(2);
  const std::string fake = colo::gpu::fake_job_path();
  const std::string gate = dir.path() + "/gate";
  // The large instance is taken first (most free memory), so the next job lands on a small one.
  const std::uint64_t holder = d.submit({"--mem", "8GiB", "--", fake, "--mem", "8GiB", "--until-file", gate});
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(holder), "--json"}).at("state") == "running"; }, 60s));
  // Says 2 GiB, needs 8: out of memory on a 5 GB instance, alone.
  const std::uint64_t big = d.submit({"--mem", "2GiB", "--", fake, "--mem", "8GiB", "--hold", "0"});
  json r;
  ASSERT_TRUE(wait_until([&] {
    r = d.colo_json({"show", std::to_string(big), "--json"});
    return r.at("state") == "recovering" && r.at("waiting_reason").is_string();
  }, 60s)) << r.dump(2);
  EXPECT_NE(r.at("waiting_reason").get<std::string>().find("smaller than"), std::string::npos) << r.dump(2);
  EXPECT_EQ(r.at("attempts").size(), 1u);  // not retried on the idle small instance
  std::ofstream(gate).put('x');
  EXPECT_EQ(d.wait_terminal(holder, 60s).at("state"), "done");
  r = d.wait_terminal(big, 60s);
  EXPECT_EQ(r.at("state"), "done") << r.dump(2);
  ASSERT_EQ(r.at("attempts").size(), 2u) << r.dump(2);
  EXPECT_EQ(r.at("attempts")[0].at("outcome"), "oom");
  EXPECT_EQ(r.at("attempts")[1].at("uuids")[0], large);
}

}  // namespace
}  // namespace colo::daemon::testing
