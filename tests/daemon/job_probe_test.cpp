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
#include <memory>

#include <gtest/gtest.h>

#include "daemon_harness.h"

namespace colo::daemon {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// A probe of a two-layer MLP as nobody, in a working and a job directory of its own; run to its exit.
struct MlpProbeAsNobody {
  TempDir dir;
  std::unique_ptr<JobProbe> probe;
  int status = 0;

  explicit MlpProbeAsNobody(const std::string& cgroup_name) {
    const std::string work = dir.path() + "/work", jobdir = dir.path() + "/job";
    std::filesystem::create_directories(work);
    std::filesystem::create_directories(jobdir);
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
    probe = std::make_unique<JobProbe>(req, who, work, jobdir, cgroup_name + "-" + std::to_string(::getpid()),
                                       ProbeSettings{}, 0);
    if (::waitpid(probe->pid(), &status, 0) != probe->pid()) status = -1;
  }
};

TEST(JobProbeThread, TheTraceIsEstimatedOffTheCallersThread) {
  if (const std::string why = testing::cannot_probe_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  // What the estimator uses, declared before the probe: its destructor waits for the estimator.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<bool> gave_up{false};
  std::atomic<std::size_t> records{0};
  MlpProbeAsNobody run("colo-probe-jobprobe-test");
  JobProbe& probe = *run.probe;
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.status;

  // The estimator waits until the test lets it go: had finish() run it on the caller's thread,
  // finish() would return only when the wait gave up, with the outcome already there.
  probe.finish(run.status, 1.0, [&](const estimate::ProbeTrace& t) {
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
  MlpProbeAsNobody run("colo-probe-jobprobe-test2");
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.status;
  JobProbe& probe = *run.probe;
  probe.finish(run.status, 1.0, [](const estimate::ProbeTrace&) -> estimate::Estimate {
    throw std::runtime_error("no such GPU profile");
  });
  std::optional<JobProbe::Outcome> o;
  ASSERT_TRUE(testing::wait_until([&] { return (o = probe.outcome()).has_value(); }, 60s, 10ms));
  EXPECT_FALSE(o->estimate.has_value());
  EXPECT_EQ(o->failure, "estimating from the probe's trace failed: no such GPU profile");
}

}  // namespace
}  // namespace colo::daemon
