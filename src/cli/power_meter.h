#pragma once
// A window's mean board power from GPU samples, for `colo bench collocation`: the energy
// counter's difference over the time between its first and last reading when the GPU has one
// (exact over the interval, whatever the power did in between), else the mean of the power
// readings. The caller stamps each sample when it is taken (steady clock).
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "gpu/backend.h"

namespace colo::cli {

class PowerMeter {
 public:
  using Clock = std::chrono::steady_clock;

  void add(const gpu::DeviceSample& s, Clock::time_point at) {
    if (s.energy_mj) {
      // A counter that went backwards (driver reload) starts the interval over.
      if (!first_ || (last_ && *s.energy_mj < last_->first)) first_ = {*s.energy_mj, at};
      last_ = {*s.energy_mj, at};
    }
    if (s.power_w) sum_ += *s.power_w, ++n_;
  }

  std::optional<double> watts() const {
    if (first_ && last_ && last_->first > first_->first) {
      const double s = std::chrono::duration<double>(last_->second - first_->second).count();
      if (s > 0) return static_cast<double>(last_->first - first_->first) / 1000.0 / s;
    }
    if (n_) return sum_ / n_;
    return std::nullopt;
  }

 private:
  std::optional<std::pair<std::uint64_t, Clock::time_point>> first_, last_;
  double sum_ = 0;
  int n_ = 0;
};

}  // namespace colo::cli
