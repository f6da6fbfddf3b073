#include "estimate/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "estimate/allocsim.h"

namespace colo::estimate {

namespace {

// Estimate of row i: simulated reserved peak * (1 + margin) + context.
double median_abs(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx, double margin) {
  std::vector<double> a;
  a.reserve(reserved.size());
  for (std::size_t i = 0; i < reserved.size(); ++i)
    a.push_back(std::abs(std::ceil(reserved[i] * (1 + margin) + ctx) - measured[i]) / measured[i]);
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
  return a[a.size() / 2];
}

double under_rate(const std::vector<double>& reserved, const std::vector<double>& measured, double ctx, double margin) {
  std::size_t under = 0;
  for (std::size_t i = 0; i < reserved.size(); ++i) under += std::ceil(reserved[i] * (1 + margin) + ctx) < measured[i];
  return static_cast<double>(under) / static_cast<double>(reserved.size());
}

}  // namespace

FitResult fit_profile(const std::vector<DatasetRow>& rows, const CalibrationProfile& base, const FitOptions& opt) {
  std::vector<const DatasetRow*> use;
  for (const auto& r : rows)
    if (r.graph && !r.oom && r.measured && *r.measured > 0) use.push_back(&r);
  if (use.size() < 10) throw UserError("calibration needs at least 10 measured rows (got " + std::to_string(use.size()) + ")");
  std::vector<double> measured;
  for (auto* r : use) measured.push_back(static_cast<double>(*r->measured));
  const double fixed_ctx = opt.cnn ? base.context_mib : 0.0;  // CNN fit: cuDNN on top of the base

  FitResult best;
  double best_median = 1e300, best_ctx = 0, best_ratio = 0;
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  std::vector<double> best_reserved;
  const std::vector<double> ratios = opt.cnn ? opt.conv_workspace_ratio : std::vector<double>{0.0};
  for (double ratio : ratios) {
    CalibrationProfile p = base;
    p.context_mib = 0;
    p.cudnn_context_mib = 0;
    p.safety_margin = 0;
    p.cudnn_safety_margin = 0;
    p.conv_workspace_ratio = ratio;
    p.gpu_total_mib = MiB{1} << 30;  // 1 PiB: no capacity limit while fitting
    std::vector<double> reserved;
    for (auto* r : use)
      reserved.push_back(simulate_allocsim(*r->graph, r->batch, r->optimizer.value_or(opt.default_optimizer), p).total_mib);
    // Candidate contexts (on top of fixed_ctx): every residual, where one row flips sides.
    std::vector<double> cands;
    for (std::size_t i = 0; i < reserved.size(); ++i)
      cands.push_back(std::max(0.0, measured[i] - reserved[i] - fixed_ctx));
    std::sort(cands.begin(), cands.end());
    cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
    double ctx = 0, med = 1e300;
    for (double c : cands) {
      const double m = median_abs(reserved, measured, fixed_ctx + c, 0);
      if (m < med) {
        med = m;
        ctx = c;
      }
    }
    candidates.push_back({{"conv_workspace_ratio", ratio}, {"context_mib", ctx}, {"median_abs_rel_err", med},
                          {"under_rate", under_rate(reserved, measured, fixed_ctx + ctx, 0)}});
    if (med < best_median) {
      best_median = med;
      best_ctx = ctx;
      best_ratio = ratio;
      best_reserved = reserved;
    }
  }
  // Safety margin on the simulated part: the (1 - max_under_rate) quantile of the uplift each
  // row would need, (measured - context) / simulated - 1.
  const double total_ctx = fixed_ctx + best_ctx;
  std::vector<double> ratio_needed;
  for (std::size_t i = 0; i < best_reserved.size(); ++i)
    ratio_needed.push_back((measured[i] - total_ctx) / std::max(best_reserved[i], 1.0) - 1.0);
  std::sort(ratio_needed.begin(), ratio_needed.end());
  const auto k = static_cast<std::size_t>(std::floor((1.0 - opt.max_under_rate) * static_cast<double>(ratio_needed.size())));
  double margin = std::max(0.0, ratio_needed[std::min(k, ratio_needed.size() - 1)]);
  margin = std::ceil(margin * 1000.0) / 1000.0;

  best.profile = base;
  if (opt.cnn) {
    best.profile.cudnn_context_mib = std::round(best_ctx);
    best.profile.conv_workspace_ratio = best_ratio;
  } else {
    best.profile.context_mib = std::round(best_ctx);
  }
  (opt.cnn ? best.profile.cudnn_safety_margin : best.profile.safety_margin) = margin;
  best.report["rows"] = use.size();
  best.report["fitted"] = opt.cnn ? "cudnn_context_mib, conv_workspace_ratio, cudnn_safety_margin" : "context_mib, safety_margin";
  best.report["max_under_rate"] = opt.max_under_rate;
  best.report["default_optimizer"] = std::string(to_string(opt.default_optimizer));
  best.report["chosen"] = {{"conv_workspace_ratio", best_ratio},
                           {"context_mib", best_ctx},
                           {"median_abs_rel_err_unbiased", best_median},
                           {"safety_margin", margin},
                           {"median_abs_rel_err", median_abs(best_reserved, measured, total_ctx, margin)},
                           {"under_rate", under_rate(best_reserved, measured, total_ctx, margin)}};
  best.report["candidates"] = candidates;
  std::string csv = "id,measured_mib,simulated_reserved_mib\n";
  for (std::size_t i = 0; i < use.size(); ++i)
    csv += fmt::format("\"{}\",{},{:.1f}\n", use[i]->id, measured[i], best_reserved[i]);
  best.inputs_csv = std::move(csv);
  return best;
}

}  // namespace colo::estimate
