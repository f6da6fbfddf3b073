#pragma once
// The monitor's view of the managed GPUs: one scheduling slot per whole GPU, or per MIG
// instance on a MIG-enabled GPU (never shared). Every sample() reads each device once through
// the GPU backend and feeds the slot's sliding window (SMACT average, per-process peaks). A
// device whose calls fail is marked unhealthy; the daemon drains it and keeps running.
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

struct GpuSlot {
  int slot = 0;            // index the scheduler and `colo drain` use
  int nvml_index = 0;      // parent device
  int mig_index = -1;      // -1: the whole GPU
  std::string uuid;        // what CUDA_VISIBLE_DEVICES gets (GPU-… or MIG-…)
  std::string name;
  MiB total_mib = 0;
  MiB used_mib = 0;
  std::map<int, MiB> process_mib;  // latest sample
  std::optional<double> power_w;
  std::optional<double> last_smact;
  gpu::WindowSampler window;
  bool healthy = true;
  std::string error;       // why unhealthy
  gpu::SmactPath smact_path = gpu::SmactPath::Unavailable;

  GpuSlot(Seconds window_s) : window(window_s) {}
};

class GpuMonitor {
 public:
  // `managed`: NVML indices or GPU UUIDs to manage; empty = all. Throws colo::UserError when a
  // managed entry matches no GPU, gpu::GpuError when discovery fails.
  GpuMonitor(std::unique_ptr<gpu::GpuBackend> backend, const std::vector<std::string>& managed, Seconds window);

  // Samples every healthy device; returns the slots that became unhealthy in this round (the
  // first call also returns the slots whose device already failed during discovery).
  std::vector<int> sample(Seconds now);
  std::vector<GpuSlot>& slots() { return slots_; }
  const std::vector<GpuSlot>& slots() const { return slots_; }
  GpuSlot* find(const std::string& index_or_uuid);

  // The snapshot the scheduler core sees (running/drained filled in by the caller).
  GpuSnapshot snapshot(const GpuSlot& s) const;
  std::string describe() const { return backend_->describe(); }
  // One line: which SMACT path each GPU uses or why none ("policies fall back to memory-only").
  std::vector<std::string> capability_lines() const { return capability_lines_; }
  bool smact_available() const;

 private:
  std::unique_ptr<gpu::GpuBackend> backend_;
  std::vector<GpuSlot> slots_;
  std::vector<std::string> capability_lines_;
  std::vector<int> failed_at_discovery_;  // reported by the first sample(), then cleared
};

}  // namespace colo::daemon
