#include "estimate/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/allocsim.h"

namespace colo::estimate {

namespace {

struct Metrics {
  double median = 0, under = 0;
};

Metrics metrics(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx) {
  std::vector<double> a;
  a.reserve(reserved.size());
  std::size_t under = 0;
  for (std::size_t i = 0; i < reserved.size(); ++i) {
    const double e = std::ceil(reserved[i] + ctx);
    a.push_back(std::abs(e - measured[i]) / measured[i]);
    under += e < measured[i];
  }
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
  return {a[a.size() / 2], static_cast<double>(under) / static_cast<double>(reserved.size())};
}

}  // namespace

FitResult fit_profile(const std::vector<DatasetRow>& rows, const CalibrationProfile& base, const FitOptions& opt) {
  std::vector<const DatasetRow*> use;
  for (const auto& r : rows)
    if (!r.oom && r.measured && *r.measured > 0) use.push_back(&r);
  if (use.size() < 10) throw UserError("calibration needs at least 10 measured rows (got " + std::to_string(use.size()) + ")");
  std::vector<double> measured;
  for (auto* r : use) measured.push_back(static_cast<double>(*r->measured));

  FitResult best;
  double best_median = 1e300;
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  std::vector<double> best_reserved;
  for (double ws : opt.conv_workspace_mib) {
    CalibrationProfile p = base;
    p.context_mib = 0;
    p.conv_workspace_mib = ws;
    p.gpu_total_mib = std::numeric_limits<MiB>::max() / 2;  // no capacity limit while fitting
    std::vector<double> reserved;
    for (auto* r : use)
      reserved.push_back(simulate_allocsim(*r->graph, r->batch, r->optimizer.value_or(opt.default_optimizer), p).total_mib);
    // Candidate contexts: every residual (measured - reserved), i.e. the values at which one row
    // switches from under- to over-estimated.
    std::vector<double> cands;
    for (std::size_t i = 0; i < reserved.size(); ++i) cands.push_back(std::max(0.0, measured[i] - reserved[i]));
    std::sort(cands.begin(), cands.end());
    cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
    double ctx_best = cands.back();
    Metrics m_best = metrics(reserved, measured, ctx_best);
    for (double c : cands) {
      const Metrics m = metrics(reserved, measured, c);
      if (m.under <= opt.max_under_rate && m.median < m_best.median) {
        m_best = m;
        ctx_best = c;
      }
    }
    candidates.push_back({{"conv_workspace_mib", ws},
                          {"context_mib", ctx_best},
                          {"median_abs_rel_err", m_best.median},
                          {"under_rate", m_best.under}});
    if (m_best.median < best_median) {
      best_median = m_best.median;
      best.profile = base;
      best.profile.context_mib = std::round(ctx_best);
      best.profile.conv_workspace_mib = ws;
      best.report["chosen"] = candidates.back();
      best_reserved = reserved;
    }
  }
  best.report["rows"] = use.size();
  best.report["max_under_rate"] = opt.max_under_rate;
  best.report["default_optimizer"] = std::string(to_string(opt.default_optimizer));
  best.report["candidates"] = candidates;
  std::string csv = "id,measured_mib,reserved_peak_mib\n";
  for (std::size_t i = 0; i < use.size(); ++i)
    csv += fmt::format("\"{}\",{},{:.1f}\n", use[i]->id, measured[i], best_reserved[i]);
  best.inputs_csv = std::move(csv);
  return best;
}

}  // namespace colo::estimate
