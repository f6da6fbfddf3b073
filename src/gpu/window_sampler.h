#pragma once
// Sliding-window statistics over one device's (or MIG instance's) samples: the window average
// of SMACT and utilisation the policies compare against their cap (thesis: sampled every 1 s,
// averaged over 90 s), and each process's peak memory for the reservation ledger.
// Pure logic: the caller supplies the timestamps, nothing here reads a clock.
#include <deque>
#include <map>
#include <optional>

#include "core/units.h"
#include "gpu/backend.h"

namespace colo::gpu {

class WindowSampler {
 public:
  explicit WindowSampler(Seconds window = 90.0);

  // Adds the sample taken at time `t` (seconds, any epoch, non-decreasing; an older `t`
  // throws std::invalid_argument). Samples older than t - window are dropped.
  void add(Seconds t, std::optional<double> smact, std::optional<double> util,
           const std::map<int, MiB>& process_mib);
  void add(Seconds t, const DeviceSample& s) {
    add(t, s.smact, s.gpu_util, s.memory.process_mib);
  }

  // Mean over the samples in the window that carry the metric; nullopt if none does.
  std::optional<double> smact_average() const;
  std::optional<double> util_average() const;
  // Samples currently in the window.
  int samples() const { return static_cast<int>(window_.size()); }

  // Highest memory seen for `pid` since it first appeared (0 if never seen). A job with
  // several processes sums its pids' peaks.
  MiB peak_mib(int pid) const;
  const std::map<int, MiB>& peaks() const { return peaks_; }
  // Forget a process that exited (its peak is no longer needed).
  void forget(int pid) { peaks_.erase(pid); }

  Seconds window() const { return window_s_; }

 private:
  struct Entry {
    Seconds t;
    std::optional<double> smact;
    std::optional<double> util;
  };
  Seconds window_s_;
  std::deque<Entry> window_;
  std::map<int, MiB> peaks_;
};

}  // namespace colo::gpu
