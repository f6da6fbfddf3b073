#include "sim/models/power_fit.h"

#include <algorithm>
#include <cmath>

namespace colo::sim {

namespace {

constexpr double kMaxWatts = 10000;  // the model file's range for the power constants
constexpr double kMinSmact = 0.05;   // a solo run below it says nothing about the slope

bool watts_ok(double w) { return std::isfinite(w) && w > 0 && w <= kMaxWatts; }

bool usable(const PowerSolo& s) { return watts_ok(s.watts) && std::isfinite(s.smact) && s.smact >= 0 && s.smact <= 1; }

bool usable(const PowerShared& x, std::span<const PowerSolo> solo) {
  if (!watts_ok(x.watts) || x.jobs.size() < 2 || x.jobs.size() != x.rates.size()) return false;
  for (std::size_t i = 0; i < x.jobs.size(); ++i) {
    if (x.jobs[i] < 0 || static_cast<std::size_t>(x.jobs[i]) >= solo.size() || !usable(solo[static_cast<std::size_t>(x.jobs[i])]))
      return false;
    if (!(std::isfinite(x.rates[i]) && x.rates[i] > 0 && x.rates[i] <= 10)) return false;
  }
  return true;
}

// The shared window's power the per-job conservation predicts with floor `b`.
double conserved(const PowerShared& x, std::span<const PowerSolo> solo, double b) {
  double p = b;
  for (std::size_t i = 0; i < x.jobs.size(); ++i) p += (solo[static_cast<std::size_t>(x.jobs[i])].watts - b) * x.rates[i];
  return p;
}

}  // namespace

std::optional<PowerFit> fit_power(std::optional<double> idle_watts, std::span<const PowerSolo> solo,
                                  std::span<const PowerShared> shared, double fallback_busy) {
  const bool idle_ok = idle_watts && watts_ok(*idle_watts);
  PowerFit f;
  // B: P − Σ P_j r_j = B (1 − Σ r_j), through the origin.
  double sxy = 0, sxx = 0;
  int n_shared = 0;
  for (const PowerShared& x : shared) {
    if (!usable(x, solo)) continue;
    double sum_r = 0;
    for (double r : x.rates) sum_r += r;
    const double dx = 1 - sum_r;
    sxy += dx * (x.watts - conserved(x, solo, 0));
    sxx += dx * dx;
    ++n_shared;
  }
  double busy = std::clamp(fallback_busy, 0.0, kMaxWatts);
  if (n_shared > 0 && sxx >= kMinFloorLeverage) {
    f.busy_least_squares = sxy / sxx;
    busy = std::clamp(f.busy_least_squares, 0.0, kMaxWatts);
    double lowest = kMaxWatts;
    for (const PowerShared& x : shared)
      if (usable(x, solo))
        for (int j : x.jobs) lowest = std::min(lowest, solo[static_cast<std::size_t>(j)].watts);
    if (busy > lowest) busy = lowest, f.busy_capped_at_solo = true;
    f.busy_fitted = true;
  }
  if (idle_ok && busy < *idle_watts) {
    busy = *idle_watts;
    f.busy_raised_to_idle = true;
  }
  // k: P_j − B = k s_j over the solo runs, through the origin.
  double kxy = 0, kxx = 0;
  int n_solo = 0;
  for (std::size_t i = 0; i < solo.size(); ++i) {
    const PowerSolo& s = solo[i];
    if (!usable(s) || s.smact < kMinSmact) continue;
    kxy += s.smact * (s.watts - busy);
    kxx += s.smact * s.smact;
    ++n_solo;
    f.solo_used.push_back(static_cast<int>(i));
  }
  if (n_solo == 0) return std::nullopt;
  const double max = std::clamp(busy + std::max(0.0, kxy / kxx), busy, kMaxWatts);
  double se = 0;
  for (const PowerSolo& s : solo) {
    if (!usable(s) || s.smact < kMinSmact) continue;
    const double model = busy + (max - busy) * s.smact;
    se += (s.watts - model) * (s.watts - model);
  }
  f.solo_line_rms = std::sqrt(se / n_solo);
  double ss = 0;
  for (const PowerShared& x : shared) {
    if (!usable(x, solo)) continue;
    const double d = x.watts - conserved(x, solo, busy);
    ss += d * d;
  }
  f.shared_rms = n_shared ? std::sqrt(ss / n_shared) : 0;
  f.busy_watts = {busy, f.busy_fitted ? n_shared : 0, f.shared_rms};
  f.max_watts = {max, n_solo, f.solo_line_rms};
  // Not measured: never above busy (the caller keeps its own idle level below it).
  f.idle_watts = idle_ok ? FittedParam{*idle_watts, 1, 0} : FittedParam{busy, 0, 0};
  return f;
}

}  // namespace colo::sim
