// Backfilling in colod ([policy] backfill = N): a job behind a waiting head starts where it fits,
// its placed event names the head it overtook, and once the head's allowance is used the queue
// is FIFO again until the head starts. Every wait is on observed state (a job's recorded state
// or waiting reason), never on a duration.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string placed_message(const json& j) {
  for (const json& e : j.at("events"))
    if (e.at("kind") == "placed") return e.at("message");
  return "";
}

TEST(ColodBackfill, AJobBehindAWaitingHeadStartsBoundedPerHead) {
  TempDir dir;
  std::ofstream(dir.path() + "/colod.toml") << "[policy]\nbackfill = 1\n";
  ColodProcess d(dir.path(), "1x40GiB", {"--config", dir.path() + "/colod.toml"});
  const std::string gate = dir.path() + "/gate";
  const std::uint64_t a = d.submit({"--mem", "30GiB", "--", colo::gpu::fake_job_path(), "--mem", "1GiB", "--until-file", gate});
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(a), "--json"}).at("state") == "running"; }, 60s));
  const std::uint64_t head = d.submit({"--mem", "30GiB", "--", "/bin/true"});  // 10 GiB free: waits
  const std::uint64_t small = d.submit({"--mem", "2GiB", "--", "/bin/true"});  // fits beside job a
  const json js = d.wait_terminal(small);
  EXPECT_EQ(js.at("state"), "done") << js.dump(2);
  EXPECT_NE(placed_message(js).find("[backfilled ahead of waiting job " + std::to_string(head) + "]"), std::string::npos)
      << js.dump(2);
  // The head's one overtake is used: the next small job waits behind it although it would fit.
  const std::uint64_t next = d.submit({"--mem", "2GiB", "--", "/bin/true"});
  const std::string behind = "behind job " + std::to_string(head) + " in FIFO order (backfilling: 1 of 1 overtakes used)";
  ASSERT_TRUE(wait_until([&] {
    const json j = d.colo_json({"show", std::to_string(next), "--json"});
    return j.at("waiting_reason").is_string() && j.at("waiting_reason").get<std::string>() == behind;
  }, 60s)) << d.colo_json({"show", std::to_string(next), "--json"}).dump(2);
  EXPECT_EQ(d.colo_json({"show", std::to_string(head), "--json"}).at("state"), "queued");
  // A restart of colod does not give the head a new allowance: the count is rebuilt from the
  // placement events, and the restarted scheduler holds the job behind the head again.
  d.stop();
  d.start();
  json jnext;
  ASSERT_TRUE(wait_until([&] {
    jnext = d.colo_json({"show", std::to_string(next), "--json"});
    return jnext.at("state") != "queued" ||
           (jnext.at("waiting_reason").is_string() && jnext.at("waiting_reason").get<std::string>() == behind);
  }, 60s)) << jnext.dump(2);
  EXPECT_EQ(jnext.at("state"), "queued") << jnext.dump(2);
  // Job a ends: the head starts, then the job behind it (not a backfill: nothing waits ahead).
  std::ofstream(gate).put('x');
  EXPECT_EQ(d.wait_terminal(head).at("state"), "done");
  const json jn = d.wait_terminal(next);
  EXPECT_EQ(jn.at("state"), "done") << jn.dump(2);
  EXPECT_EQ(placed_message(jn).find("backfilled"), std::string::npos) << jn.dump(2);
}

}  // namespace
}  // namespace colo::daemon::testing
