// JobProbe on its own: a real probe (as nobody), whose trace is read and estimated on a thread of
// its own while the caller (colod's event loop) goes on.
#include "daemon/job_probe.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include <gtest/gtest.h>

#include "daemon_harness.h"

namespace colo::daemon {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

TEST(JobProbeThread, TheTraceIsEstimatedOffTheCallersThread) {
  if (const std::string why = testing::cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = dir.path() + "/work";
  std::filesystem::create_directories(work);
  ::chmod(work.c_str(), 0755);
  std::ofstream(work + "/mlp.py") << "import torch.nn as nn\n"
                                     "def build():\n"
                                     "    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))\n";
  estimate::ProbeRequest req;
  req.model = "mlp.py:build";
  req.input = "64";
  req.batch = 8;
  estimate::ProbeIdentity who;
  who.uid = 65534;
  who.gid = 65534;
  who.user = "nobody";
  who.home = "/";
  const std::string jobdir = dir.path() + "/job";
  std::filesystem::create_directories(jobdir);
  // What the estimator uses, declared before the probe: its destructor waits for the estimator.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<bool> gave_up{false};
  std::atomic<std::size_t> records{0};
  JobProbe probe(req, who, work, jobdir, "colo-probe-jobprobe-test-" + std::to_string(::getpid()), ProbeSettings{}, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(probe.pid(), &status, 0), probe.pid());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The estimator waits until the test lets it go: had finish() run it on the caller's thread,
  // finish() would return only when the wait gave up, with the outcome already there.
  probe.finish(status, 1.0, [&](const estimate::ProbeTrace& t) {
    records = t.records.size();
    if (gate.wait_for(30s) != std::future_status::ready) gave_up = true;
    estimate::Estimate e;
    e.mib = 1234;
    e.estimator = "test";
    return e;
  });
  EXPECT_TRUE(probe.reaped());
  EXPECT_FALSE(probe.outcome().has_value());  // still estimating
  go.set_value();
  std::optional<JobProbe::Outcome> o;
  ASSERT_TRUE(testing::wait_until([&] { return (o = probe.outcome()).has_value(); }, 60s, 10ms));
  EXPECT_FALSE(gave_up.load());
  EXPECT_TRUE(o->failure.empty()) << o->failure;
  ASSERT_TRUE(o->estimate.has_value());
  EXPECT_EQ(o->estimate->mib, 1234);
  EXPECT_GT(records.load(), 0u);  // the probe's real trace reached the estimator
  EXPECT_FALSE(probe.outcome().has_value());  // once
}

TEST(JobProbeThread, AnEstimatorThatThrowsIsTheProbesFailure) {
  if (const std::string why = testing::cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string work = dir.path() + "/work";
  std::filesystem::create_directories(work);
  ::chmod(work.c_str(), 0755);
  std::ofstream(work + "/mlp.py") << "import torch.nn as nn\n"
                                     "def build():\n"
                                     "    return nn.Linear(64, 10)\n";
  estimate::ProbeRequest req;
  req.model = "mlp.py:build";
  req.input = "64";
  req.batch = 4;
  estimate::ProbeIdentity who;
  who.uid = 65534;
  who.gid = 65534;
  who.user = "nobody";
  who.home = "/";
  const std::string jobdir = dir.path() + "/job";
  std::filesystem::create_directories(jobdir);
  JobProbe probe(req, who, work, jobdir, "colo-probe-jobprobe-test2-" + std::to_string(::getpid()), ProbeSettings{}, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(probe.pid(), &status, 0), probe.pid());
  probe.finish(status, 1.0, [](const estimate::ProbeTrace&) -> estimate::Estimate {
    throw std::runtime_error("no such GPU profile");
  });
  std::optional<JobProbe::Outcome> o;
  ASSERT_TRUE(testing::wait_until([&] { return (o = probe.outcome()).has_value(); }, 60s, 10ms));
  EXPECT_FALSE(o->estimate.has_value());
  EXPECT_EQ(o->failure, "estimating from the probe's trace failed: no such GPU profile");
}

}  // namespace
}  // namespace colo::daemon
