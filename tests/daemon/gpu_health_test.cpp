// GpuMonitor health as a unit, on a scripted backend and an injected clock (sample(now)):
// optional metric errors never take a GPU out, essential ones only after K samples in a row,
// unhealthy GPUs are re-probed with a capped exponential back-off and return by themselves
// after N good samples, and a GPU that failed during discovery still has an identity.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/gpu_monitor.h"

namespace colo::daemon {
namespace {

using Kind = MonitorEvent::Kind;

std::string real_uuid(int i) { return "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(i); }

// What the test flips; the backend (owned by the monitor) reads it on every call.
struct Script {
  int devices = 2;
  std::map<int, std::string> sample_error;                        // essential failure of sample()
  std::map<int, std::map<std::string, std::string>> metric_errors;  // optional metric failures
  std::map<int, std::string> discovery_error;                     // discover() fails for it
  std::map<int, bool> uuid_fails;                                 // ... before its UUID answered
  std::map<int, std::vector<Seconds>> sampled_at;                 // sample() calls per device
  Seconds now = 0;
};

class ScriptedBackend final : public gpu::GpuBackend {
 public:
  explicit ScriptedBackend(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  std::string describe() const override { return "scripted"; }
  std::vector<gpu::DeviceInfo> discover() override {
    std::vector<gpu::DeviceInfo> out;
    for (int i = 0; i < s_->devices; ++i) out.push_back(discover_device(i));
    return out;
  }
  gpu::DeviceInfo discover_device(int i) override {
    gpu::DeviceInfo d;
    d.index = i;
    if (auto e = s_->discovery_error.find(i); e != s_->discovery_error.end()) {
      if (!s_->uuid_fails[i]) d.uuid = real_uuid(i);
      d.error = e->second;
      return d;
    }
    d.uuid = real_uuid(i);
    d.name = "Scripted GPU";
    d.total_mib = 40960;
    return d;
  }
  gpu::DeviceSample sample(int i) override {
    s_->sampled_at[i].push_back(s_->now);
    if (auto e = s_->sample_error.find(i); e != s_->sample_error.end())
      throw gpu::GpuError(label(i), "nvmlDeviceGetMemoryInfo", e->second).with_index(i);
    gpu::DeviceSample d;
    d.index = i;
    d.uuid = real_uuid(i);
    d.memory.total_mib = 40960;
    d.memory.used_mib = 1000;
    d.power_w = 100;
    d.smact = 0.25;
    for (const auto& [field, what] : s_->metric_errors[i]) {
      d.metric_errors[field] = what;
      if (field == "power") d.power_w.reset();
      if (field == "smact") d.smact.reset();
    }
    return d;
  }
  gpu::Capabilities capabilities(int) override { return {}; }

 private:
  static std::string label(int i) { return "GPU " + std::to_string(i); }
  std::shared_ptr<Script> s_;
};

struct Rig {
  std::shared_ptr<Script> script = std::make_shared<Script>();
  std::unique_ptr<GpuMonitor> monitor;
  void start() { monitor = std::make_unique<GpuMonitor>(std::make_unique<ScriptedBackend>(script), std::vector<std::string>{}, 90.0); }
  std::vector<MonitorEvent> at(Seconds t) {
    script->now = t;
    return monitor->sample(t);
  }
  const GpuSlot& slot(int i) const { return monitor->slots().at(static_cast<size_t>(i)); }
};

int count(const std::vector<MonitorEvent>& ev, Kind k) {
  int n = 0;
  for (const MonitorEvent& e : ev) n += e.kind == k;
  return n;
}

TEST(GpuHealth, OptionalMetricErrorsLeaveTheGpuHealthyAndAreReportedRateLimited) {
  Rig r;
  r.start();
  r.script->metric_errors[1]["power"] = "GPU 1: nvmlDeviceGetPowerUsage failed: Unknown Error (NVML error 999)";
  std::vector<MonitorEvent> all;
  for (int t = 0; t < 60; ++t) {
    auto ev = r.at(t);
    all.insert(all.end(), ev.begin(), ev.end());
    ASSERT_TRUE(r.slot(1).healthy) << "t=" << t;
  }
  EXPECT_EQ(count(all, Kind::MetricError), 1);  // once, not once per second
  EXPECT_EQ(count(all, Kind::Unhealthy), 0);
  EXPECT_FALSE(r.slot(1).power_w.has_value());  // unknown, not stale
  EXPECT_DOUBLE_EQ(*r.slot(1).last_smact, 0.25);
  EXPECT_EQ(r.slot(1).metric_errors.count("power"), 1u);
  EXPECT_EQ(r.slot(1).metric_error_counts.at("power"), 60);
  EXPECT_TRUE(r.slot(1).health_reason.empty());
  // A minute later it is reported again, with how many samples failed meanwhile.
  auto ev = r.at(60);
  ASSERT_EQ(count(ev, Kind::MetricError), 1);
  EXPECT_NE(ev[0].message.find("60 failed sample(s) since the last report"), std::string::npos) << ev[0].message;
  r.script->metric_errors[1].clear();
  r.at(61);
  EXPECT_TRUE(r.slot(1).metric_errors.empty());
  EXPECT_DOUBLE_EQ(*r.slot(1).power_w, 100);
}

TEST(GpuHealth, EssentialFailuresTakeAGpuOutOnlyAfterThreeInARow) {
  Rig r;
  r.start();
  r.at(0);
  r.script->sample_error[1] = "Unknown Error (NVML error 999)";
  r.at(1);
  r.at(2);
  EXPECT_TRUE(r.slot(1).healthy);
  EXPECT_EQ(r.slot(1).consecutive_failures, 2);
  EXPECT_NE(r.slot(1).health_reason.find("2 failed sample(s) in a row, unhealthy at 3"), std::string::npos)
      << r.slot(1).health_reason;
  EXPECT_EQ(r.slot(1).used_mib, 1000);  // last good values kept meanwhile
  r.script->sample_error.erase(1);
  r.at(3);  // one good sample resets the count
  EXPECT_EQ(r.slot(1).consecutive_failures, 0);
  r.script->sample_error[1] = "Unknown Error (NVML error 999)";
  EXPECT_EQ(count(r.at(4), Kind::Unhealthy), 0);
  EXPECT_EQ(count(r.at(5), Kind::Unhealthy), 0);
  const auto ev = r.at(6);
  ASSERT_EQ(count(ev, Kind::Unhealthy), 1);
  EXPECT_EQ(ev[0].slots, std::vector<int>{1});
  EXPECT_FALSE(r.slot(1).healthy);
  EXPECT_TRUE(r.slot(0).healthy);
  EXPECT_NE(r.slot(1).error.find("nvmlDeviceGetMemoryInfo"), std::string::npos);
  ASSERT_TRUE(r.slot(1).next_probe.has_value());
  EXPECT_DOUBLE_EQ(*r.slot(1).next_probe, 7.0);
  EXPECT_FALSE(r.monitor->snapshot(r.slot(1)).healthy);  // what the scheduler sees
}

TEST(GpuHealth, UnhealthyGpuIsProbedWithCappedExponentialBackoffAndReturnsAfterThreeGoodSamples) {
  Rig r;
  r.start();
  r.script->sample_error[0] = "GPU is lost (NVML error 15)";
  for (int t = 0; t <= 2; ++t) r.at(t);
  ASSERT_FALSE(r.slot(0).healthy);
  r.script->sampled_at[0].clear();
  for (int t = 3; t <= 200; ++t) r.at(t);
  // Probes 1 s after, then 2, 4, 8, 16, 32 s apart, then every 60 s (the cap).
  EXPECT_EQ(r.script->sampled_at[0], (std::vector<Seconds>{3, 5, 9, 17, 33, 65, 125, 185}));
  EXPECT_EQ(r.script->sampled_at[1].size(), 201u);  // the healthy GPU is sampled every time
  EXPECT_DOUBLE_EQ(*r.slot(0).next_probe, 245);

  r.script->sample_error.erase(0);  // fixed: the next probe finds it answering
  for (int t = 201; t <= 244; ++t) EXPECT_EQ(count(r.at(t), Kind::Healthy), 0);
  EXPECT_EQ(count(r.at(245), Kind::Healthy), 0);
  EXPECT_FALSE(r.slot(0).healthy);
  EXPECT_EQ(r.slot(0).good_samples, 1);
  EXPECT_FALSE(r.slot(0).next_probe.has_value());  // on probation: sampled every round
  EXPECT_NE(r.slot(0).health_reason.find("recovering: 1 of 3 good samples"), std::string::npos);
  EXPECT_EQ(count(r.at(246), Kind::Healthy), 0);
  const auto ev = r.at(247);
  ASSERT_EQ(count(ev, Kind::Healthy), 1);
  EXPECT_TRUE(r.slot(0).healthy);
  EXPECT_TRUE(r.slot(0).error.empty());
  EXPECT_TRUE(r.slot(0).health_reason.empty());
  EXPECT_FALSE(r.slot(0).next_probe.has_value());
}

TEST(GpuHealth, AFailureOnProbationGoesBackToTheBackoff) {
  Rig r;
  r.start();
  r.script->sample_error[0] = "Unknown Error (NVML error 999)";
  for (int t = 0; t <= 2; ++t) r.at(t);  // unhealthy at 2, probe at 3
  r.script->sample_error.erase(0);
  r.at(3);
  EXPECT_EQ(r.slot(0).good_samples, 1);
  r.script->sample_error[0] = "Unknown Error (NVML error 999)";
  EXPECT_EQ(count(r.at(4), Kind::ProbeFailed), 1);
  EXPECT_FALSE(r.slot(0).healthy);
  EXPECT_EQ(r.slot(0).good_samples, 0);
  EXPECT_DOUBLE_EQ(*r.slot(0).next_probe, 6);  // back-off doubled to 2 s
}

TEST(GpuHealth, ClockSteppingBackDoesNotPostponeTheProbe) {
  Rig r;
  r.start();
  r.script->sample_error[0] = "Unknown Error (NVML error 999)";
  for (int t = 1000; t <= 1002; ++t) r.at(t);
  ASSERT_DOUBLE_EQ(*r.slot(0).next_probe, 1003);
  r.script->sampled_at[0].clear();
  r.at(500);  // the wall clock jumped back
  EXPECT_TRUE(r.script->sampled_at[0].empty());
  EXPECT_DOUBLE_EQ(*r.slot(0).next_probe, 501);
  r.at(501);
  EXPECT_EQ(r.script->sampled_at[0].size(), 1u);
}

TEST(GpuHealth, GpuFailingAtDiscoveryGetsAPlaceholderIdentityAndComesBack) {
  Rig r;
  r.script->discovery_error[1] = "GPU 1: nvmlDeviceGetUUID failed: GPU is lost (NVML error 15)";
  r.script->uuid_fails[1] = true;
  r.start();
  ASSERT_EQ(r.monitor->slots().size(), 2u);
  EXPECT_EQ(r.slot(1).uuid, "GPU-unknown-1");
  EXPECT_FALSE(r.slot(1).identity_known());
  EXPECT_TRUE(is_placeholder_uuid("GPU-unknown-1"));
  EXPECT_FALSE(is_placeholder_uuid(real_uuid(1)));
  EXPECT_FALSE(r.slot(1).healthy);
  EXPECT_EQ(r.slot(1).total_mib, 0);
  EXPECT_EQ(r.monitor->find("GPU-unknown-1"), &r.monitor->slots()[1]);

  auto ev = r.at(0);  // reported once, probed from now on
  ASSERT_EQ(count(ev, Kind::Unhealthy), 1);
  EXPECT_NE(ev[0].message.find("failed during discovery"), std::string::npos) << ev[0].message;
  EXPECT_DOUBLE_EQ(*r.slot(1).next_probe, 1);
  EXPECT_EQ(count(r.at(1), Kind::ProbeFailed), 1);  // still failing: next probe 2 s later
  EXPECT_DOUBLE_EQ(*r.slot(1).next_probe, 3);
  EXPECT_TRUE(r.script->sampled_at[1].empty());  // probed by discovering it, not sampled

  r.script->discovery_error.erase(1);
  r.at(2);
  ev = r.at(3);
  ASSERT_EQ(count(ev, Kind::IdentityLearned), 1);
  EXPECT_EQ(ev[0].old_uuid, "GPU-unknown-1");
  EXPECT_EQ(r.slot(1).uuid, real_uuid(1));
  EXPECT_EQ(r.slot(1).name, "Scripted GPU");
  EXPECT_EQ(r.slot(1).total_mib, 40960);
  EXPECT_FALSE(r.slot(1).healthy);  // on probation
  r.at(4);
  EXPECT_EQ(count(r.at(5), Kind::Healthy), 1);
  EXPECT_TRUE(r.slot(1).healthy);
}

TEST(GpuHealth, GpuFailingAtDiscoveryAfterItsUuidKeepsTheRealUuid) {
  Rig r;
  r.script->discovery_error[0] = "GPU 0: nvmlDeviceGetMemoryInfo failed: Unknown Error (NVML error 999)";
  r.start();
  EXPECT_EQ(r.slot(0).uuid, real_uuid(0));
  EXPECT_TRUE(r.slot(0).identity_known());
  EXPECT_FALSE(r.slot(0).healthy);
  EXPECT_NE(r.slot(0).health_reason.find("failed during discovery"), std::string::npos) << r.slot(0).health_reason;
}

}  // namespace
}  // namespace colo::daemon
