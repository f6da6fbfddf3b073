#pragma once
// The SM-activity history of one simulated GPU: a piecewise-constant function of time, kept as
// change points with the running integral. It answers what a DCGM-style monitor would report:
// the monitor samples every second (tick k covers (k−1, k], the sample being SMACT averaged over
// that second) and the scheduler sees the mean of the last `window` samples, which is exactly
//     W(k) = (I(k) − I(k − window)) / window,   I(t) = ∫₀ᵗ activity.
// Computing W from the history is equivalent to sampling every second, without the ticks.
#include <cmath>
#include <deque>
#include <optional>

#include "core/units.h"

namespace colo::sim {

class ActivityHistory {
 public:
  ActivityHistory();
  // From time t on, the activity is `level`. t must not go backwards.
  void set(Seconds t, double level);
  double level() const { return points_.back().level; }
  // ∫₀ᵗ activity, assuming the current level holds after the last change.
  double integral(Seconds t) const;
  // Mean of the `window` one-second samples ending at tick k.
  double window_average(long tick, int window) const;
  // The first tick from which the window average is the current level (no change for a whole
  // window before it): the last change t ≤ tick − window, i.e. tick ≥ ⌈t⌉ + window.
  long steady_from(int window) const { return static_cast<long>(std::ceil(points_.back().t)) + window; }
  // First tick > after_tick whose window average is < cap, assuming the current level holds
  // from now on; nullopt if that never happens.
  std::optional<long> first_tick_below(long after_tick, double cap, int window) const;
  // Drops change points no window ending at or after `tick` can need.
  void forget_before(long tick, int window);

 private:
  struct Point {
    Seconds t;
    double cum;  // ∫₀ᵗ activity
    double level;
  };
  std::deque<Point> points_;
};

}  // namespace colo::sim
