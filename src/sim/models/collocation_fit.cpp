#include "sim/models/collocation_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace colo::sim {

namespace {

constexpr double kMaxParam = 10;  // the model file's range for these constants

double clamp_param(double v) { return std::clamp(v, 0.0, kMaxParam); }

bool usable(const CoRun& r) { return r.slowdown.size() >= 2 && corun_problem(r).empty(); }

}  // namespace

std::string corun_problem(const CoRun& r) {
  if (r.smact.size() != r.slowdown.size() || r.busy.size() != r.slowdown.size())
    return "smact, busy and slowdown lists differ in length";
  if (r.slowdown.size() < 2) return "a co-run needs at least 2 jobs";
  for (std::size_t i = 0; i < r.slowdown.size(); ++i) {
    if (!(r.smact[i] >= 0 && r.smact[i] <= 1)) return fmt::format("job {}: SMACT {} is outside [0, 1]", i + 1, r.smact[i]);
    if (r.busy[i] && !(*r.busy[i] >= 0 && *r.busy[i] <= 1))
      return fmt::format("job {}: busy share {} is outside [0, 1]", i + 1, *r.busy[i]);
    if (!(std::isfinite(r.slowdown[i]) && r.slowdown[i] > 0))
      return fmt::format("job {}: slowdown {} must be finite and > 0", i + 1, r.slowdown[i]);
  }
  return "";
}

std::optional<FittedParam> fit_mps_interference(std::span<const CoRun> runs) {
  // Least squares of the slowdowns themselves (the rms reported below): slowdown − max(1, D) =
  // k × max(1, D) (n − 1), through the origin.
  double sxy = 0, sxx = 0;
  int obs = 0;
  for (const CoRun& r : runs) {
    if (!usable(r)) continue;
    const double d = std::max(1.0, std::accumulate(r.smact.begin(), r.smact.end(), 0.0));
    const double x = d * static_cast<double>(r.slowdown.size() - 1);
    for (double s : r.slowdown) {
      sxy += x * (s - d);
      sxx += x * x;
      ++obs;
    }
  }
  if (obs == 0) return std::nullopt;
  FittedParam p;
  p.value = clamp_param(sxy / sxx);
  p.observations = obs;
  double se = 0;
  for (const CoRun& r : runs) {
    if (!usable(r)) continue;
    const double d = std::max(1.0, std::accumulate(r.smact.begin(), r.smact.end(), 0.0));
    const double model = d * (1 + p.value * static_cast<double>(r.slowdown.size() - 1));
    for (double s : r.slowdown) se += (s - model) * (s - model);
  }
  p.rms = std::sqrt(se / obs);
  return p;
}

std::optional<StreamsFit> fit_streams(std::span<const CoRun> runs, double busy_floor) {
  // y = slowdown − max(1, Σb) = o × a1 + w × a2: two unknowns, non-negative least squares
  // (the 2 × 2 normal equations, or one unknown at zero when the joint solution is negative).
  struct Row {
    double a1, a2, y, base;
  };
  std::vector<Row> rows;
  for (const CoRun& r : runs) {
    if (!usable(r)) continue;
    std::vector<double> b(r.slowdown.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = r.busy[i].value_or(std::max(r.smact[i], busy_floor));
    const double sum = std::accumulate(b.begin(), b.end(), 0.0);
    const double base = std::max(1.0, sum);
    for (std::size_t i = 0; i < b.size(); ++i)
      rows.push_back({base * static_cast<double>(b.size() - 1), (1 - b[i]) * (sum - b[i]), r.slowdown[i] - base, base});
  }
  if (rows.empty()) return std::nullopt;
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  for (const Row& r : rows) {
    s11 += r.a1 * r.a1;
    s12 += r.a1 * r.a2;
    s22 += r.a2 * r.a2;
    s1y += r.a1 * r.y;
    s2y += r.a2 * r.y;
  }
  const double det = s11 * s22 - s12 * s12;
  double o = 0, w = 0;
  bool solved = false;  // both constants determined (the rows are not collinear)
  if (s11 > 0 && s22 > 0 && det > 1e-12 * s11 * s22) {
    o = (s1y * s22 - s2y * s12) / det;
    w = (s2y * s11 - s1y * s12) / det;
    solved = true;
  }
  // Otherwise (collinear rows, e.g. every busy share 1 or all equal; or a negative constant):
  // the better of the two one-constant fits.
  if (!solved || !(o >= 0 && w >= 0)) {
    const double o_only = s11 > 0 ? std::max(0.0, s1y / s11) : 0, w_only = s22 > 0 ? std::max(0.0, s2y / s22) : 0;
    auto sse = [&](double oo, double ww) {
      double e = 0;
      for (const Row& r : rows) e += (r.y - oo * r.a1 - ww * r.a2) * (r.y - oo * r.a1 - ww * r.a2);
      return e;
    };
    if (sse(o_only, 0) <= sse(0, w_only)) o = o_only, w = 0;
    else o = 0, w = w_only;
  }
  o = clamp_param(o);
  w = clamp_param(w);
  double se = 0;
  for (const Row& r : rows) se += (r.y - o * r.a1 - w * r.a2) * (r.y - o * r.a1 - w * r.a2);
  const int n = static_cast<int>(rows.size());
  const double rms = std::sqrt(se / n);
  return StreamsFit{{o, n, rms}, {w, n, rms}};
}

std::optional<FittedParam> fit_mig_capacity(std::span<const MigRun> runs, int compute_slices) {
  // Only a slowed run says what c is (c = s / slowdown); the mean over those runs.
  double sum = 0;
  int n = 0;
  for (const MigRun& r : runs)
    if (r.compute_slices == compute_slices && r.slowdown > 1.02 && r.smact > 0 && std::isfinite(r.slowdown)) {
      sum += r.smact / r.slowdown;
      ++n;
    }
  if (n == 0) return std::nullopt;
  FittedParam p;
  p.value = std::clamp(sum / n, 0.001, 1.0);
  p.observations = n;
  double se = 0;
  for (const MigRun& r : runs)
    if (r.compute_slices == compute_slices && r.slowdown > 1.02 && r.smact > 0 && std::isfinite(r.slowdown)) {
      const double model = std::max(1.0, r.smact / p.value);
      se += (r.slowdown - model) * (r.slowdown - model);
    }
  p.rms = std::sqrt(se / n);
  return p;
}

}  // namespace colo::sim
