// Sliding-window averages and per-process peaks.
#include "gpu/window_sampler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace colo::gpu {

WindowSampler::WindowSampler(Seconds window) : window_s_(window) {
  if (!(window > 0)) throw std::invalid_argument("window must be positive");
}

void WindowSampler::add(Seconds t, std::optional<double> smact, std::optional<double> util,
                        const std::map<int, MiB>& process_mib) {
  if (!window_.empty() && t < window_.back().t) {
    throw std::invalid_argument("sample time " + std::to_string(t) + " is before the previous " +
                                std::to_string(window_.back().t));
  }
  window_.push_back({t, smact, util});
  // Keep samples in (t - window, t]: a 90 s window sampled every 1 s holds 90 samples.
  while (!window_.empty() && window_.front().t <= t - window_s_) window_.pop_front();
  for (const auto& [pid, mib] : process_mib) {
    MiB& peak = peaks_[pid];
    peak = std::max(peak, mib);
  }
}


std::optional<double> WindowSampler::smact_average() const {
  double sum = 0;
  int n = 0;
  for (const Entry& e : window_) {
    if (e.smact) {
      sum += *e.smact;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> WindowSampler::util_average() const {
  double sum = 0;
  int n = 0;
  for (const Entry& e : window_) {
    if (e.util) {
      sum += *e.util;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

MiB WindowSampler::peak_mib(int pid) const {
  auto it = peaks_.find(pid);
  return it == peaks_.end() ? 0 : it->second;
}

}  // namespace colo::gpu
