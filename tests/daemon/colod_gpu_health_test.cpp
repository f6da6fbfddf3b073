// GPU health against a live colod on fake GPUs whose NVML calls the test makes fail (the fake's
// DIR/fail-<index> switch): an optional metric failing keeps the GPU in service, an essential
// one takes it out after several samples and it returns by itself once fixed, health is never
// persisted as an operator drain, a GPU failing at discovery still has an identity and comes
// back, and queued jobs say why they wait. Every wait is on state the API shows.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string fake_dir(const TempDir& d) { return d.path() + "/fake-nvml"; }

json gpu(const ColodProcess& d, int index) { return d.colo_json({"gpus", "--json"}).at(static_cast<size_t>(index)); }

std::string waiting(const ColodProcess& d, std::uint64_t id) {
  const json j = d.colo_json({"show", std::to_string(id), "--json"});
  return j.value("waiting_reason", json()).is_string() ? j.at("waiting_reason").get<std::string>() : "";
}

TEST(ColodGpuHealth, FailingPowerReadingKeepsTheGpuInServiceWithPowerUnknown) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  colo::gpu::add_fake_call_failure(fake_dir(dir), 0, "nvmlDeviceGetPowerUsage", 999);  // NVML_ERROR_UNKNOWN
  // Five failed power readings in a row: more than it takes to call a GPU unhealthy.
  ASSERT_TRUE(wait_until(
      [&] { return gpu(d, 0).value("metric_error_counts", json::object()).value("power", 0) >= 5; }, 60s))
      << gpu(d, 0).dump(2) << d.log();
  const json g = gpu(d, 0);
  EXPECT_TRUE(g.at("healthy").get<bool>()) << g.dump(2);
  EXPECT_FALSE(g.at("drained").get<bool>()) << g.dump(2);
  EXPECT_TRUE(g.at("power_w").is_null()) << g.dump(2);
  EXPECT_NE(g.at("metric_errors").at("power").get<std::string>().find("nvmlDeviceGetPowerUsage"), std::string::npos)
      << g.dump(2);
  const RunResult text = d.colo({"gpus"});
  EXPECT_NE(text.out.find("GPU 0 power unknown: "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("unhealthy"), std::string::npos) << text.out;
  // And it still takes work.
  const std::uint64_t id = d.submit({"--mem", "2GiB", "--", "/bin/true"});
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
}

TEST(ColodGpuHealth, FailingMemoryReadsTakeTheGpuOutAfterSeveralSamplesAndItReturnsByItself) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB");
  ASSERT_EQ(d.colo({"drain", "0", "--reason", "maintenance"}).rc, 0);
  colo::gpu::add_fake_call_failure(fake_dir(dir), 1, "nvmlDeviceGetMemoryInfo", 999);
  ASSERT_TRUE(wait_until([&] { return !gpu(d, 1).at("healthy").get<bool>(); }, 60s)) << d.log();
  json g = gpu(d, 1);
  EXPECT_GE(g.at("consecutive_failures").get<int>(), 3) << g.dump(2);  // not on the first failure
  EXPECT_TRUE(g.at("drained").get<bool>());
  EXPECT_FALSE(g.at("admin_drained").get<bool>());
  EXPECT_EQ(g.at("drain_kind"), "health");
  EXPECT_NE(g.at("health_reason").get<std::string>().find("nvmlDeviceGetMemoryInfo"), std::string::npos) << g.dump(2);
  EXPECT_NE(g.at("drain_reason").get<std::string>().find("unhealthy"), std::string::npos) << g.dump(2);
  const RunResult text = d.colo({"gpus"});
  EXPECT_NE(text.out.find("GPU 1 unhealthy: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU 0 drained by an operator: maintenance"), std::string::npos) << text.out;
  // Nothing for an operator to resume: health is lifted by the monitor.
  const RunResult resume = d.colo({"resume", "1"});
  EXPECT_EQ(resume.rc, 2);
  EXPECT_NE(resume.err.find("unhealthy"), std::string::npos) << resume.err;

  // A job now has nowhere to go, and says so.
  const std::uint64_t id = d.submit({"--mem", "2GiB", "--", "/bin/true"});
  std::string why;
  ASSERT_TRUE(wait_until([&] { return (why = waiting(d, id)).find("GPU 1 unhealthy") != std::string::npos; }, 30s))
      << why;
  EXPECT_NE(why.find("GPU 0 drained"), std::string::npos) << why;

  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 1, false);  // fixed
  ASSERT_TRUE(wait_until([&] { return gpu(d, 1).at("healthy").get<bool>(); }, 180s)) << gpu(d, 1).dump(2) << d.log();
  g = gpu(d, 1);
  EXPECT_FALSE(g.at("drained").get<bool>()) << g.dump(2);
  EXPECT_EQ(g.at("drain_kind"), "");
  const json j = d.wait_terminal(id, 60s);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2);
  EXPECT_EQ(j.at("gpus")[0].at("index"), 1);
  // The operator's drain of GPU 0 is untouched by GPU 1's return.
  g = gpu(d, 0);
  EXPECT_TRUE(g.at("admin_drained").get<bool>());
  EXPECT_EQ(g.at("drain_reason"), "maintenance");
}

TEST(ColodGpuHealth, HealthIsNotPersistedAsADrainAcrossRestarts) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB");
  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 1, true);
  ASSERT_TRUE(wait_until([&] { return !gpu(d, 1).at("healthy").get<bool>(); }, 60s)) << d.log();
  d.stop();
  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 1, false);
  d.start();
  const json g = gpu(d, 1);
  EXPECT_TRUE(g.at("healthy").get<bool>()) << g.dump(2);
  EXPECT_FALSE(g.at("drained").get<bool>()) << g.dump(2);  // no `colo resume` needed
}

TEST(ColodGpuHealth, GpuFailingAtDiscoveryHasAPlaceholderIdentityAndComesBack) {
  TempDir dir;
  std::filesystem::create_directories(fake_dir(dir));
  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 0, true);  // every call, the UUID too
  ColodProcess d(dir.path(), "2x40GiB");
  json g = gpu(d, 0);
  EXPECT_EQ(g.at("uuid"), "GPU-unknown-0") << g.dump(2);
  EXPECT_FALSE(g.at("identity_known").get<bool>());
  EXPECT_FALSE(g.at("healthy").get<bool>());
  EXPECT_NE(g.at("health_reason").get<std::string>().find("failed during discovery"), std::string::npos) << g.dump(2);

  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 0, false);
  ASSERT_TRUE(wait_until([&] { return gpu(d, 0).at("healthy").get<bool>(); }, 180s)) << gpu(d, 0).dump(2) << d.log();
  g = gpu(d, 0);
  EXPECT_EQ(g.at("uuid"), colo::gpu::fake_gpu_uuid(0)) << g.dump(2);
  EXPECT_TRUE(g.at("identity_known").get<bool>());
  EXPECT_EQ(g.at("total_mib").get<int>(), 40960);
  EXPECT_FALSE(g.at("drained").get<bool>());
}

TEST(ColodGpuHealth, GpuFailingAtDiscoveryAfterItsUuidKeepsTheRealUuid) {
  TempDir dir;
  std::filesystem::create_directories(fake_dir(dir));
  colo::gpu::add_fake_call_failure(fake_dir(dir), 1, "nvmlDeviceGetMemoryInfo", 999);
  ColodProcess d(dir.path(), "2x40GiB");
  json g = gpu(d, 1);
  EXPECT_EQ(g.at("uuid"), colo::gpu::fake_gpu_uuid(1)) << g.dump(2);
  EXPECT_FALSE(g.at("healthy").get<bool>());
  EXPECT_EQ(g.at("total_mib").get<int>(), 0);
  colo::gpu::set_fake_gpu_failure(fake_dir(dir), 1, false);
  ASSERT_TRUE(wait_until([&] { return gpu(d, 1).at("healthy").get<bool>(); }, 180s)) << gpu(d, 1).dump(2) << d.log();
  EXPECT_EQ(gpu(d, 1).at("total_mib").get<int>(), 40960);  // filled in when it came back
}

TEST(ColodGpuHealth, QueuedJobsSayWhyTheyWait) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const std::string job = colo::gpu::fake_job_path();
  const std::uint64_t big = d.submit({"--mem", "30GiB", "--", job, "--mem", "30GiB", "--hold", "inf"});
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"show", std::to_string(big), "--json"}).at("state") == "running"; }, 30s));
  const std::uint64_t next = d.submit({"--mem", "12GiB", "--", "/bin/true"});
  const std::uint64_t after = d.submit({"--mem", "1GiB", "--", "/bin/true"});
  const std::string want = "needs 12.0 GiB + 2.0 GiB margin; most free is 10.0 GiB on GPU 0";
  std::string why;
  ASSERT_TRUE(wait_until([&] { return (why = waiting(d, next)) == want; }, 30s)) << why;
  EXPECT_EQ(waiting(d, after), "behind job " + std::to_string(next) + " in FIFO order");
  EXPECT_TRUE(d.colo_json({"show", std::to_string(big), "--json"}).at("waiting_reason").is_null());
  // The same in `colo queue --json` and in `colo show`'s text.
  bool listed = false;
  for (const json& j : d.colo_json({"queue", "--json"}))
    if (j.at("id").get<std::uint64_t>() == next) {
      listed = true;
      EXPECT_EQ(j.at("waiting_reason"), want);
    }
  EXPECT_TRUE(listed);
  EXPECT_NE(d.colo({"show", std::to_string(next)}).out.find("  waiting    " + want), std::string::npos);

  ASSERT_EQ(d.colo({"cancel", std::to_string(big)}).rc, 0);
  EXPECT_EQ(d.wait_terminal(next).at("state"), "done");
  EXPECT_EQ(d.wait_terminal(after).at("state"), "done");
  EXPECT_TRUE(d.colo_json({"show", std::to_string(next), "--json"}).at("waiting_reason").is_null());
}

}  // namespace
}  // namespace colo::daemon::testing
