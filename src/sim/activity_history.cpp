#include "sim/activity_history.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace colo::sim {

ActivityHistory::ActivityHistory() { points_.push_back({-1e18, 0.0, 0.0}); }

void ActivityHistory::set(Seconds t, double level) {
  Point& last = points_.back();
  if (t < last.t) throw std::logic_error("activity history: time went backwards");
  if (level == last.level) return;
  if (t == last.t) {  // several changes at one instant: only the last one lasts
    last.level = level;
    if (points_.size() >= 2 && points_[points_.size() - 2].level == level) points_.pop_back();
    return;
  }
  const double cum = last.t < -1e17 ? 0.0 : last.cum + last.level * (t - last.t);
  points_.push_back({t, cum, level});
}

double ActivityHistory::integral(Seconds t) const {
  // Last point with p.t ≤ t (the sentinel at −∞ has level 0, so the integral before it is 0).
  auto it = std::upper_bound(points_.begin(), points_.end(), t, [](Seconds v, const Point& p) { return v < p.t; });
  if (it == points_.begin()) return 0.0;
  const Point& p = *std::prev(it);
  if (p.t < -1e17) return 0.0;
  return p.cum + p.level * (t - p.t);
}

double ActivityHistory::window_average(long tick, int window) const {
  // Steady for the whole window: exactly the level (also keeps idle GPUs cheap).
  if (tick >= steady_from(window)) return points_.back().level;
  const double v = (integral(static_cast<Seconds>(tick)) - integral(static_cast<Seconds>(tick - window))) / window;
  return std::clamp(v, 0.0, 1.0);
}

std::optional<long> ActivityHistory::first_tick_below(long after_tick, double cap, int window) const {
  // W is linear between the change points t and their shifts t + window; after the last shift
  // it is the current level. Walk those pieces in time order.
  std::vector<Seconds> cuts;
  for (const Point& p : points_) {
    if (p.t < -1e17) continue;
    if (p.t > after_tick) cuts.push_back(p.t);
    if (p.t + window > after_tick) cuts.push_back(p.t + window);
  }
  std::sort(cuts.begin(), cuts.end());
  double lo = static_cast<double>(after_tick);
  auto below = [&](long k) { return window_average(k, window) < cap; };
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const long k1 = static_cast<long>(std::floor(lo)) + 1;
    if (i == cuts.size()) return below(k1) ? std::optional<long>(k1) : std::nullopt;
    const double hi = cuts[i];
    lo = std::max(lo, hi);
    const long k2 = static_cast<long>(std::floor(hi));
    if (k2 < k1) continue;
    if (below(k1)) return k1;
    if (!below(k2)) continue;
    // Linear in between: solve, then settle rounding by looking at the neighbours.
    const double w1 = window_average(k1, window), w2 = window_average(k2, window);
    long k = k2;
    if (w2 < w1) k = std::clamp(k1 + static_cast<long>(std::ceil((w1 - cap) / (w1 - w2) * (k2 - k1))), k1 + 1, k2);
    while (k < k2 && !below(k)) ++k;
    while (k - 1 > k1 && below(k - 1)) --k;
    return k;
  }
  return std::nullopt;
}

void ActivityHistory::forget_before(long tick, int window) {
  const Seconds keep_from = static_cast<Seconds>(tick - window) - 1.0;
  // Keep the last point at or before keep_from: it defines the integral from there on.
  while (points_.size() >= 2 && points_[1].t <= keep_from) points_.pop_front();
}

}  // namespace colo::sim
