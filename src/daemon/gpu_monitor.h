#pragma once
// The monitor's view of the managed GPUs: one scheduling slot per whole GPU, or per MIG
// instance on a MIG-enabled GPU (never shared). Every sample() reads each device once through
// the GPU backend and feeds the slot's sliding window (SMACT average, per-process peaks).
//
// Health, per device (all slots of a GPU share it), all driven by the caller's `now`:
//   • an optional metric (power, energy, utilisation, SMACT) whose call fails is unknown for
//     that sample and counted; it never makes the device unhealthy;
//   • an essential failure (a GpuError from sample(): identity, memory, process list, MIG
//     layout, or any call saying the GPU is lost) makes it unhealthy only after
//     `fail_after` consecutive failing samples; until then the last good values stay;
//   • an unhealthy device is re-probed with exponential back-off (probe_initial, doubling, at
//     most probe_max); once a probe answers it is sampled every round again and returns by
//     itself after `recover_after` consecutive good samples;
//   • a device that failed during discovery is unhealthy from the start, keeps its UUID if that
//     call answered (else the placeholder "GPU-unknown-<index>", which no real UUID matches) and
//     is re-probed by discovering it again; its name, memory and real UUID are filled in then.
// Health is not a drain: the daemon keeps operator drains separately (and persisted).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/units.h"
#include "gpu/backend.h"
#include "gpu/window_sampler.h"

namespace colo::daemon {

struct HealthPolicy {
  int fail_after = 3;             // consecutive failing samples before a device is unhealthy
  int recover_after = 3;          // consecutive good samples before it is healthy again
  Seconds probe_initial = 1.0;    // first re-probe after it became unhealthy
  Seconds probe_max = 60.0;       // back-off cap
  Seconds metric_log_every = 60;  // an optional metric's failures are reported at most this often
};

// "GPU-unknown-<index>": the identity of a GPU whose UUID could not be read (never a real UUID,
// which is hexadecimal).
std::string placeholder_uuid(int nvml_index);
bool is_placeholder_uuid(const std::string& uuid);

struct GpuSlot {
  int slot = 0;            // index the scheduler and `colo drain` use
  int nvml_index = 0;      // parent device
  int mig_index = -1;      // -1: the whole GPU
  std::string uuid;        // what CUDA_VISIBLE_DEVICES gets (GPU-… or MIG-…); never empty
  std::string name;
  MiB total_mib = 0;
  MiB used_mib = 0;
  std::map<int, MiB> process_mib;  // latest sample
  std::optional<double> power_w;
  std::optional<double> last_smact;
  std::optional<double> last_smocc;
  std::optional<double> gpu_util;            // 0..1
  std::optional<std::uint64_t> energy_mj;    // since driver load (whole GPU)
  gpu::WindowSampler window;
  std::optional<Seconds> window_t;  // time of the latest sample in `window`
  gpu::SmactPath smact_path = gpu::SmactPath::Unavailable;

  // Health of the parent device (copied into each of its slots after every sample()).
  bool healthy = true;
  std::string error;                  // why unhealthy (the latest essential failure); empty when healthy
  std::string health_reason;          // why unhealthy / recovering; empty when healthy
  int consecutive_failures = 0;       // essential failures in a row
  int good_samples = 0;               // good samples in a row while unhealthy (probation)
  std::optional<Seconds> next_probe;  // when an unhealthy device is tried again (caller's clock)
  // Optional metrics whose call failed in the latest sample: field -> error, and how many
  // samples failed for each field since the daemon started.
  std::map<std::string, std::string> metric_errors;
  std::map<std::string, std::int64_t> metric_error_counts;

  bool identity_known() const { return !is_placeholder_uuid(uuid); }

  GpuSlot(Seconds window_s) : window(window_s) {}
};

// Something the daemon should record or log, produced by sample().
struct MonitorEvent {
  enum class Kind {
    Unhealthy,       // the device's slots left scheduling
    Healthy,         // the device's slots are back
    ProbeFailed,     // an unhealthy device was probed and still fails (next probe later)
    IdentityLearned, // a device that failed during discovery answered: `old_uuid` -> slot's uuid
    MetricError,     // an optional metric failed (first time, then at most every metric_log_every)
  };
  Kind kind = Kind::Unhealthy;
  int nvml_index = 0;
  std::vector<int> slots;
  std::string message;   // one line for the log / event table
  std::string old_uuid;  // IdentityLearned
};

class GpuMonitor {
 public:
  // `managed`: NVML indices or GPU UUIDs to manage; empty = all. Throws colo::UserError when a
  // managed entry matches no GPU, gpu::GpuError when discovery fails.
  GpuMonitor(std::unique_ptr<gpu::GpuBackend> backend, const std::vector<std::string>& managed, Seconds window,
             HealthPolicy health = {});

  // Samples every healthy (or recovering) device and probes the unhealthy ones that are due;
  // returns what changed. The first call also reports the devices that failed at discovery.
  std::vector<MonitorEvent> sample(Seconds now);
  std::vector<GpuSlot>& slots() { return slots_; }
  const std::vector<GpuSlot>& slots() const { return slots_; }
  GpuSlot* find(const std::string& index_or_uuid);
  const HealthPolicy& health_policy() const { return policy_; }

  // The snapshot the scheduler core sees (running/drained filled in by the caller).
  GpuSnapshot snapshot(const GpuSlot& s) const;
  std::string describe() const { return backend_->describe(); }
  // One line: which SMACT path each GPU uses or why none ("policies fall back to memory-only").
  std::vector<std::string> capability_lines() const { return capability_lines_; }
  bool smact_available() const;

 private:
  struct MetricState {
    bool failing = false;
    std::int64_t count = 0;            // failed samples, ever
    std::int64_t since_reported = 0;   // failed samples since the last MetricError event
    std::optional<Seconds> reported_at;
  };
  struct DeviceHealth {
    bool healthy = true;
    bool needs_discovery = false;  // failed during discovery: a probe discovers it again
    bool needs_restart = false;    // came back with a layout this run cannot use (MIG)
    int consecutive_failures = 0;
    int good_samples = 0;
    Seconds backoff = 0;
    std::optional<Seconds> next_probe;
    std::string error;
    std::map<std::string, MetricState> metrics;
    std::map<std::string, std::string> metric_errors;  // latest sample
  };

  std::vector<GpuSlot*> slots_of(int nvml_index);
  // Reads the device (discovering it first when needed) into its slots; returns the error
  // text of an essential failure, nullopt on success.
  std::optional<std::string> read_device(int nvml_index, DeviceHealth& h, Seconds now,
                                         std::vector<MonitorEvent>& events);
  void on_failure(int nvml_index, DeviceHealth& h, const std::string& what, Seconds now,
                  std::vector<MonitorEvent>& events);
  void on_success(int nvml_index, DeviceHealth& h, Seconds now, std::vector<MonitorEvent>& events);
  void track_metrics(int nvml_index, DeviceHealth& h, const std::map<std::string, std::string>& errors, Seconds now,
                     std::vector<MonitorEvent>& events);
  void publish(int nvml_index, const DeviceHealth& h);

  std::unique_ptr<gpu::GpuBackend> backend_;
  HealthPolicy policy_;
  std::vector<GpuSlot> slots_;
  std::map<int, DeviceHealth> health_;  // by NVML index
  std::vector<std::string> capability_lines_;
};

}  // namespace colo::daemon
