// colod driven by a TOML config: loose recovery, MPS client environment, and a GPU that starts
// failing (marked unhealthy and drained while the daemon keeps running).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_harness.h"
#include "gpu/fake_nvml_env.h"

namespace colo::daemon::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// A second colod on the same state directory would launch every queued job again: it refuses to
// start while the first one runs, and the first one keeps serving.
TEST(ColodConfig, OneColodPerStateDirectory) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x40GiB");
  const RunResult second = run_process({binary("colod"), "--fake-gpus", "1x40GiB", "--state-dir", dir.path()});
  EXPECT_EQ(second.rc, 2) << second.err;  // colod's exit status for a refused start
  EXPECT_EQ(second.err, "colod: error: another colod is running on " + dir.path() + " (" + dir.path() +
                            "/colod.lock is locked)\n");
  EXPECT_TRUE(d.alive());
  EXPECT_EQ(d.colo_json({"gpus", "--json"}).size(), 1u);
  d.kill9();  // the lock goes with the process, even on kill -9
  ASSERT_TRUE(d.start());
  EXPECT_EQ(d.colo_json({"gpus", "--json"}).size(), 1u);
}

TEST(ColodConfig, LooseRecoveryRetriesWithMoreMemoryInsteadOfAnIdleGpu) {
  TempDir dir;
  const std::string cfg = write_file(dir.path() + "/colod.toml", "[recovery]\nmode = \"loose\"\nstep = \"4GiB\"\n");
  ColodProcess d(dir.path(), "1x40GiB", {"--config", cfg});
  const std::string job = colo::gpu::fake_job_path();
  // As in the strict test: "big" ramps into the memory "liar" took at once and crashes.
  const std::uint64_t big = d.submit({"--mem", "10GiB", "--", job, "--mem", "30GiB", "--ramp", "3", "--hold", "1"});
  const std::uint64_t liar = d.submit({"--mem", "10GiB", "--", job, "--mem", "20GiB", "--hold", "4"});
  const json jb = d.wait_terminal(big, 90s), jl = d.wait_terminal(liar, 90s);
  EXPECT_EQ(jb.at("state"), "done") << jb.dump(2);
  EXPECT_EQ(jl.at("state"), "done") << jl.dump(2);
  const json& attempts = jb.at("attempts");
  ASSERT_GE(attempts.size(), 2u) << jb.dump(2);
  EXPECT_EQ(attempts[0].at("outcome"), "oom");
  // Loose: the retry asks for (what the crashed attempt used or reserved) + step, not a whole GPU.
  const json& retry = attempts[1];
  EXPECT_TRUE(retry.at("recovery").get<bool>());
  EXPECT_FALSE(retry.at("exclusive").get<bool>()) << jb.dump(2);
  const int crashed_peak = attempts[0].at("peak_mib").is_null() ? 0 : attempts[0].at("peak_mib").get<int>();
  EXPECT_EQ(retry.at("reserve_mib").get<int>(), std::max(10240, crashed_peak) + 4096) << jb.dump(2);
}

TEST(ColodConfig, MpsSharingPointsJobsAtTheirGpusMpsServer) {
  TempDir dir;
  const std::string calls = dir.path() + "/mps-calls.txt";
  const std::string control = write_file(dir.path() + "/fake-mps-control",
                                         "#!/bin/sh\necho \"$* CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\" >> " + calls +
                                             "\ncat > /dev/null\nexit 0\n");
  ::chmod(control.c_str(), 0755);
  const std::string cfg = write_file(dir.path() + "/colod.toml",
                                     "[sharing]\nmode = \"mps\"\nmps_control = \"" + control + "\"\nmps_root = \"" +
                                         dir.path() + "/mps\"\n");
  ColodProcess d(dir.path(), "2x40GiB", {"--config", cfg});
  const std::uint64_t id = d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo $CUDA_MPS_PIPE_DIRECTORY $CUDA_VISIBLE_DEVICES"});
  const json j = d.wait_terminal(id);
  ASSERT_EQ(j.at("state"), "done") << j.dump(2);
  const std::string uuid = j.at("gpus")[0].at("uuid");
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).out, dir.path() + "/mps/" + uuid + "/pipe " + uuid + "\n");
  const json gpus = d.colo_json({"gpus", "--json"});
  EXPECT_TRUE(gpus[0].at("mps").get<bool>());
  d.stop();  // no job left: colod stops the MPS servers
  std::ifstream in(calls);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("-d CUDA_VISIBLE_DEVICES=" + colo::gpu::fake_gpu_uuid(0)), std::string::npos) << all;
  EXPECT_NE(all.find("-d CUDA_VISIBLE_DEVICES=" + colo::gpu::fake_gpu_uuid(1)), std::string::npos) << all;
  EXPECT_NE(all.find(" CUDA_VISIBLE_DEVICES=" + colo::gpu::fake_gpu_uuid(0) + "\n"), std::string::npos) << all;  // quit
}

// Every user's job is a client of its GPU's MPS server: a job of another user reaches the pipe
// directory (colod's own umask, 077, made it root's alone: the job then ran as a plain CUDA
// client, silently).
TEST(ColodConfig, MpsPipesAreReachableByEveryUsersJobs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  TempDir dir;
  const std::string control = write_file(dir.path() + "/fake-mps-control", "#!/bin/sh\ncat > /dev/null\nexit 0\n");
  ::chmod(control.c_str(), 0755);
  const std::string cfg = write_file(dir.path() + "/colod.toml", "[sharing]\nmode = \"mps\"\nmps_control = \"" + control + "\"\n");
  ColodProcess d(dir.path(), "1x40GiB", {"--config", cfg});
  const RunResult sub = d.colo({"submit", "--mem", "1GiB", "--workdir", "/", "--", "/bin/sh", "-c",
                                "cd \"$CUDA_MPS_PIPE_DIRECTORY\" && ls > /dev/null && echo reached $CUDA_MPS_PIPE_DIRECTORY"},
                               65534);
  ASSERT_EQ(sub.rc, 0) << sub.err;
  const std::uint64_t id = std::stoull(sub.out);
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done") << j.dump(2) << d.colo({"logs", std::to_string(id)}).out;
  const std::string uuid = j.at("gpus")[0].at("uuid");
  EXPECT_EQ(d.colo({"logs", std::to_string(id)}).out, "reached " + dir.path() + "/mps/" + uuid + "/pipe\n");
}

TEST(ColodConfig, FailingGpuIsDrainedAndTheDaemonKeepsRunning) {
  TempDir dir;
  ColodProcess d(dir.path(), "2x40GiB");
  colo::gpu::set_fake_gpu_failure(dir.path() + "/fake-nvml", 1, true);
  ASSERT_TRUE(wait_until([&] { return !d.colo_json({"gpus", "--json"})[1].at("healthy").get<bool>(); }, 20s));
  const json g = d.colo_json({"gpus", "--json"})[1];
  EXPECT_TRUE(g.at("drained").get<bool>());
  EXPECT_NE(g.at("drain_reason").get<std::string>().find("unhealthy"), std::string::npos) << g.dump();
  RunResult resume = d.colo({"resume", "1"});
  EXPECT_EQ(resume.rc, 2);
  EXPECT_NE(resume.err.find("unhealthy"), std::string::npos) << resume.err;
  // Work goes to the healthy GPU only.
  std::vector<std::uint64_t> ids;
  for (int k = 0; k < 3; ++k) ids.push_back(d.submit({"--mem", "2GiB", "--", "/bin/sleep", "0.3"}));
  for (auto id : ids) {
    const json j = d.wait_terminal(id);
    EXPECT_EQ(j.at("state"), "done");
    EXPECT_EQ(j.at("gpus")[0].at("index"), 0);
  }
  EXPECT_TRUE(d.alive());
}

TEST(ColodConfig, GpuFailingAtDiscoveryIsDrainedFromTheStart) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/fake-nvml");
  colo::gpu::set_fake_gpu_failure(dir.path() + "/fake-nvml", 0, true);
  ColodProcess d(dir.path(), "2x40GiB");
  ASSERT_TRUE(wait_until([&] { return d.colo_json({"gpus", "--json"})[0].at("drained").get<bool>(); }, 20s));
  EXPECT_FALSE(d.colo_json({"gpus", "--json"})[0].at("healthy").get<bool>());
  const std::uint64_t id = d.submit({"--mem", "2GiB", "--", "/bin/true"});
  const json j = d.wait_terminal(id);
  EXPECT_EQ(j.at("state"), "done");
  EXPECT_EQ(j.at("gpus")[0].at("index"), 1);  // never GPU 0
  std::ifstream in(dir.path() + "/colod.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("GPU 0 failed during discovery, marked unhealthy"), std::string::npos) << log;
}

TEST(ColodConfig, MigInstancesAreSlotsForOneJobEach) {
  TempDir dir;
  ColodProcess d(dir.path(), "1x80GiB:mig=3g.40gb,3g.40gb");
  const json gpus = d.colo_json({"gpus", "--json"});
  ASSERT_EQ(gpus.size(), 2u);
  for (const json& g : gpus) EXPECT_EQ(g.at("uuid").get<std::string>().rfind("MIG-", 0), 0u) << g.dump();
  std::vector<std::uint64_t> ids;
  for (int k = 0; k < 3; ++k)
    ids.push_back(d.submit({"--mem", "1GiB", "--", "/bin/sh", "-c", "echo $CUDA_VISIBLE_DEVICES; sleep 1"}));
  std::vector<json> jobs;
  for (auto id : ids) {
    jobs.push_back(d.wait_terminal(id));
    ASSERT_EQ(jobs.back().at("state"), "done");
    const std::string uuid = jobs.back().at("gpus")[0].at("uuid");
    EXPECT_EQ(uuid.rfind("MIG-", 0), 0u);
    EXPECT_EQ(d.colo({"logs", std::to_string(id)}).out, uuid + "\n");
  }
  // 1 GiB jobs would collocate on a 40 GiB GPU; in a MIG slot they never share.
  for (size_t a = 0; a < jobs.size(); ++a)
    for (size_t b = a + 1; b < jobs.size(); ++b) {
      const json &x = jobs[a].at("attempts")[0], &y = jobs[b].at("attempts")[0];
      if (x.at("gpus") != y.at("gpus")) continue;
      const bool overlap = x.at("start_time").get<double>() < y.at("end_time").get<double>() &&
                           y.at("start_time").get<double>() < x.at("end_time").get<double>();
      EXPECT_FALSE(overlap) << jobs[a].dump(2) << jobs[b].dump(2);
    }
}

// gpus.managed may name a GPU by index and by UUID at once: still one GPU, and colod starts.
TEST(ColodConfig, ManagedByIndexAndUuidIsOneGpu) {
  TempDir dir;
  const std::string uuid = colo::gpu::fake_gpu_uuid(1);
  const std::string cfg = write_file(dir.path() + "/colod.toml", "[gpus]\nmanaged = [1, \"" + uuid + "\"]\n");
  ColodProcess d(dir.path(), "2x40GiB", {"--config", cfg});
  const json gpus = d.colo_json({"gpus", "--json"});
  ASSERT_EQ(gpus.size(), 1u) << gpus.dump(2);
  EXPECT_EQ(gpus[0].at("uuid"), uuid);
}

}  // namespace
}  // namespace colo::daemon::testing
